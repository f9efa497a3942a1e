"""AI-OS ACTV1 brain bundles in the HRM engine: `brain.json` + `actv1_student.safetensors`.

`load_bundle()` reads a bundle directory (strict key and shape check, like `hrm.loader`) and
returns the model and its tokenizer; `Actv1Runner` has `ModelRunner`'s interface so that
`HrmEngine` (continuous batching, seeds, stops, scoring, the async engine, the server)
drives it unchanged. See docs/actv1.md for what is reproduced from AI-OS and why.

AI-OS's attention is bidirectional, so a KV cache is not valid: the runner keeps each row's
token history and recomputes the whole (right-padded, key-masked) batch every step, reading
the logits at each row's last position, which is what AI-OS's `ACTv1Brain.run` samples from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import Tensor

from hrm.actv1_model import Actv1Config, Actv1Model
from hrm.errors import CheckpointError
from hrm.loader import check_keys_and_shapes, resolve_dtype

__all__ = ["BRAIN_JSON", "CHECKPOINT_FILE", "Actv1Runner", "is_bundle", "load_bundle", "read_brain_config",
           "read_brain_json", "resolve_tokenizer"]

BRAIN_JSON = "brain.json"
CHECKPOINT_FILE = "actv1_student.safetensors"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")

# brain.json spellings, most authoritative first: `arch.*` is what AI-OS's finalize_training
# records from the training config; the top-level keys are what its GUI writes at creation
# and what `ACTv1Brain` reads.
_FIELDS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("arch.hidden_size", "hidden_size"),
    "num_heads": ("arch.num_heads", "num_heads", "heads"),
    "H_layers": ("arch.H_layers", "h_layers"),
    "L_layers": ("arch.L_layers", "l_layers"),
    "H_cycles": ("arch.H_cycles", "h_cycles"),
    "L_cycles": ("arch.L_cycles", "l_cycles"),
    "expansion": ("arch.expansion", "expansion"),
    "pos_encodings": ("arch.pos_encodings", "pos_encoding", "pos_encodings"),
    "max_seq_len": ("max_seq_len",),
    "halt_max_steps": ("halt_max_steps",),
    "use_moe": ("use_moe",),
    "num_experts": ("num_experts",),
    "num_experts_per_tok": ("num_experts_per_tok",),
}
_REQUIRED = ("hidden_size", "num_heads", "H_layers", "L_layers", "H_cycles", "L_cycles")
_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def is_bundle(path: str | Path) -> bool:
    return (Path(path) / BRAIN_JSON).is_file()


def _lookup(raw: dict[str, Any], spellings: tuple[str, ...]) -> Any:
    for key in spellings:
        node: Any = raw
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:  # AI-OS writes explicit nulls for fields a preset did not set
            return node
    return None


def read_brain_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CheckpointError(f"no {BRAIN_JSON} at {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    if raw.get("type") != "actv1":
        raise CheckpointError(f"{path}: 'type' is {raw.get('type')!r}, expected 'actv1'")
    return raw


def read_brain_config(raw: dict[str, Any], path: Path, vocab_size: int) -> Actv1Config:
    """The architecture from brain.json `raw` (read from `path`); the vocab size comes from the checkpoint."""
    vals = {name: _lookup(raw, spellings) for name, spellings in _FIELDS.items()}
    missing = [f"{name} ({' or '.join(_FIELDS[name])})" for name in _REQUIRED if vals[name] is None]
    if missing:
        raise CheckpointError(f"{path}: missing required fields: {', '.join(missing)}")
    dtype = str(raw.get("dtype") or "float32").lower()
    try:
        cfg = Actv1Config(
            vocab_size=vocab_size,
            hidden_size=int(vals["hidden_size"]),
            num_heads=int(vals["num_heads"]),
            H_layers=int(vals["H_layers"]),
            L_layers=int(vals["L_layers"]),
            H_cycles=int(vals["H_cycles"]),
            L_cycles=int(vals["L_cycles"]),
            expansion=float(vals["expansion"] if vals["expansion"] is not None else 4.0),
            pos_encodings=str(vals["pos_encodings"] or "rope"),
            max_seq_len=int(vals["max_seq_len"] or 2048),  # AI-OS writes 0 when unknown
            halt_max_steps=int(vals["halt_max_steps"] or 1),
            use_moe=bool(vals["use_moe"]),
            num_experts=int(vals["num_experts"] or 8),
            num_experts_per_tok=int(vals["num_experts_per_tok"] or 2),
            torch_dtype=_DTYPES.get(dtype, dtype),
        )
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: bad field value: {exc}") from exc
    if cfg.pos_encodings not in ("rope", "learned"):
        raise CheckpointError(f"{path}: pos_encodings {cfg.pos_encodings!r} is not 'rope' or 'learned'")
    if cfg.hidden_size % cfg.num_heads:
        raise CheckpointError(f"{path}: hidden_size {cfg.hidden_size} is not divisible by num_heads {cfg.num_heads}")
    return cfg


def resolve_tokenizer(bundle: Path, raw: dict[str, Any], override: str | Path | None = None) -> str:
    """Where to load the tokenizer from: the override, else tokenizer files in the bundle,
    else brain.json `tokenizer_model` (as AI-OS does: relative to the working directory, and
    here also relative to the bundle)."""
    if override:
        return str(override)
    if any((bundle / f).is_file() for f in _TOKENIZER_FILES):
        return str(bundle)
    name = raw.get("tokenizer_model")
    if not name:
        raise CheckpointError(
            f"{bundle / BRAIN_JSON}: no 'tokenizer_model' and no tokenizer.json in {bundle}; "
            "pass tokenizer_path"
        )
    tried = [Path(name)] if os.path.isabs(name) else [Path.cwd() / name, bundle / name]
    for cand in tried:
        if cand.exists():
            return str(cand)
    raise CheckpointError(
        f"{bundle / BRAIN_JSON}: tokenizer_model {name!r} not found (tried {[str(t) for t in tried]}); "
        "copy the tokenizer files into the bundle or pass tokenizer_path"
    )


def _read_tensors(path: Path) -> dict[str, Tensor]:
    if not path.is_file():
        raise CheckpointError(f"no {path.name} in {path.parent}")
    with safe_open(str(path), framework="pt") as handle:
        return {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118 - not a dict


def load_bundle(
    path: str | Path,
    device: torch.device,
    dtype: str | torch.dtype = "auto",
    *,
    tokenizer_path: str | Path | None = None,
    act_segments: int = 1,
) -> tuple[Actv1Model, Any]:
    """Build the model from a bundle directory and load its weights strictly; load the tokenizer."""
    from transformers import AutoTokenizer

    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"bundle directory {root} does not exist")
    brain_path = root / BRAIN_JSON
    raw = read_brain_json(brain_path)
    weights = root / str(raw.get("checkpoint_file") or CHECKPOINT_FILE)
    tensors = _read_tensors(weights)
    emb = tensors.get("inner.embed_tokens.embedding_weight")
    if emb is None:
        raise CheckpointError(f"{weights}: missing keys ['inner.embed_tokens.embedding_weight']")
    cfg = read_brain_config(raw, brain_path, vocab_size=int(emb.shape[0]))
    if act_segments < 1:
        raise ValueError(f"act_segments must be >= 1, got {act_segments}")
    cfg.act_segments = act_segments
    dt = resolve_dtype(dtype, cfg, device)

    with torch.device("meta"):
        model = Actv1Model(cfg)
    check_keys_and_shapes(model.state_dict(), tensors, str(weights))
    model.load_state_dict({k: t.to(dt) for k, t in tensors.items()}, strict=True, assign=True)
    model = model.to(device).eval().requires_grad_(False)

    tokenizer = AutoTokenizer.from_pretrained(resolve_tokenizer(root, raw, tokenizer_path))
    if len(tokenizer) > cfg.vocab_size:
        raise CheckpointError(
            f"{weights}: the tokenizer has {len(tokenizer)} tokens but the checkpoint's vocab is {cfg.vocab_size}"
        )
    cfg.bos_token_id = getattr(tokenizer, "bos_token_id", None)
    eos = getattr(tokenizer, "eos_token_id", None)
    cfg.eos_token_ids = () if eos is None else (int(eos),)
    cfg.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return model, tokenizer


class Actv1Runner:
    """`ModelRunner`'s interface without a KV cache: rows hold token histories and every
    step recomputes the full forward of the running rows."""

    def __init__(self, model: Actv1Model, max_context: int, pad_id: int = 0):
        cfg = model.cfg
        if cfg.pos_encodings == "learned" and max_context > cfg.max_seq_len:
            raise CheckpointError(
                f"context window {max_context} exceeds the learned position table ({cfg.max_seq_len} rows)"
            )
        p = next(model.parameters())
        self.model, self.cfg, self.device, self.dtype = model, cfg, p.device, p.dtype
        self.max_context, self.pad_id = max_context, pad_id
        self.rows: list[list[int]] = []
        if cfg.pos_encodings == "rope":
            model.rope_table(max_context)

    # -- "cache" management: token histories --------------------------------------------
    def ensure_cache(self, rows: int, seq: int) -> None:
        self.rows += [[] for _ in range(rows - len(self.rows))]

    def release_cache(self) -> None:
        self.rows = []

    def move_row(self, src: int, dst: int) -> None:
        self.rows[dst] = self.rows[src]
        self.rows[src] = []

    # -- forwards ---------------------------------------------------------------------
    def _pad(self, token_lists: list[list[int]]) -> tuple[Tensor, Tensor | None, Tensor]:
        """Right-padded ids (B, T), key mask (None when no row is padded), lengths (B,)."""
        lens = [len(t) for t in token_lists]
        T = max(lens)
        ids = torch.full((len(token_lists), T), self.pad_id, dtype=torch.long)
        for i, t in enumerate(token_lists):
            ids[i, : len(t)] = torch.tensor(t, dtype=torch.long)
        lengths = torch.tensor(lens, device=self.device)
        mask = None if min(lens) == T else torch.arange(T, device=self.device)[None, :] < lengths[:, None]
        return ids.to(self.device), mask, lengths

    @torch.inference_mode()
    def last_logits(self, token_lists: list[list[int]]) -> Tensor:
        """fp32 (B, vocab): each row's logits at its last position (AI-OS `logits[:, -1]`)."""
        ids, mask, lengths = self._pad(token_lists)
        states = self.model.hidden(ids, mask)
        return self.model.logits(states[torch.arange(len(token_lists), device=self.device), lengths - 1])

    def prefill(self, token_lists: list[list[int]], row0: int, prefix_lm: bool) -> Tensor:
        self.ensure_cache(row0 + len(token_lists), 0)
        for i, t in enumerate(token_lists):
            self.rows[row0 + i] = list(t)
        return self.last_logits(token_lists)

    def decode(self, tokens: Tensor, pos: Tensor, kv_len: int, uniform: bool = False) -> Tensor:
        """Append one token to rows [0, B) and recompute them."""
        B = tokens.shape[0]
        for row, tok, p in zip(self.rows[:B], tokens.tolist(), pos.tolist(), strict=True):
            row.append(int(tok))
            assert len(row) == p + 1, "row history out of step with the scheduler"
        return self.last_logits(self.rows[:B])

    @torch.inference_mode()
    def full_hidden(self, token_lists: list[list[int]], prefix_lens: list[int] | None) -> Tensor:
        """One bidirectional forward over whole (right-padded) sequences: final z_H (B, T, hidden)."""
        ids, mask, _ = self._pad(token_lists)
        return self.model.hidden(ids, mask)

    @torch.inference_mode()
    def logits(self, states: Tensor) -> Tensor:
        return self.model.logits(states)

    def continuation_logits(
        self, pairs: list[tuple[list[int], list[int]]], prefix_lm: bool = False, chunk: int = 32
    ) -> Tensor:
        """fp32 (sum of continuation lengths, vocab): continuation token i of each pair is scored
        by the last-position logits of a forward over `ctx + cont[:i]`, i.e. the distribution
        generation would sample it from. (With bidirectional attention one pass over the
        whole sequence would let each position see the tokens it is scored on.) `prefix_lm`
        is unused: ACTV1 attention is bidirectional everywhere."""
        prefixes = [ctx + cont[:i] for ctx, cont in pairs for i in range(len(cont))]
        return torch.cat([self.last_logits(prefixes[s : s + chunk]) for s in range(0, len(prefixes), chunk)])
