"""`abtest serve router|hrm`: parse options, call one function (heavy imports inside)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="Run the A/B router or the standalone HRM server.", no_args_is_help=True)


@app.command("router")
def serve_router(
    config: Annotated[Path, typer.Option("--config", "-c", help="TOML/YAML: \\[\\[backends]] tables + a \\[router] section",
                                         exists=True, dir_okay=False)],
    host: Annotated[str, typer.Option(help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="bind port")] = 8080,
    workers: Annotated[int, typer.Option(min=1, help="worker processes (each its own routing state)")] = 1,
    enable_cors: Annotated[Optional[bool], typer.Option("--enable-cors/--no-cors",  # noqa: UP045
                                                        help="CORS (off by default)")] = None,
    cors_origins: Annotated[Optional[list[str]], typer.Option(help="allowed origins (repeatable)")] = None,  # noqa: UP045
    log_level: Annotated[str, typer.Option(help="debug|info|warning|error")] = "info",
) -> None:
    """The A/B routing proxy: v1 contract + OpenAI /v1/completions behind a weighted split.
    Precedence: these flags > env ABTEST_* > the router section of the file."""
    from router.serve import run_router

    try:
        run_router(config, host=host, port=port, workers=workers, log_level=log_level,
                   cli={"enable_cors": enable_cors, "cors_origins": cors_origins})
    except ValueError as exc:  # bad config file (ConfigError, pydantic ValidationError)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command("hrm")
def serve_hrm(
    model_path: Annotated[Optional[str], typer.Option(help="HRM checkpoint dir (env AIOS_MODEL_PATH)")] = None,  # noqa: UP045
    tokenizer_path: Annotated[Optional[str], typer.Option(help="tokenizer dir (env AIOS_TOKENIZER_PATH)")] = None,  # noqa: UP045
    device: Annotated[Optional[str], typer.Option(help="auto|cpu|cuda|mps (env AIOS_DEVICE)")] = None,  # noqa: UP045
    host: Annotated[Optional[str], typer.Option(help="bind address")] = None,  # noqa: UP045
    port: Annotated[Optional[int], typer.Option(help="bind port (default 8000)")] = None,  # noqa: UP045
    max_batch_size: Annotated[Optional[int], typer.Option(help="env AIOS_MAX_BATCH_SIZE")] = None,  # noqa: UP045
    max_new_tokens: Annotated[Optional[int], typer.Option(help="max_tokens cap (env AIOS_MAX_NEW_TOKENS)")] = None,  # noqa: UP045
    context_window: Annotated[Optional[int], typer.Option(help="context window in tokens")] = None,  # noqa: UP045
    threads: Annotated[Optional[int], typer.Option(help="torch intra-op threads (default 1 on CPU)", min=1)] = None,  # noqa: UP045
    max_body_bytes: Annotated[Optional[int], typer.Option(help="larger bodies get 413", min=1024)] = None,  # noqa: UP045
    api_key_file: Annotated[Optional[str], typer.Option(help="bearer keys, one per line (env AIOS_API_KEY)")] = None,  # noqa: UP045
    enable_cors: Annotated[Optional[bool], typer.Option("--enable-cors/--no-cors")] = None,  # noqa: UP045
    cors_origins: Annotated[Optional[list[str]], typer.Option(help="allowed origins (repeatable)")] = None,  # noqa: UP045
    log_level: Annotated[Optional[str], typer.Option(help="debug|info|warning|error")] = None,  # noqa: UP045
    dry_run: Annotated[bool, typer.Option("--dry-run", help="load the model, print a summary, exit")] = False,
    print_config: Annotated[bool, typer.Option("--print-config", help="print the effective config, exit")] = False,
) -> None:
    """The seed's standalone HRM server (same as `python -m hrm.server`)."""
    from hrm.server import ServerConfig, run

    cfg = ServerConfig.from_env(model_path=model_path, tokenizer_path=tokenizer_path, device=device, host=host, port=port,
                                max_batch_size=max_batch_size, max_new_tokens=max_new_tokens,
                                context_window=context_window, threads=threads, max_body_bytes=max_body_bytes,
                                api_key_file=api_key_file, enable_cors=enable_cors,
                                cors_origins=cors_origins, log_level=log_level)
    raise typer.Exit(run(cfg, dry_run=dry_run, print_config=print_config))
