"""Per-engine launch flags (vLLM, TGI): a registry of small classes, one per engine."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, ClassVar, Protocol

from benchmarks.planning.errors import PlanError
from benchmarks.planning.model_info import ModelInfo

if TYPE_CHECKING:
    from benchmarks.planning.plan import LaunchPlan, PlanRequest

__all__ = ["EngineSpec", "TgiEngine", "VllmEngine", "engine_specs", "get_engine"]


class EngineSpec(Protocol):
    name: str
    quantization_bytes: ClassVar[dict[str, float]]  # methods that quantize an unquantized checkpoint on load
    model_env_key: str  # the compose variable holding the model path inside the container

    def check(self, model: ModelInfo, req: PlanRequest, dtype: str, warnings: list[str]) -> None: ...
    def expert_parallel(self, model: ModelInfo, tp: int, dp: int) -> int: ...
    def args(self, plan: LaunchPlan) -> list[str]: ...
    def env(self, plan: LaunchPlan) -> dict[str, str]: ...


def _check_quantization(engine: EngineSpec, model: ModelInfo, req: PlanRequest) -> None:
    if not req.quantization or model.quantization_method is not None:
        return
    if req.quantization not in engine.quantization_bytes:
        raise PlanError(
            f"--quantization {req.quantization!r}: {engine.name} quantizes an unquantized checkpoint only with "
            f"{', '.join(engine.quantization_bytes)} (awq/gptq need a pre-quantized checkpoint)"
        )


class VllmEngine:
    """vLLM (`vllm serve`): TP and DP are flags; MoE experts spread over TP x DP with EP on."""

    name = "vllm"
    model_env_key = "VLLM_MODEL"
    quantization_bytes: ClassVar[dict[str, float]] = {
        "fp8": 1.0,
        "bitsandbytes": 0.53,
    }  # bitsandbytes: 4-bit NF4 + scales

    def check(self, model: ModelInfo, req: PlanRequest, dtype: str, warnings: list[str]) -> None:
        _check_quantization(self, model, req)

    def expert_parallel(self, model: ModelInfo, tp: int, dp: int) -> int:
        if not model.is_moe:
            return 1
        for ep in (tp * dp, tp):
            if model.num_experts % ep == 0:
                return ep
        return 1

    def args(self, plan: LaunchPlan) -> list[str]:
        out = ["--tensor-parallel-size", str(plan.tp)]
        if plan.dp > 1:
            out += ["--data-parallel-size", str(plan.dp)]
        out += [
            "--max-model-len", str(plan.max_model_len),
            "--gpu-memory-utilization", f"{plan.request.gpu_memory_utilization:.2f}",
            "--dtype", plan.dtype,
        ]  # fmt: skip
        if plan.request.quantization and plan.model.quantization_method is None:
            out += ["--quantization", plan.request.quantization]
        if plan.ep > 1:
            out.append("--enable-expert-parallel")
        return out

    def env(self, plan: LaunchPlan) -> dict[str, str]:
        return {"VLLM_ARGS": shlex.join(self.args(plan)), "VLLM_GPU_COUNT": str(plan.gpus_used)}


class TgiEngine:
    """TGI (`text-generation-launcher`): TP is `--num-shard`; DP means more replicas; no EP."""

    name = "tgi"
    model_env_key = "TGI_MODEL"
    quantization_bytes: ClassVar[dict[str, float]] = {
        "fp8": 1.0, "eetq": 1.0, "bitsandbytes": 1.0, "bitsandbytes-nf4": 0.53,
    }  # fmt: skip

    def check(self, model: ModelInfo, req: PlanRequest, dtype: str, warnings: list[str]) -> None:
        _check_quantization(self, model, req)
        if dtype == "float32":
            raise PlanError("TGI serves float16 or bfloat16 only; use --dtype bfloat16 or float16")
        if model.is_hrm:
            warnings.append("TGI has no native hrm_text model: serve HRM with `abtest serve hrm` or vLLM")

    def expert_parallel(self, model: ModelInfo, tp: int, dp: int) -> int:
        return 1

    @staticmethod
    def input_tokens(total: int) -> int:
        return total - min(1024, total // 2)  # leave room for up to 1024 generated tokens

    def args(self, plan: LaunchPlan) -> list[str]:
        total = plan.max_model_len
        max_input = self.input_tokens(total)
        prefill = max(max_input, min(8192, plan.kv_capacity_tokens))
        out = [
            "--num-shard", str(plan.tp),
            "--max-total-tokens", str(total),
            "--max-input-tokens", str(max_input),
            "--max-batch-prefill-tokens", str(prefill),
            "--cuda-memory-fraction", f"{plan.request.gpu_memory_utilization:.2f}",
            "--dtype", plan.dtype,
        ]  # fmt: skip
        if plan.request.quantization and plan.model.quantization_method is None:
            out += ["--quantize", plan.request.quantization]
        return out

    def env(self, plan: LaunchPlan) -> dict[str, str]:
        return {"TGI_ARGS": shlex.join(self.args(plan)), "TGI_GPU_COUNT": str(plan.tp)}


def engine_specs() -> dict[str, EngineSpec]:
    return {"vllm": VllmEngine(), "tgi": TgiEngine()}


def get_engine(name: str) -> EngineSpec:
    engines = engine_specs()
    if name not in engines:
        raise PlanError(f"--engine {name!r}: valid engines are {', '.join(engines)}")
    return engines[name]
