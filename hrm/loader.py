"""Load an HRM-Text checkpoint directory: config.json + safetensors (single file or sharded
`model.safetensors.index.json`), with a strict key check, dtype and device selection."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol

import torch
from safetensors import safe_open

from hrm.config import HrmConfig
from hrm.errors import CheckpointError
from hrm.model import HrmForCausalLM

__all__ = ["DEVICE_ENV_VARS", "check_keys_and_shapes", "load_model", "load_state_dict", "resolve_device", "resolve_dtype"]

DEVICE_ENV_VARS = ("ABTEST_DEVICE", "AIOS_DEVICE")
_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
}


def resolve_device(device: str | None = "auto") -> torch.device:
    """`cpu|cuda|cuda:N|mps|auto`; `auto` (or None) reads ABTEST_DEVICE / AIOS_DEVICE, then probes."""
    name = (device or "auto").strip().lower()
    if name == "auto":
        name = next((os.environ[v].strip().lower() for v in DEVICE_ENV_VARS if os.environ.get(v)), "auto")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        return torch.device("mps" if mps is not None and mps.is_available() else "cpu")
    if not name.startswith(("cpu", "cuda", "mps")):
        raise ValueError(f"device {name!r} is not one of cpu, cuda, mps, auto")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available")
    return torch.device(name)


class _HasDtype(Protocol):
    torch_dtype: str  # the checkpoint's dtype name (HrmConfig, Actv1Config)


def resolve_dtype(dtype: str | torch.dtype | None, cfg: _HasDtype, device: torch.device) -> torch.dtype:
    """fp32/bf16/fp16/auto. `auto` keeps the checkpoint dtype on accelerators, fp32 on CPU."""
    if isinstance(dtype, torch.dtype):
        return dtype
    name = (dtype or "auto").lower()
    if name == "auto":
        if device.type == "cpu":
            return torch.float32
        return _DTYPES.get(cfg.torch_dtype.replace("torch.", ""), torch.float32)
    if name not in _DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of float32, bfloat16, float16, auto")
    return _DTYPES[name]


def _weight_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map", {})
        files = sorted({path / f for f in weight_map.values()})
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise CheckpointError(f"{index}: shard files missing: {missing}")
        return files
    single = path / "model.safetensors"
    if single.is_file():
        return [single]
    raise CheckpointError(f"no model.safetensors or model.safetensors.index.json in {path}")


def load_state_dict(path: Path) -> tuple[dict[str, torch.Tensor], str]:
    """All tensors of the checkpoint (CPU) and a description of the file(s) they came from."""
    files = _weight_files(path)
    tensors: dict[str, torch.Tensor] = {}
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 - safe_open is not a dict
                tensors[key] = handle.get_tensor(key)
    where = (
        str(files[0]) if len(files) == 1 else f"{path / 'model.safetensors.index.json'} ({len(files)} shards)"
    )
    return tensors, where


def check_keys_and_shapes(expected: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor], where: str) -> None:
    """Raise `CheckpointError` naming every missing and unexpected key, or every shape mismatch."""
    missing, unexpected = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{where}: missing keys {missing}; unexpected keys {unexpected}")
    bad = [
        f"{k}: file {tuple(t.shape)} vs model {tuple(expected[k].shape)}"
        for k, t in tensors.items()
        if tuple(t.shape) != tuple(expected[k].shape)
    ]
    if bad:
        raise CheckpointError(f"{where}: shape mismatch: {bad}")


def load_model(path: str | Path, device: torch.device, dtype: torch.dtype) -> HrmForCausalLM:
    """Build the model from `path` and load its weights strictly (missing/unexpected keys raise)."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"checkpoint directory {root} does not exist")
    cfg = HrmConfig.from_file(root / "config.json")
    tensors, where = load_state_dict(root)
    if cfg.tie_word_embeddings and "lm_head.weight" not in tensors and "model.embed_tokens.weight" in tensors:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    with torch.device("meta"):
        model = HrmForCausalLM(cfg)
    check_keys_and_shapes(model.state_dict(), tensors, where)
    model.load_state_dict({k: t.to(dtype) for k, t in tensors.items()}, strict=True, assign=True)
    return model.to(device).eval().requires_grad_(False)
