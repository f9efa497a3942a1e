"""`abtest backends ...` commands: list the kinds, probe the configured backends."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(help="Inspect and probe backends (hrm, hf, vllm, tgi).", no_args_is_help=True)


@app.command("kinds")
def kinds_cmd() -> None:
    """List the backend kinds and their settings fields."""
    from rich.console import Console
    from rich.table import Table

    from backends.base import kinds, settings_model

    table = Table(title="backend kinds")
    table.add_column("kind")
    table.add_column("settings")
    for kind in kinds():
        fields = [f for f in settings_model(kind).model_fields if f not in ("name", "kind")]
        table.add_row(kind, ", ".join(fields))
    Console().print(table)


@app.command("check")
def check_cmd(
    config: Annotated[Path, typer.Option("--config", "-c", help="Config file (TOML or YAML) with [[backends]].")],
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds allowed per backend.", min=0.1)] = 120.0,
    only: Annotated[list[str] | None, typer.Option("--backend", "-b", help="Check only these names.")] = None,
) -> None:
    """Probe each configured backend; exit 1 if any is down, 2 if the config is invalid."""
    import asyncio

    from rich.console import Console

    from backends.check import check_all
    from backends.config import ConfigError, backend_specs, load_config
    from benchmarks.cli_backends_render import render_checks

    console = Console()
    try:
        specs = backend_specs(load_config(config), source=config)
    except ConfigError as exc:
        console.print(f"[red]config error:[/red] {exc}")
        raise typer.Exit(2) from None
    if only:
        unknown = sorted(set(only) - {s["name"] for s in specs})
        if unknown:
            console.print(f"[red]--backend:[/red] not in {config}: {', '.join(unknown)}")
            raise typer.Exit(2)
        specs = [s for s in specs if s["name"] in only]
    results = asyncio.run(check_all(specs, timeout))
    render_checks(console, results)
    down = [r.name for r in results if not r.up]
    if down:
        console.print(f"[red]down:[/red] {', '.join(down)}")
        raise typer.Exit(1)
