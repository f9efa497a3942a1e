"""`HrmConfig`: the HRM-Text architecture, read from a checkpoint's `config.json`.

Field names follow transformers' `HrmTextConfig`; derived fields (`num_slots`, `qkv_dim`,
`eos_token_ids`, ...) are filled in `__post_init__`, gpt-fast `ModelArgs` style.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hrm.errors import CheckpointError

__all__ = ["HrmConfig"]


@dataclass
class HrmConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_layers_per_stack: int
    H_cycles: int = 2
    L_cycles: int = 3
    head_dim: int | None = None
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    embedding_scale: float | None = None
    initializer_range: float = 0.02
    prefix_lm: bool = True
    max_position_embeddings: int = 2048
    attention_bias: bool = False
    mlp_bias: bool = False
    tie_word_embeddings: bool = False
    hidden_act: str = "silu"
    bos_token_id: int | None = None
    pad_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    torch_dtype: str = "float32"
    # Derived in __post_init__.
    num_slots: int = field(init=False)
    attn_dim: int = field(init=False)

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.embedding_scale is None:
            self.embedding_scale = 1.0 / self.initializer_range
        if self.hidden_act != "silu":
            raise CheckpointError(f"hidden_act {self.hidden_act!r} is not supported (only 'silu')")
        # One KV-cache slot per (recurrence step, layer), transformers' layout:
        # slot(h, l, layer) = (h * (L_cycles + 1) + l) * layers_per_stack + layer.
        self.num_slots = self.num_layers_per_stack * self.H_cycles * (self.L_cycles + 1)
        self.attn_dim = self.num_attention_heads * self.head_dim

    def slot_base(self, h: int, step: int) -> int:
        """First cache slot of the stack invocation at H-cycle `h`, step `step` (L_cycles = H stack)."""
        return (h * (self.L_cycles + 1) + step) * self.num_layers_per_stack

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "config.json") -> HrmConfig:
        if raw.get("model_type", "hrm_text") != "hrm_text":
            raise CheckpointError(f"{source}: model_type is {raw.get('model_type')!r}, expected 'hrm_text'")
        known = {f.name for f in fields(cls) if f.init}
        kwargs = {k: v for k, v in raw.items() if k in known}
        if raw.get("num_layers_per_stack") is None:
            # Legacy/first-construction config: num_hidden_layers is the per-stack count.
            kwargs["num_layers_per_stack"] = raw.get("num_hidden_layers")
        rope = raw.get("rope_parameters") or {}
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type != "default":
            raise CheckpointError(f"{source}: rope_type {rope_type!r} is not supported (only 'default')")
        kwargs["rope_theta"] = float(rope.get("rope_theta", raw.get("rope_theta", 10000.0)))
        eos = raw.get("eos_token_id")
        kwargs["eos_token_ids"] = tuple(eos) if isinstance(eos, list) else (() if eos is None else (eos,))
        kwargs["torch_dtype"] = str(raw.get("dtype") or raw.get("torch_dtype") or "float32")
        missing = [
            n
            for n in ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads")
            if n not in kwargs
        ]
        if missing or kwargs.get("num_layers_per_stack") is None:
            missing += [] if kwargs.get("num_layers_per_stack") is not None else ["num_hidden_layers"]
            raise CheckpointError(f"{source}: missing required fields {missing}")
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise CheckpointError(f"{source}: {exc}") from exc

    @classmethod
    def from_file(cls, path: Path) -> HrmConfig:
        if not path.is_file():
            raise CheckpointError(f"no config.json at {path}")
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{path}: invalid JSON: {exc}") from exc
        return cls.from_dict(raw, source=str(path))
