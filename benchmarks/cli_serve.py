"""`abtest serve ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="serve commands", no_args_is_help=True)
