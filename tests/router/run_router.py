"""Subprocess entry for tests: a router over fake backends. `python -m tests.router.run_router CFG PORT`."""

from __future__ import annotations

import sys
from pathlib import Path

import tests.router.fakes  # noqa: F401  (registers the "router_fake" kind)
from router.serve import run_router

if __name__ == "__main__":
    run_router(Path(sys.argv[1]), port=int(sys.argv[2]), log_level="warning")
