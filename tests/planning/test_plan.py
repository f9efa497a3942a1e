from __future__ import annotations

import pytest

from benchmarks.planning import (
    PlanError,
    PlanRequest,
    get_engine,
    make_plan,
    model_info_from_config,
    parse_gpus,
)
from benchmarks.planning.plan import LaunchPlan
from tests.planning.archs import HRM_TEXT_SAVED, LLAMA3_8B, LLAMA3_70B, LLAMA31_8B, MIXTRAL_8X7B, QWEN2_7B


def plan(cfg: dict, gpus: str, engine: str = "vllm", **kw: object) -> LaunchPlan:
    info = model_info_from_config(cfg, name="m")
    return make_plan(info, PlanRequest(gpus=parse_gpus(gpus), **kw), get_engine(engine))  # type: ignore[arg-type]


def test_gpu_table_has_required_gpus_and_parsing() -> None:
    from benchmarks.planning import gpu_specs

    assert set(gpu_specs()) == {"T4", "L4", "A10G", "A100-40", "A100-80", "H100", "H200", "B200", "MI300X"}
    assert parse_gpus("h100:4").count == 4 and parse_gpus("A100-80GB:2").spec.name == "A100-80"
    assert parse_gpus("L4").count == 1
    with pytest.raises(ValueError, match="known GPUs: T4"):
        parse_gpus("V99:1")
    with pytest.raises(ValueError, match="at least 1"):
        parse_gpus("H100:0")


def test_llama3_8b_fits_one_h100() -> None:
    p = plan(LLAMA3_8B, "H100:1")
    assert (p.tp, p.dp, p.ep) == (1, 1, 1)
    assert p.weight_gib == pytest.approx(8.03e9 * 2 / 2**30, rel=0.01)
    assert p.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2  # 128 KiB
    args = get_engine("vllm").args(p)
    assert args[:2] == ["--tensor-parallel-size", "1"]
    assert "--max-model-len" in args and args[args.index("--max-model-len") + 1] == "8192"
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.90"


def test_llama3_70b_needs_tp4_on_a100_40_and_tp2_dp2_on_h100x4() -> None:
    assert (plan(LLAMA3_70B, "A100-40:4").tp, plan(LLAMA3_70B, "A100-40:4").dp) == (4, 1)
    p = plan(LLAMA3_70B, "H100:4")
    assert (p.tp, p.dp) == (2, 2)
    assert "--data-parallel-size" in get_engine("vllm").args(p)


def test_model_that_does_not_fit_fails_with_actionable_message() -> None:
    with pytest.raises(PlanError) as err:
        plan(LLAMA3_70B, "H100:1")
    msg = str(err.value)
    assert "does not fit on H100:1" in msg and "--gpus H100:2" in msg and "--quantization fp8" in msg


def test_mixtral_gets_expert_parallelism_on_vllm_only() -> None:
    p = plan(MIXTRAL_8X7B, "H100:4")
    assert (p.tp, p.dp, p.ep) == (2, 2, 4)
    assert "--enable-expert-parallel" in get_engine("vllm").args(p)
    t = plan(MIXTRAL_8X7B, "H100:4", engine="tgi")
    assert t.ep == 1
    args = get_engine("tgi").args(t)
    assert args[:2] == ["--num-shard", "2"] and args[args.index("--max-total-tokens") + 1] == "32768"
    assert int(args[args.index("--max-input-tokens") + 1]) < 32768


def test_tp_must_divide_attention_and_kv_heads() -> None:
    # Qwen2-7B: 28 heads, 4 KV heads -> TP in {1, 2, 4}; on T4 it needs TP=2.
    p = plan(QWEN2_7B, "T4:8")
    assert p.tp == 2 and p.dp == 4 and p.dtype == "float16"
    odd = {**LLAMA3_70B, "num_attention_heads": 60, "num_key_value_heads": 6}  # TP 4 does not divide 6
    with pytest.raises(PlanError, match="does not fit"):
        plan(odd, "A100-40:4")


def test_t4_bfloat16_falls_back_or_fails() -> None:
    p = plan(LLAMA3_8B, "T4:4")
    assert p.dtype == "float16" and any("no bfloat16" in w for w in p.warnings)
    with pytest.raises(PlanError, match="no bfloat16"):
        plan(LLAMA3_8B, "T4:4", dtype="bfloat16")


def test_quantization_shrinks_weights_and_unknown_methods_fail() -> None:
    base, fp8 = plan(LLAMA3_70B, "H100:4"), plan(LLAMA3_70B, "H100:4", quantization="fp8")
    assert fp8.weight_gib == pytest.approx(base.weight_gib / 2) and fp8.tp == 1 and fp8.dp == 4
    assert get_engine("vllm").args(fp8)[-2:] == ["--quantization", "fp8"]
    with pytest.raises(PlanError, match="pre-quantized"):
        plan(LLAMA3_8B, "H100:1", quantization="awq")


def test_long_context_is_shortened_unless_asked_for() -> None:
    p = plan(LLAMA31_8B, "L4:1")
    assert p.tp == 1 and 2048 <= p.max_model_len < 131072 and p.max_model_len % 256 == 0
    assert any("does not fit" in w for w in p.warnings)
    with pytest.raises(PlanError):
        plan(LLAMA31_8B, "L4:1", max_model_len=131072)
    with pytest.raises(PlanError, match="exceeds"):
        plan(LLAMA3_8B, "H100:1", max_model_len=100_000)


def test_hrm_text_plan_uses_slot_count_for_kv() -> None:
    p = plan(HRM_TEXT_SAVED, "L4:1")
    assert p.kv_bytes_per_token == 2 * 12 * 4 * 32 * 2
    assert p.dtype == "bfloat16" and any("float32" in w for w in p.warnings)
    assert any("hrm_text" in w for w in plan(HRM_TEXT_SAVED, "L4:1", engine="tgi").warnings)


def test_env_values_for_compose() -> None:
    p = plan(LLAMA3_70B, "A100-40:4")
    env = get_engine("vllm").env(p)
    assert env["VLLM_GPU_COUNT"] == "4" and env["VLLM_ARGS"].startswith("--tensor-parallel-size 4")
    tgi = get_engine("tgi").env(plan(LLAMA3_70B, "A100-40:4", engine="tgi"))
    assert tgi["TGI_GPU_COUNT"] == "4" and "--num-shard 4" in tgi["TGI_ARGS"]


def test_mi300x_fits_70b_on_one_gpu_with_rocm_note() -> None:
    p = plan(LLAMA3_70B, "MI300X:1")
    assert p.tp == 1 and any("ROCm" in w for w in p.warnings)
