"""Launch planning: memory estimate, then TP/DP/EP and a context length that fits.

Assumptions (printed with every plan):
- weights: params x bytes of the serving dtype (or of the quantized format), sharded evenly over TP;
- KV cache: 2 (K and V) x KV layers x KV heads x head_dim x dtype bytes per token, sharded over TP;
- a fixed per-GPU overhead (CUDA context, activations, CUDA graphs, sampler) of `overhead_gib`;
- the engine may use `gpu_memory_utilization` of each GPU's memory;
- a plan fits when one sequence of `max_model_len` tokens fits beside the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.planning.engines import EngineSpec
from benchmarks.planning.errors import PlanError
from benchmarks.planning.gpus import GpuInventory, gpu_specs
from benchmarks.planning.model_info import ModelInfo

__all__ = ["GIB", "LaunchPlan", "PlanError", "PlanRequest", "make_plan"]

GIB = 1024**3
_DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0}
# Pre-quantized checkpoints whose size on disk is unknown: bytes per parameter by method.
_PREQUANT_BYTES = {"fp8": 1.0, "awq": 0.515, "gptq": 0.515, "bitsandbytes": 0.53, "compressed-tensors": 1.0}
_MIN_CONTEXT = 256


@dataclass(frozen=True)
class PlanRequest:
    gpus: GpuInventory
    dtype: str = "auto"  # auto | bfloat16 | float16 | float32
    quantization: str | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.90
    overhead_gib: float = 2.0


@dataclass(frozen=True)
class LaunchPlan:
    model: ModelInfo
    request: PlanRequest
    engine: str
    dtype: str
    bytes_per_param: float
    weight_gib: float
    kv_bytes_per_token: int
    tp: int
    dp: int
    ep: int
    max_model_len: int
    weights_per_gpu_gib: float
    usable_per_gpu_gib: float
    kv_capacity_tokens: int  # per replica, after weights and overhead
    decode_tok_s_ceiling: float  # batch-1 decode roofline per replica (bandwidth / bytes read per token)
    warnings: list[str] = field(default_factory=list)

    @property
    def gpus_used(self) -> int:
        return self.tp * self.dp

    @property
    def max_concurrent_full_sequences(self) -> float:
        return self.kv_capacity_tokens / self.max_model_len


def _powers_of_two(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _resolve_dtype(model: ModelInfo, req: PlanRequest, warnings: list[str]) -> str:
    spec = req.gpus.spec
    if req.dtype not in ("auto", *_DTYPE_BYTES):
        raise PlanError(f"--dtype {req.dtype!r}: valid values are auto, {', '.join(_DTYPE_BYTES)}")
    if req.dtype == "bfloat16" and not spec.bf16:
        raise PlanError(f"{spec.name} has no bfloat16 support; use --dtype float16")
    if req.dtype != "auto":
        return req.dtype
    dtype = model.config_dtype if model.config_dtype in ("bfloat16", "float16") else "bfloat16"
    if model.config_dtype == "float32":
        warnings.append("checkpoint is float32: served in 16-bit (as vLLM/TGI do by default)")
    if dtype == "bfloat16" and not spec.bf16:
        warnings.append(f"{spec.name} has no bfloat16: serving in float16")
        dtype = "float16"
    return dtype


def _bytes_per_param(
    model: ModelInfo, req: PlanRequest, engine: EngineSpec, dtype: str, warnings: list[str]
) -> float:
    if model.quantization_method is not None:
        if req.quantization:
            warnings.append(
                f"checkpoint is already quantized ({model.quantization_method}); --quantization ignored"
            )
        if model.checkpoint_bytes:
            return model.checkpoint_bytes / model.num_params
        return _PREQUANT_BYTES.get(model.quantization_method, 1.0)
    if req.quantization:
        if req.quantization == "fp8" and not req.gpus.spec.fp8:
            warnings.append(f"{req.gpus.spec.name} has no native fp8: weight-only fp8 kernels (slower)")
        return engine.quantization_bytes[req.quantization]
    return _DTYPE_BYTES[dtype]


def _fits(weight_b: float, kv_tok_b: int, tokens: int, tp: int, usable_b: float, overhead_b: float) -> bool:
    return weight_b / tp + overhead_b + kv_tok_b * tokens / tp <= usable_b


def _context_that_fits(weight_b: float, kv_tok_b: int, tp: int, usable_b: float, overhead_b: float) -> int:
    free = usable_b - overhead_b - weight_b / tp
    return max(0, int(free * tp / kv_tok_b) // _MIN_CONTEXT * _MIN_CONTEXT)


def _no_fit_message(model: ModelInfo, req: PlanRequest, weight_b: float, need_tp: int | None) -> str:
    spec, count = req.gpus.spec, req.gpus.count
    usable = spec.memory_gib * req.gpu_memory_utilization
    head = (
        f"{model.name} does not fit on {req.gpus}: weights {weight_b / GIB:.1f} GiB, "
        f"usable {usable:.1f} GiB per GPU (x{req.gpu_memory_utilization:.2f}), overhead {req.overhead_gib} GiB/GPU."
    )
    lines = [head]
    if need_tp is not None:
        lines.append(f"- it needs TP={need_tp}: use --gpus {spec.name}:{need_tp} or more")
    per_gpu = weight_b / count / GIB + req.overhead_gib
    bigger = [s.name for s in gpu_specs().values() if s.memory_gib * req.gpu_memory_utilization > per_gpu]
    if bigger:
        lines.append(f"- or GPUs with more memory: {', '.join(bigger)} (e.g. --gpus {bigger[0]}:{count})")
    if not req.quantization and model.quantization_method is None:
        lines.append("- or quantize the weights on load: --quantization fp8 (half the bytes)")
    lines.append("- or a shorter context: --max-model-len 4096")
    return "\n".join(lines)


def make_plan(model: ModelInfo, req: PlanRequest, engine: EngineSpec) -> LaunchPlan:
    """Pick the smallest power-of-two TP that fits and divides the attention and KV heads."""
    if not 0.1 <= req.gpu_memory_utilization <= 1.0:
        raise PlanError("--gpu-memory-utilization must be in [0.1, 1.0]")
    warnings: list[str] = []
    if req.gpus.spec.vendor != "nvidia":
        warnings.append(
            f"{req.gpus.spec.name} is an {req.gpus.spec.vendor.upper()} GPU: use the engines' ROCm images "
            "(compose/docker-compose.yml reserves NVIDIA devices)"
        )
    dtype = _resolve_dtype(model, req, warnings)
    engine.check(model, req, dtype, warnings)
    bpp = _bytes_per_param(model, req, engine, dtype, warnings)
    weight_b = model.num_params * bpp
    kv_tok_b = int(2 * model.kv_layers * model.num_kv_heads * model.head_dim * _DTYPE_BYTES[dtype])
    usable_b = req.gpus.spec.memory_gib * req.gpu_memory_utilization * GIB
    overhead_b = req.overhead_gib * GIB
    context = req.max_model_len or model.max_position_embeddings
    if context is None:
        context = 4096
        warnings.append("config has no max_position_embeddings: assuming --max-model-len 4096")
    if (
        req.max_model_len
        and model.max_position_embeddings
        and req.max_model_len > model.max_position_embeddings
    ):
        raise PlanError(
            f"--max-model-len {req.max_model_len} exceeds the model's max_position_embeddings "
            f"{model.max_position_embeddings}"
        )

    def valid(tp: int) -> bool:
        return model.num_attention_heads % tp == 0 and model.num_kv_heads % tp == 0

    candidates = [tp for tp in _powers_of_two(req.gpus.count) if valid(tp)]
    tp = next((t for t in candidates if _fits(weight_b, kv_tok_b, context, t, usable_b, overhead_b)), None)
    if tp is None and req.max_model_len is None:
        floor = min(context, 2048)
        tp = next((t for t in candidates if _fits(weight_b, kv_tok_b, floor, t, usable_b, overhead_b)), None)
        if tp is not None:
            shorter = min(context, _context_that_fits(weight_b, kv_tok_b, tp, usable_b, overhead_b))
            warnings.append(f"full context {context} does not fit at TP={tp}: --max-model-len {shorter}")
            context = shorter
    if tp is None:
        wider = [t for t in _powers_of_two(model.num_attention_heads) if valid(t) and t > req.gpus.count]
        need = next((t for t in wider if _fits(weight_b, kv_tok_b, context, t, usable_b, overhead_b)), None)
        raise PlanError(_no_fit_message(model, req, weight_b, need))
    dp = req.gpus.count // tp
    if req.gpus.count - tp * dp:
        warnings.append(f"{req.gpus.count - tp * dp} GPU(s) left idle (TP={tp} x DP={dp})")
    free_b = usable_b - overhead_b - weight_b / tp
    bandwidth = req.gpus.spec.bandwidth_gbs * 1e9 * tp
    return LaunchPlan(
        model=model,
        request=req,
        engine=engine.name,
        dtype=dtype,
        bytes_per_param=bpp,
        weight_gib=weight_b / GIB,
        kv_bytes_per_token=kv_tok_b,
        tp=tp,
        dp=dp,
        ep=engine.expert_parallel(model, tp, dp),
        max_model_len=context,
        weights_per_gpu_gib=weight_b / tp / GIB,
        usable_per_gpu_gib=usable_b / GIB,
        kv_capacity_tokens=int(free_b * tp / kv_tok_b),
        decode_tok_s_ceiling=bandwidth / weight_b,
        warnings=warnings,
    )
