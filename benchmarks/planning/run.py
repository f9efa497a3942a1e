"""`abtest plan` end to end: resolve models, plan each, print, optionally write the compose .env."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.planning.engines import get_engine
from benchmarks.planning.envfile import update_env_file
from benchmarks.planning.errors import PlanError
from benchmarks.planning.gpus import parse_gpus
from benchmarks.planning.model_info import load_model_info
from benchmarks.planning.plan import LaunchPlan, PlanRequest, make_plan
from benchmarks.planning.report import render_plan
from benchmarks.planning.sources import resolve_sources

__all__ = ["PlanOptions", "container_model_path", "plan_command"]


@dataclass(frozen=True)
class PlanOptions:
    model: Path
    gpus: str
    engine: str | None = None  # default: the backend's kind when it is an engine, else vllm
    dtype: str = "auto"
    quantization: str | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.90
    overhead_gib: float = 2.0
    write_env: Path | None = None


def _env_value(path: Path, key: str) -> str | None:
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip().strip('"')
    return None


def container_model_path(model_dir: Path, env_path: Path) -> str | None:
    """`/models/<rel>` if `model_dir` lies inside the models dir that compose mounts, else None."""
    models = Path(_env_value(env_path, "ABTEST_MODELS_DIR") or "../models")
    base = models if models.is_absolute() else env_path.parent / models
    try:
        rel = model_dir.resolve().relative_to(base.resolve())
    except ValueError:
        return None
    return "/models/" + rel.as_posix() if rel.parts else None


def plan_command(opts: PlanOptions, echo: Callable[[str], None]) -> list[LaunchPlan]:
    """Plan every model named by `opts.model`; raises PlanError with an actionable message."""
    try:
        gpus = parse_gpus(opts.gpus)
    except ValueError as exc:
        raise PlanError(str(exc)) from exc
    req = PlanRequest(
        gpus=gpus,
        dtype=opts.dtype,
        quantization=opts.quantization,
        max_model_len=opts.max_model_len,
        gpu_memory_utilization=opts.gpu_memory_utilization,
        overhead_gib=opts.overhead_gib,
    )
    plans: list[LaunchPlan] = []
    env: dict[str, str] = {}
    for source in resolve_sources(opts.model):
        engine = get_engine(opts.engine or (source.kind if source.kind in ("vllm", "tgi") else "vllm"))
        try:
            info = load_model_info(source.path)
        except ValueError as exc:
            raise PlanError(str(exc)) from exc
        plan = make_plan(info, req, engine)
        if source.backend:
            echo(f"== backend {source.backend} ({source.kind}) ==")
        echo(render_plan(plan, engine))
        plans.append(plan)
        if opts.write_env is not None:
            if engine.model_env_key in env:
                raise PlanError(f"--write-env: two models planned for {engine.name}; plan them one at a time")
            env.update(engine.env(plan))
            mapped = container_model_path(source.path, opts.write_env)
            if mapped is None:
                echo(
                    f"note: {source.path} is outside the compose models dir; set ABTEST_MODELS_DIR in "
                    f"{opts.write_env} to its parent and {engine.model_env_key}=/models/{source.path.name}"
                )
                env[engine.model_env_key] = f"/models/{source.path.name}"
            else:
                env[engine.model_env_key] = mapped
    if opts.write_env is not None:
        update_env_file(opts.write_env, env)
        echo(f"wrote {', '.join(env)} to {opts.write_env}")
    return plans
