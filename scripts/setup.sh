#!/usr/bin/env bash
# Create .venv and install abtest. Never pulls a CUDA torch onto a CPU machine:
# - if the interpreter already has torch (e.g. a GPU host's CUDA build), keep it;
# - else on a machine with nvidia-smi, install the default (CUDA) torch wheel;
# - else install the pinned CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${ABTEST_TORCH_VERSION:-2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv
fi
. .venv/bin/activate
if python -c "import torch" 2>/dev/null; then
  echo "setup: keeping installed torch $(python -c 'import torch;print(torch.__version__)')"
elif command -v nvidia-smi >/dev/null 2>&1; then
  pip install -q "torch==${TORCH_VERSION}"
else
  pip install -q "torch==${TORCH_VERSION}" --index-url "${ABTEST_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" \
    || pip install -q "torch==${TORCH_VERSION}"
fi
pip install -q -e ".[test]"
