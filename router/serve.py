"""Run the router under uvicorn: JSON logs, graceful SIGTERM (stop accepting, drain
in-flight within `drain_timeout_s`, exit), optional multiple workers."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from router.app import create_app
from router.config import load_router_config

__all__ = ["JsonFormatter", "app_from_env", "run_router", "setup_logging"]

_ENV_CONFIG = "ABTEST_ROUTER_CONFIG_FILE"
_ENV_CLI = "ABTEST_ROUTER_CLI_JSON"


class JsonFormatter(logging.Formatter):
    """One JSON object per line; messages that already are JSON objects are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": round(record.created, 6), "level": record.levelname.lower(),
                               "logger": record.name}
        msg = record.getMessage()
        try:
            parsed = json.loads(msg) if msg.startswith("{") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            out.update(parsed)
        else:
            out["message"] = msg
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("abtest", "uvicorn.error"):
        lg = logging.getLogger(name)
        lg.handlers[:] = [handler]
        lg.setLevel(level.upper())
        lg.propagate = False


def app_from_env() -> FastAPI:
    """uvicorn factory for `--workers N`: each worker process builds its own app."""
    cli = json.loads(os.environ.get(_ENV_CLI, "{}"))
    setup_logging(str(cli.pop("_log_level", "info")))
    return create_app(load_router_config(Path(os.environ[_ENV_CONFIG]), cli=cli))


def run_router(config_path: Path, *, host: str = "127.0.0.1", port: int = 8080, workers: int = 1,
               log_level: str = "info", cli: dict[str, Any] | None = None) -> None:
    import uvicorn

    cli = {k: v for k, v in (cli or {}).items() if v is not None}
    config = load_router_config(config_path, cli=cli)  # fail fast, in the parent, on a bad file
    common: dict[str, Any] = {"host": host, "port": port, "log_level": log_level, "access_log": False,
                              "timeout_graceful_shutdown": max(1, int(config.router.drain_timeout_s)),
                              "log_config": None}
    setup_logging(log_level)
    if workers > 1:
        os.environ[_ENV_CONFIG] = str(config_path)
        os.environ[_ENV_CLI] = json.dumps({**cli, "_log_level": log_level}, default=str)
        uvicorn.run("router.serve:app_from_env", factory=True, workers=workers, **common)
        return
    uvicorn.run(create_app(config), **common)
