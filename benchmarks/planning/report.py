"""Plain-text rendering of a launch plan: numbers, flags, assumptions, warnings."""

from __future__ import annotations

import shlex

from benchmarks.planning.engines import EngineSpec
from benchmarks.planning.plan import LaunchPlan

__all__ = ["ASSUMPTIONS", "render_plan"]

ASSUMPTIONS = (
    "weights = params x serving-dtype bytes (or quantized bytes), split evenly over TP",
    "KV/token = 2 x KV layers x KV heads x head_dim x dtype bytes, split over TP (HRM: layers = KV slots)",
    "fixed per-GPU overhead for CUDA context, activations and CUDA graphs; no pipeline parallelism",
    "fits = weights + overhead + one max-model-len sequence of KV <= utilization x GPU memory",
    "decode ceiling = batch-1 bandwidth roofline reading all weights per token (MoE: conservative)",
)


def _fmt_params(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k"


def _fmt_gib(gib: float) -> str:
    return f"{gib:.2f} GiB" if gib >= 1 else f"{gib * 1024:.2f} MiB"


def render_plan(plan: LaunchPlan, engine: EngineSpec) -> str:
    m, req = plan.model, plan.request
    moe = f", MoE {m.num_experts} experts (top-{m.experts_per_token})" if m.is_moe else ""
    spec = req.gpus.spec
    quant = f", quantization {req.quantization}" if req.quantization else ""
    lines = [
        f"model     {m.name} ({m.model_type}{moe}) at {m.path or '-'}",
        (
            f"params    {_fmt_params(m.num_params)} [{m.params_source}], heads {m.num_attention_heads}, "
            f"KV heads {m.num_kv_heads}, head_dim {m.head_dim}, KV layers {m.kv_layers}"
        ),
        (
            f"gpus      {req.gpus} ({spec.memory_gib:g} GiB, {spec.bf16_tflops:g} TFLOPs 16-bit, "
            f"{spec.bandwidth_gbs:g} GB/s each)"
        ),
        f"dtype     {plan.dtype}, {plan.bytes_per_param:.3g} bytes/param{quant}",
        (
            f"memory    weights {_fmt_gib(plan.weight_gib)} total, {_fmt_gib(plan.weights_per_gpu_gib)}/GPU; "
            f"usable {plan.usable_per_gpu_gib:.1f} GiB/GPU; overhead {req.overhead_gib:g} GiB/GPU"
        ),
        (
            f"kv cache  {plan.kv_bytes_per_token / 1024:.1f} KiB/token; capacity {plan.kv_capacity_tokens:,} "
            f"tokens per replica = {plan.max_concurrent_full_sequences:.1f} full {plan.max_model_len}-token sequences"
        ),
        f"parallel  TP={plan.tp} DP={plan.dp} EP={plan.ep} ({plan.gpus_used} of {req.gpus.count} GPUs)",
        f"decode    <= {plan.decode_tok_s_ceiling:,.0f} tok/s per sequence at batch 1 (roofline)",
        "",
        f"{plan.engine} flags:",
        "  " + shlex.join(engine.args(plan)),
        "compose .env:",
        *(f"  {k}={v}" for k, v in engine.env(plan).items()),
        "",
        "assumptions:",
        *(f"  - {a}" for a in ASSUMPTIONS),
    ]
    if plan.warnings:
        lines += ["warnings:", *(f"  ! {w}" for w in plan.warnings)]
    return "\n".join(lines)
