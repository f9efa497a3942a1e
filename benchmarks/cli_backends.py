"""`abtest backends ...` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="backends commands", no_args_is_help=True)
