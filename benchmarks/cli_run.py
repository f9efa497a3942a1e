"""`abtest run`, `compare`, `report`, `prompts`: parse options and call one function each."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register"]


def _fail(msg: str, code: int = 2) -> typer.Exit:
    from rich.console import Console

    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {msg}", highlight=False)
    return typer.Exit(code)


def _flag_errors(e: Exception) -> str:
    """A pydantic ValidationError of RunSettings as `--flag: message` lines; other errors as is."""
    from pydantic import ValidationError

    if not isinstance(e, ValidationError) or e.title != "RunSettings":
        return str(e)
    return "; ".join(
        f"--{'.'.join(str(x) for x in err['loc']).replace('_', '-')}: {err['msg']}" for err in e.errors()
    )


def _default_targets(models_dir: Path | None) -> tuple[list[dict[str, Any]], str]:
    """The embedded default: our engine and HF on hrm-tiny (reference), HF on llama-tiny (baseline)."""
    from benchmarks.samples.prepare import ensure_models

    models = ensure_models(models_dir)
    return [
        {"name": "hrm", "kind": "hrm", "model": str(models["hrm-tiny"])},
        {"name": "hf-hrm", "kind": "hf", "model": str(models["hrm-tiny"])},
        {"name": "hf-llama", "kind": "hf", "model": str(models["llama-tiny"])},
    ], "hf-hrm"


def run_cmd(
    config: Annotated[
        Path | None,
        typer.Option("--config", help="router-format TOML/YAML file with \\[\\[backends]] tables"),
    ] = None,
    backend: Annotated[
        list[str] | None, typer.Option("--backend", help="NAME=KIND:URL_OR_PATH (repeatable)")
    ] = None,
    via_router: Annotated[
        str | None, typer.Option("--via-router", help="benchmark through a router URL")
    ] = None,
    router_backend: Annotated[
        list[str] | None,
        typer.Option(
            "--router-backend", help="with --via-router: pin requests to this router backend (repeatable)"
        ),
    ] = None,
    router_stream: Annotated[
        bool,
        typer.Option(
            "--router-stream", help="with --via-router: use /generate_stream (SSE) to measure TTFT/ITL"
        ),
    ] = False,
    name: Annotated[str, typer.Option(help="run name (results/<timestamp>-<name>/)")] = "default",
    prompts: Annotated[str, typer.Option("--prompts", help="built-in prompt set")] = "default",
    prompts_file: Annotated[Path | None, typer.Option(help="JSONL/CSV prompt file")] = None,
    n: Annotated[int | None, typer.Option("--n", help="number of prompts (default 48)")] = None,
    duration: Annotated[float | None, typer.Option(help="seconds of open-loop load (needs --rate)")] = None,
    seed: int = 0,
    max_tokens: int = 32,
    temperature: float = 0.0,
    top_p: float = 1.0,
    concurrency: Annotated[str | None, typer.Option(help="closed loop, sweep as 1,4,16")] = None,
    rate: Annotated[str | None, typer.Option(help="open loop req/s, sweep as 5,10")] = None,
    arrival: Annotated[str, typer.Option(help="open-loop arrivals: poisson | gamma")] = "poisson",
    burstiness: Annotated[float, typer.Option(help="gamma shape (1 = Poisson)")] = 1.0,
    warmup: Annotated[int, typer.Option(help="warmup requests per target (not measured)")] = 2,
    repeats: Annotated[int, typer.Option(help="replays of the request list (>= 2 gives a noise floor)")] = 2,
    order: Annotated[str, typer.Option(help="block interleaving: abba | random")] = "abba",
    block_size: Annotated[
        int | None, typer.Option(help="requests per interleaved block (default: auto)")
    ] = None,
    reference: Annotated[str | None, typer.Option(help="agreement reference (default: first target)")] = None,
    slo: Annotated[str | None, typer.Option(help="goodput SLOs in ms, e.g. ttft=200,e2el=2000")] = None,
    max_lag_ms: Annotated[float, typer.Option(help="run invalid when schedule lag p99 exceeds this")] = 25.0,
    timeout: Annotated[float, typer.Option(help="per-request timeout (s)")] = 120.0,
    stream: Annotated[bool, typer.Option(help="stream when the backend can (TTFT/ITL)")] = True,
    cross_score: Annotated[bool, typer.Option(help="score each target's outputs on the others")] = True,
    results_dir: Annotated[Path | None, typer.Option(help="results root (env ABTEST_RESULTS_DIR)")] = None,
    models_dir: Annotated[Path | None, typer.Option(help="sample models dir for the default run")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="complete an interrupted run dir")] = None,
    quiet: Annotated[bool, typer.Option(help="no live progress")] = False,
) -> None:
    """Run the seeded A/B benchmark (no arguments: the embedded default on the sample models)."""
    from rich.console import Console
    from transformers.utils import logging as hf_logging

    from benchmarks import bench
    from benchmarks.console import print_summary
    from benchmarks.progress import LiveProgress
    from benchmarks.settings import RunSettings, parse_backend_flag, parse_slo

    hf_logging.disable_progress_bar()  # our own live progress is the one progress display
    console = Console()
    try:
        if resume is not None:
            if backend or config or via_router:
                raise ValueError(
                    "--resume conflicts with --backend/--config/--via-router (the run dir has them)"
                )
            p = bench.resume(resume)
            run_dir = resume
        else:
            if via_router and (backend or config):
                raise ValueError(
                    "--via-router conflicts with --backend/--config: the router owns the backends"
                )
            if (router_backend or router_stream) and not via_router:
                raise ValueError("--router-backend/--router-stream need --via-router")
            specs = [parse_backend_flag(b) for b in backend or []]
            ref = reference
            if not specs and not config and not via_router:
                specs, default_ref = _default_targets(models_dir)
                ref = ref or default_ref
                if concurrency is None and rate is None:
                    concurrency = "1,4"  # the embedded default also plots throughput vs concurrency
            settings = RunSettings(
                name=name,
                targets=specs,
                via_router=via_router,
                router_backends=router_backend or [],
                router_stream=router_stream,
                config_path=str(config) if config else None,
                prompt_set=prompts,
                prompts_file=str(prompts_file) if prompts_file else None,
                n=n,
                duration_s=duration,
                seed=seed,
                max_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                concurrency=concurrency,
                rate=rate,
                arrival=arrival,
                burstiness=burstiness,
                warmup=warmup,
                repeats=repeats,
                order=order,
                block_size=block_size,
                reference=ref,
                slo_ms=parse_slo(slo),
                max_lag_ms=max_lag_ms,
                timeout_s=timeout,
                stream=stream,
                cross_score=cross_score,
                results_dir=str(results_dir or os.environ.get("ABTEST_RESULTS_DIR") or "results"),
            )
            p = bench.prepare(settings)
            run_dir = bench.start_run(p)
    except ValueError as e:  # includes pydantic ValidationError and PromptFileError
        raise _fail(_flag_errors(e)) from None
    console.print(f"run dir: {run_dir}  (request list sha256 {p.request_list.sha256[:16]}...)")
    try:
        if quiet:
            bench.execute(run_dir, p)
        else:
            with LiveProgress(console) as prog:
                bench.execute(run_dir, p, prog)
    except KeyboardInterrupt:
        console.print(
            f"[yellow]interrupted[/]; finished requests are saved. Resume with: abtest run --resume {run_dir}"
        )
        raise typer.Exit(130) from None
    summary = bench.render(run_dir)
    print_summary(console, summary, str(run_dir))


def compare_cmd(
    run_a: Path,
    run_b: Path,
    seed: int = 0,
    out: Annotated[Path | None, typer.Option(help="also write the comparison as JSON")] = None,
) -> None:
    """Compare two runs: metric deltas and median-latency ratio CIs per target and level."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks.compare import compare_runs
    from benchmarks.outputs.tables import fmt

    try:
        res = compare_runs(run_a, run_b, seed)
    except ValueError as e:
        raise _fail(str(e)) from None
    t = Table(title=f"compare A={run_a.name} B={run_b.name} ({'paired' if res['paired'] else 'unpaired'})")
    for c in ("target", "level", "E2E p50 A", "E2E p50 B", "req/s A", "req/s B", "verdict"):
        t.add_column(c)
    for r in res["rows"]:
        lat, q = r["median_e2el_ms"], r["request_throughput"]
        t.add_row(
            r["target"], r["level"], fmt(lat["a"]), fmt(lat["b"]), fmt(q["a"]), fmt(q["b"]), r["verdict"]
        )
    Console().print(t)
    if out:
        out.write_text(json.dumps(res, indent=2, default=str), encoding="utf-8")


def report_cmd(run_dir: Path) -> None:
    """Re-render summary.json/csv, agreement.json, report.md and report.html from requests.jsonl."""
    from rich.console import Console

    from benchmarks.bench import render
    from benchmarks.console import print_summary

    try:
        summary = render(run_dir)
    except ValueError as e:
        raise _fail(str(e)) from None
    print_summary(Console(), summary, str(run_dir))


def prompts_cmd(
    set_name: Annotated[str, typer.Option("--set", help="built-in prompt set")] = "default",
    n: int = 48,
    seed: int = 0,
    out: Annotated[Path | None, typer.Option(help="write JSONL here instead of stdout")] = None,
) -> None:
    """Print or write a built-in prompt set as JSONL (the format --prompts-file reads)."""
    from benchmarks.requests.builtin import builtin_prompts

    try:
        raws = builtin_prompts(set_name, n, seed)
    except ValueError as e:
        raise _fail(str(e)) from None
    lines = []
    for r in raws:
        d: dict[str, Any] = {"prompt": r.prompt}
        if r.reference is not None:
            d["reference"] = r.reference
        if r.task:
            d["task"] = r.task
        if r.choices:
            d["choices"], d["answer"] = list(r.choices), r.answer
        lines.append(json.dumps(d, ensure_ascii=False))
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text, encoding="utf-8")
    else:
        typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
    app.command("compare")(compare_cmd)
    app.command("report")(report_cmd)
    app.command("prompts")(prompts_cmd)
