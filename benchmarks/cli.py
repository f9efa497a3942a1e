"""The `abtest` command: a thin Typer shell. Each command group lives in its own
module, which parses options and calls one function (heavy imports stay inside)."""

from __future__ import annotations

import typer

from benchmarks import cli_backends, cli_models, cli_plan, cli_run, cli_serve

app = typer.Typer(
    name="abtest",
    help="A/B benchmark and routing proxy for LLM serving: HRM vs vLLM vs TGI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cli_run.register(app)  # run, compare, report, prompts
app.add_typer(cli_models.app, name="models")
app.add_typer(cli_backends.app, name="backends")
app.add_typer(cli_serve.app, name="serve")
cli_plan.register(app)  # plan

if __name__ == "__main__":
    app()
