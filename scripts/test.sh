#!/usr/bin/env bash
# Set up (idempotent), lint, type-check and run the test suite. This is README command 2.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
ruff check .
mypy
python -m pytest -q "$@"
