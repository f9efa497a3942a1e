"""Checkpoint loading: sharded files, strict key errors, dtypes, devices, config errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from hrm.config import HrmConfig
from hrm.engine import HrmEngine
from hrm.errors import CheckpointError
from hrm.loader import resolve_device, resolve_dtype
from hrm.params import SamplingParams

GREEDY = SamplingParams(max_tokens=8, temperature=0.0)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_sharded_checkpoint_loads_identically(tiny_causal, engine, tmp_path):
    d = _copy(tiny_causal, tmp_path / "sharded")
    tensors = load_file(str(d / "model.safetensors"))
    (d / "model.safetensors").unlink()
    keys = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    weight_map = {}
    for fname, ks in halves.items():
        save_file({k: tensors[k].contiguous() for k in ks}, str(d / fname))
        weight_map.update({k: fname for k in ks})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    sharded = HrmEngine.from_pretrained(d, device="cpu", dtype="float32")
    assert (
        sharded.generate(["hello world"], GREEDY)[0].token_ids
        == engine.generate(["hello world"], GREEDY)[0].token_ids
    )


def test_missing_and_unexpected_keys_are_named(tiny_causal, tmp_path):
    d = _copy(tiny_causal, tmp_path / "broken")
    tensors = load_file(str(d / "model.safetensors"))
    tensors.pop("model.H_module.layers.1.attn.gqkv_proj.weight")
    tensors["model.H_module.layers.1.attn.q_proj.weight"] = torch.zeros(4)
    save_file(tensors, str(d / "model.safetensors"))
    with pytest.raises(CheckpointError) as err:
        HrmEngine.from_pretrained(d, device="cpu")
    msg = str(err.value)
    assert "model.H_module.layers.1.attn.gqkv_proj.weight" in msg
    assert "model.H_module.layers.1.attn.q_proj.weight" in msg
    assert "model.safetensors" in msg


def test_shape_mismatch_is_reported(tiny_causal, tmp_path):
    d = _copy(tiny_causal, tmp_path / "shape")
    tensors = load_file(str(d / "model.safetensors"))
    tensors["lm_head.weight"] = torch.zeros(3, 3)
    save_file(tensors, str(d / "model.safetensors"))
    with pytest.raises(CheckpointError, match="lm_head.weight"):
        HrmEngine.from_pretrained(d, device="cpu")


def test_missing_files_raise_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError):
        HrmEngine.from_pretrained(tmp_path / "nope", device="cpu")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="invalid JSON"):
        HrmEngine.from_pretrained(tmp_path / "empty", device="cpu")


def test_config_derives_fields():
    cfg = HrmConfig.from_dict(
        {
            "model_type": "hrm_text",
            "vocab_size": 10,
            "hidden_size": 8,
            "intermediate_size": 16,
            "num_attention_heads": 2,
            "num_hidden_layers": 3,
            "H_cycles": 2,
            "L_cycles": 2,
            "initializer_range": 0.05,
            "eos_token_id": [2, 5],
        }
    )
    assert cfg.num_layers_per_stack == 3  # legacy: num_hidden_layers is per stack
    assert cfg.num_slots == 3 * 2 * 3
    assert cfg.head_dim == 4 and cfg.embedding_scale == pytest.approx(20.0)
    assert cfg.eos_token_ids == (2, 5)
    assert cfg.slot_base(1, 2) == (1 * 3 + 2) * 3
    with pytest.raises(CheckpointError, match="rope_type"):
        HrmConfig.from_dict(
            {
                "vocab_size": 1,
                "hidden_size": 1,
                "intermediate_size": 1,
                "num_attention_heads": 1,
                "num_hidden_layers": 1,
                "rope_parameters": {"rope_type": "yarn"},
            }
        )
    with pytest.raises(CheckpointError, match="missing required"):
        HrmConfig.from_dict({"model_type": "hrm_text"})


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_loads_and_runs_on_cpu(tiny_causal, engine, dtype):
    eng = HrmEngine.from_pretrained(tiny_causal, device="cpu", dtype=dtype)
    assert eng.dtype == getattr(torch, dtype)
    out = eng.generate(["hello world"], GREEDY)[0]
    assert len(out.token_ids) == 8
    ids = torch.tensor([eng.tokenizer("hello world")["input_ids"]])
    with torch.inference_mode():
        half = eng.runner.logits(eng.runner.full_hidden(ids.tolist(), None)).float()
        full = engine.runner.logits(engine.runner.full_hidden(ids.tolist(), None))
    assert (half - full).abs().max().item() < 0.15 * full.abs().max().item()


def test_device_and_dtype_resolution(monkeypatch):
    monkeypatch.setenv("ABTEST_DEVICE", "cpu")
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.delenv("ABTEST_DEVICE")
    monkeypatch.setenv("AIOS_DEVICE", "cpu")
    assert resolve_device(None) == torch.device("cpu")
    with pytest.raises(ValueError, match="tpu"):
        resolve_device("tpu")
    cfg = HrmConfig(
        vocab_size=4,
        hidden_size=4,
        intermediate_size=4,
        num_attention_heads=1,
        num_layers_per_stack=1,
        torch_dtype="bfloat16",
    )
    assert resolve_dtype("auto", cfg, torch.device("cpu")) == torch.float32
    assert resolve_dtype("bf16", cfg, torch.device("cpu")) == torch.bfloat16
    with pytest.raises(ValueError, match="dtype"):
        resolve_dtype("int8", cfg, torch.device("cpu"))
