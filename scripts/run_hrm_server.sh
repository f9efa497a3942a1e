#!/usr/bin/env bash
# Run the standalone HRM server (seed contract) on Linux/macOS.
#   scripts/run_hrm_server.sh [--model-path models/hrm-tiny] [--port 8000] [--device cpu] [...]
# Env: AIOS_MODEL_PATH, AIOS_DEVICE, AIOS_MAX_BATCH_SIZE, AIOS_MAX_NEW_TOKENS (flags win).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
if [ -z "${AIOS_MODEL_PATH:-}" ] && [[ " $* " != *" --model-path "* ]]; then
  export AIOS_MODEL_PATH=models/hrm-tiny
fi
exec "$PY" -m hrm.server --host "${HOST:-0.0.0.0}" --port "${PORT:-8000}" "$@"
