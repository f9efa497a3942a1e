"""`abtest models ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="models commands", no_args_is_help=True)
