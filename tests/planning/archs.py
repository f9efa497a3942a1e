"""Config dicts of known public architectures (values from their published config.json)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "HRM_TEXT_SAVED",
    "KNOWN_PARAMS",
    "LLAMA3_8B",
    "LLAMA3_70B",
    "LLAMA31_8B",
    "MIXTRAL_8X7B",
    "QWEN2_7B",
]

LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "rope_theta": 500000.0,
}  # fmt: skip
LLAMA31_8B: dict[str, Any] = {**LLAMA3_8B, "max_position_embeddings": 131072}
LLAMA3_70B: dict[str, Any] = {
    **LLAMA3_8B, "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
    "num_attention_heads": 64, "num_key_value_heads": 8,
}  # fmt: skip
MIXTRAL_8X7B: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}  # fmt: skip
QWEN2_7B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# What HrmTextConfig.save_pretrained writes for 2 layers/stack, H2 L2 (num_hidden_layers = 2*2*3 slots).
HRM_TEXT_SAVED: dict[str, Any] = {
    "model_type": "hrm_text", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 12,
    "num_layers_per_stack": 2, "num_attention_heads": 4, "head_dim": 32, "H_cycles": 2, "L_cycles": 2,
    "vocab_size": 320, "max_position_embeddings": 512, "tie_word_embeddings": False, "dtype": "float32",
}  # fmt: skip
# Published parameter counts.
KNOWN_PARAMS = {"llama3-8b": 8.03e9, "llama3-70b": 70.55e9, "mixtral-8x7b": 46.70e9, "qwen2-7b": 7.62e9}
