"""`abtest models ...` commands: build, list and evaluate the tiny sample models."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(help="Build, list and evaluate the tiny sample models.", no_args_is_help=True)

ModelsDirOpt = Annotated[
    Path | None,
    typer.Option("--models-dir", help="Models dir (default: $ABTEST_MODELS_DIR or ./models)."),
]


@app.command("prepare")
def prepare(
    models_dir: ModelsDirOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the models are present.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed for data, tokenizer and training.")] = 0,
) -> None:
    """Build the sample models (hrm-tiny, llama-tiny) if missing."""
    import time

    from rich.console import Console

    from benchmarks.samples.prepare import ensure_models, read_metadata

    console = Console()
    t0 = time.perf_counter()
    paths = ensure_models(models_dir, progress=True, seed=seed, force=force)
    for name, path in paths.items():
        acc = read_metadata(path).get("heldout_accuracy", {})
        scores = ", ".join(f"{task} {value:.2f}" for task, value in acc.items())
        console.print(f"[bold]{name}[/bold]: {path}  ({scores})")
    console.print(f"done in {time.perf_counter() - t0:.1f}s")


@app.command("list")
def list_models(models_dir: ModelsDirOpt = None) -> None:
    """Show the sample models, whether they are built, and their build facts."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks.samples.prepare import MODEL_NAMES, is_complete, read_metadata
    from benchmarks.samples.prepare import models_dir as default_dir

    root = models_dir if models_dir is not None else default_dir()
    table = Table(title=f"sample models in {root}")
    for col in ("model", "status", "seed", "steps", "train s", "path"):
        table.add_column(col)
    for name in MODEL_NAMES:
        path = root / name
        meta = read_metadata(path)
        spec = meta.get("spec", {})
        table.add_row(
            name,
            "ready" if is_complete(path) else "missing",
            str(meta.get("seed", "")),
            str(spec.get("steps", "")),
            str(meta.get("train_seconds", "")),
            str(path),
        )
    Console().print(table)


@app.command("eval")
def eval_models(
    models_dir: ModelsDirOpt = None,
    n: Annotated[int, typer.Option("--n", min=1, help="Held-out prompts per task.")] = 50,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the held-out prompts.")] = None,
) -> None:
    """Print held-out accuracy per task per model (greedy, exact match)."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks.samples.evaluation import EVAL_SEED, evaluate
    from benchmarks.samples.prepare import MODEL_NAMES, is_complete
    from benchmarks.samples.prepare import models_dir as default_dir
    from benchmarks.samples.tasks import TASKS

    root = models_dir if models_dir is not None else default_dir()
    console = Console()
    missing = [name for name in MODEL_NAMES if not is_complete(root / name)]
    if missing:
        console.print(
            f"[red]missing model(s) {', '.join(missing)} in {root}; run `abtest models prepare`[/red]"
        )
        raise typer.Exit(code=1)
    table = Table(title=f"held-out accuracy ({n} prompts per task)")
    table.add_column("model")
    for task in TASKS:
        table.add_column(task, justify="right")
    for name in MODEL_NAMES:
        acc = evaluate(root / name, n=n, seed=EVAL_SEED if seed is None else seed)
        table.add_row(name, *(f"{acc[task]:.2f}" for task in TASKS))
    console.print(table)
