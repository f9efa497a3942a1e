from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from benchmarks.planning import estimate_params, load_model_info, model_info_from_config, weight_stats
from tests.planning.archs import HRM_TEXT_SAVED, KNOWN_PARAMS, LLAMA3_8B, LLAMA3_70B, MIXTRAL_8X7B, QWEN2_7B


@pytest.mark.parametrize(
    ("cfg", "key"),
    [
        (LLAMA3_8B, "llama3-8b"),
        (LLAMA3_70B, "llama3-70b"),
        (MIXTRAL_8X7B, "mixtral-8x7b"),
        (QWEN2_7B, "qwen2-7b"),
    ],
)
def test_param_estimate_matches_published_counts(cfg: dict, key: str) -> None:
    assert estimate_params(cfg) == pytest.approx(KNOWN_PARAMS[key], rel=0.01)


def test_heads_kv_heads_and_moe_are_read() -> None:
    info = model_info_from_config(MIXTRAL_8X7B, name="mixtral")
    assert (info.num_attention_heads, info.num_kv_heads, info.head_dim, info.kv_layers) == (32, 8, 128, 32)
    assert info.is_moe and info.num_experts == 8 and info.experts_per_token == 2
    assert info.params_source == "config-estimate"
    dense = model_info_from_config(QWEN2_7B)
    assert not dense.is_moe and dense.num_kv_heads == 4 and dense.config_dtype == "bfloat16"


def test_nested_text_config_is_flattened() -> None:
    info = model_info_from_config({"model_type": "llava", "text_config": LLAMA3_8B})
    assert info.num_kv_heads == 8 and info.kv_layers == 32


def test_hrm_saved_config_counts_kv_slots_not_stacks() -> None:
    info = model_info_from_config(HRM_TEXT_SAVED)
    assert info.is_hrm and info.kv_layers == 12  # already per slot: 2 layers x H2 x (L2 + 1)
    assert info.num_kv_heads == 4  # MHA, no num_key_value_heads in the config
    first_form = {k: v for k, v in HRM_TEXT_SAVED.items() if k != "num_layers_per_stack"} | {
        "num_hidden_layers": 2
    }
    assert model_info_from_config(first_form).kv_layers == 12


def test_hrm_estimate_equals_real_model_param_count() -> None:
    from transformers import HrmTextConfig, HrmTextForCausalLM

    cfg = HrmTextConfig(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, head_dim=16, num_hidden_layers=2,
        H_cycles=2, L_cycles=1, vocab_size=100, max_position_embeddings=64,
    )  # fmt: skip
    model = HrmTextForCausalLM(cfg)
    assert estimate_params(cfg.to_dict()) == sum(p.numel() for p in model.parameters())


def test_llama_estimate_equals_real_model_param_count() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=2, vocab_size=100, max_position_embeddings=64,
    )  # fmt: skip
    assert estimate_params(cfg.to_dict()) == sum(p.numel() for p in LlamaForCausalLM(cfg).parameters())


def test_safetensors_header_counts_params_and_dtypes(tmp_path: Path) -> None:
    save_file({"a": torch.zeros(3, 4, dtype=torch.bfloat16), "b": torch.zeros(5, dtype=torch.float32)},
              str(tmp_path / "model.safetensors"))  # fmt: skip
    stats = weight_stats(tmp_path)
    assert stats is not None
    assert stats.num_params == 17 and stats.total_bytes == 12 * 2 + 5 * 4
    assert stats.dtype_params == {"BF16": 12, "F32": 5} and stats.main_dtype == "BF16"


def test_sharded_index_uses_shards_or_total_size(tmp_path: Path) -> None:
    save_file({"a": torch.zeros(10, dtype=torch.float16)}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"b": torch.zeros(6, dtype=torch.float16)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    index = {
        "metadata": {"total_size": 32},
        "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"},
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    stats = weight_stats(tmp_path)
    assert stats is not None and stats.num_params == 16 and stats.files == 2
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    partial = weight_stats(tmp_path)
    assert partial is not None and partial.num_params is None and partial.total_bytes == 32
    assert partial.source == "index-total-size"


def test_corrupt_header_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes((10).to_bytes(8, "little") + b"not json!!")
    with pytest.raises(ValueError, match="not valid JSON"):
        weight_stats(tmp_path)


def test_load_model_info_reads_saved_checkpoint_headers(tmp_path: Path) -> None:
    from transformers import HrmTextConfig, HrmTextForCausalLM

    cfg = HrmTextConfig(hidden_size=32, intermediate_size=64, num_attention_heads=2, head_dim=16,
                        num_hidden_layers=1, H_cycles=1, L_cycles=1, vocab_size=50)  # fmt: skip
    model = HrmTextForCausalLM(cfg)
    model.save_pretrained(tmp_path)
    info = load_model_info(tmp_path)
    assert info.params_source == "safetensors-header"
    assert info.num_params == sum(p.numel() for p in model.parameters())
    assert info.kv_layers == 2 and info.model_type == "hrm_text"


def test_missing_config_names_the_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no config.json"):
        load_model_info(tmp_path)
