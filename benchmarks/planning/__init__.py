"""Launch planning for `abtest plan`: read a model's config and safetensors headers, estimate
memory, and choose TP/DP/EP and engine flags for vLLM or TGI on a given GPU inventory."""

from __future__ import annotations

from benchmarks.planning.engines import EngineSpec, engine_specs, get_engine
from benchmarks.planning.envfile import update_env_file
from benchmarks.planning.errors import PlanError
from benchmarks.planning.gpus import GpuInventory, GpuSpec, gpu_specs, parse_gpus
from benchmarks.planning.model_info import ModelInfo, estimate_params, load_model_info, model_info_from_config
from benchmarks.planning.plan import LaunchPlan, PlanRequest, make_plan
from benchmarks.planning.report import render_plan
from benchmarks.planning.run import PlanOptions, plan_command
from benchmarks.planning.safetensors_meta import WeightStats, weight_stats
from benchmarks.planning.sources import ModelSource, resolve_sources

__all__ = [
    "EngineSpec",
    "GpuInventory",
    "GpuSpec",
    "LaunchPlan",
    "ModelInfo",
    "ModelSource",
    "PlanError",
    "PlanOptions",
    "PlanRequest",
    "WeightStats",
    "engine_specs",
    "estimate_params",
    "get_engine",
    "gpu_specs",
    "load_model_info",
    "make_plan",
    "model_info_from_config",
    "parse_gpus",
    "plan_command",
    "render_plan",
    "resolve_sources",
    "update_env_file",
    "weight_stats",
]  # fmt: skip
