"""`abtest plan`: size a model for vLLM/TGI on a GPU inventory and print the launch flags."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]


def plan(
    model: Annotated[Path, typer.Option("--model", help="model dir, its config.json, or an abtest config")],
    gpus: Annotated[str, typer.Option("--gpus", help="GPU inventory NAME:COUNT, e.g. H100:4")],
    engine: Annotated[str | None, typer.Option(help="vllm | tgi (default: backend kind, else vllm)")] = None,
    dtype: Annotated[str, typer.Option(help="auto | bfloat16 | float16 | float32")] = "auto",
    quantization: Annotated[str | None, typer.Option(help="quantize on load: fp8, bitsandbytes, ...")] = None,
    max_model_len: Annotated[
        int | None, typer.Option(min=1, help="context length (default: model's)")
    ] = None,
    gpu_memory_utilization: Annotated[float, typer.Option(min=0.1, max=1.0)] = 0.90,
    overhead_gib: Annotated[float, typer.Option(min=0.0, help="per-GPU runtime overhead")] = 2.0,
    write_env: Annotated[Path | None, typer.Option(help="compose .env to update, e.g. compose/.env")] = None,
) -> None:
    """Read config.json + safetensors headers (no weights), estimate memory, pick TP/DP/EP, print flags."""
    from benchmarks.planning import PlanError, PlanOptions, plan_command

    opts = PlanOptions(
        model=model,
        gpus=gpus,
        engine=engine,
        dtype=dtype,
        quantization=quantization,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        overhead_gib=overhead_gib,
        write_env=write_env,
    )
    try:
        plan_command(opts, typer.echo)
    except PlanError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
