"""What the planner needs to know about a model, from config.json (+ safetensors headers).

Handles dense decoder configs (Llama, Qwen2, Mistral...), MoE configs (`num_local_experts`,
`num_experts`, `n_routed_experts`), nested `text_config`, and HRM-Text, whose saved
`num_hidden_layers` already counts KV-cache slots (layers x H_cycles x (L_cycles + 1)).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.planning.safetensors_meta import WeightStats, weight_stats

__all__ = ["ModelInfo", "estimate_params", "load_model_info", "model_info_from_config"]

_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_DTYPE_ALIASES = {
    "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
    "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32",
}  # fmt: skip


@dataclass(frozen=True)
class ModelInfo:
    name: str
    model_type: str
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    kv_layers: int  # layers that hold a KV cache (HRM: slots)
    vocab_size: int
    max_position_embeddings: int | None
    num_params: int  # from safetensors headers when present, else estimated from config
    params_source: str  # "safetensors-header" | "index-total-size" | "config-estimate"
    checkpoint_bytes: int | None  # bytes on disk per safetensors, if known
    config_dtype: str | None  # bfloat16 | float16 | float32 | None
    num_experts: int = 0
    experts_per_token: int = 0
    quantization_method: str | None = None  # pre-quantized checkpoint (config quantization_config)
    path: str | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_hrm(self) -> bool:
        return self.model_type == "hrm_text"


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def _require(cfg: dict[str, Any], *keys: str) -> int:
    value = _int(cfg, *keys)
    if value is None or value <= 0:
        raise ValueError(f"config.json has no positive {' / '.join(keys)}; cannot plan this model")
    return value


def _flatten(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs keep the decoder in `text_config`; top-level keys fill the gaps."""
    text = cfg.get("text_config")
    if isinstance(text, dict):
        return {**cfg, **text}
    return cfg


def _hrm_layout(cfg: dict[str, Any]) -> tuple[int, int]:
    """(kv slots, distinct weight layers) for HRM-Text."""
    h, l_ = _int(cfg, "H_cycles", default=1) or 1, _int(cfg, "L_cycles", default=1) or 1
    per_stack = _int(cfg, "num_layers_per_stack")
    if per_stack is None:  # first-construction form: num_hidden_layers is per stack
        per_stack = _require(cfg, "num_hidden_layers")
        return per_stack * h * (l_ + 1), 2 * per_stack
    return _require(cfg, "num_hidden_layers"), 2 * per_stack


def estimate_params(cfg: dict[str, Any]) -> int:
    """Parameter count of a decoder from its config (embeddings, attention, MLP/experts, norms)."""
    cfg = _flatten(cfg)
    hidden = _require(cfg, "hidden_size", "d_model", "n_embd")
    heads = _require(cfg, "num_attention_heads", "n_head")
    kv = _int(cfg, "num_key_value_heads", default=heads) or heads
    head_dim = _int(cfg, "head_dim", default=hidden // heads) or hidden // heads
    vocab = _require(cfg, "vocab_size")
    inter = _int(cfg, "intermediate_size", "ffn_dim", default=4 * hidden) or 4 * hidden
    experts = _int(cfg, *_EXPERT_KEYS, default=0) or 0
    hrm = cfg.get("model_type") == "hrm_text"
    layers = _hrm_layout(cfg)[1] if hrm else _require(cfg, "num_hidden_layers", "n_layer")
    gate = heads * head_dim if hrm else 0  # HRM's sigmoid output gate
    attn = hidden * (heads * head_dim + 2 * kv * head_dim + gate) + heads * head_dim * hidden
    if cfg.get("attention_bias"):
        attn += heads * head_dim + 2 * kv * head_dim
    if experts > 1:
        moe_inter = _int(cfg, "moe_intermediate_size", default=inter) or inter
        shared = _int(cfg, "shared_expert_intermediate_size", default=0) or 0
        mlp = experts * 3 * hidden * moe_inter + hidden * experts + 3 * hidden * shared
    else:
        mlp = 3 * hidden * inter
    norms = 0 if hrm else 2 * hidden  # HRM's RMSNorm has no weights
    embed = vocab * hidden
    head = 0 if cfg.get("tie_word_embeddings") else vocab * hidden
    final = hidden  # HRM: z_L_init; others: the final norm
    return embed + head + layers * (attn + mlp + norms) + final


def _dtype(cfg: dict[str, Any]) -> str | None:
    raw = cfg.get("torch_dtype") or cfg.get("dtype")
    return _DTYPE_ALIASES.get(str(raw).lower()) if raw else None


def model_info_from_config(
    cfg: dict[str, Any], stats: WeightStats | None = None, name: str = "model", path: str | None = None
) -> ModelInfo:
    flat = _flatten(cfg)
    hidden = _require(flat, "hidden_size", "d_model", "n_embd")
    heads = _require(flat, "num_attention_heads", "n_head")
    kv_heads = _int(flat, "num_key_value_heads", default=heads) or heads
    head_dim = _int(flat, "head_dim", default=hidden // heads) or hidden // heads
    model_type = str(flat.get("model_type") or "unknown")
    kv_layers = (
        _hrm_layout(flat)[0] if model_type == "hrm_text" else _require(flat, "num_hidden_layers", "n_layer")
    )
    quant = flat.get("quantization_config")
    estimated = estimate_params(flat)
    if stats is not None and stats.num_params is not None:
        num_params, source = stats.num_params, stats.source
    else:
        num_params, source = estimated, "config-estimate"
    return ModelInfo(
        name=name,
        model_type=model_type,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        kv_layers=kv_layers,
        vocab_size=_require(flat, "vocab_size"),
        max_position_embeddings=_int(flat, "max_position_embeddings", "n_positions", "max_seq_len"),
        num_params=num_params,
        params_source=source,
        checkpoint_bytes=stats.total_bytes if stats is not None else None,
        config_dtype=_dtype(flat),
        num_experts=_int(flat, *_EXPERT_KEYS, default=0) or 0,
        experts_per_token=_int(flat, "num_experts_per_tok", "moe_top_k", default=0) or 0,
        quantization_method=str(quant.get("quant_method")) if isinstance(quant, dict) else None,
        path=path,
    )


def load_model_info(model_dir: Path) -> ModelInfo:
    """Read `model_dir/config.json` and the safetensors headers (never the weights)."""
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise ValueError(f"{model_dir}: no config.json (expected a Hugging Face model directory)")
    try:
        cfg = json.loads(config_path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{config_path}: not valid JSON ({exc})") from exc
    if not isinstance(cfg, dict):
        raise ValueError(f"{config_path}: expected a JSON object")  # noqa: TRY004 (callers catch ValueError)
    return model_info_from_config(cfg, weight_stats(model_dir), name=model_dir.name, path=str(model_dir))
