#!/usr/bin/env bash
# Create .venv and install abtest (idempotent). Never pulls a CUDA torch onto a CPU machine:
# - torch already importable (e.g. a GPU host's CUDA build, visible via system site-packages): keep it;
# - a GPU host (nvidia-smi present): the default torch wheel, which is the CUDA build;
# - otherwise: the pinned CPU build from PyTorch's CPU index (or a local wheel mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${ABTEST_TORCH_VERSION:-2.13.0}
CPU_INDEX=${ABTEST_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

[ -x .venv/bin/python ] || "$PY" -m venv --system-site-packages .venv
. .venv/bin/activate

if python -c "import torch" 2>/dev/null; then
  echo "setup: keeping installed torch $(python -c 'import torch; print(torch.__version__)')"
elif command -v nvidia-smi >/dev/null 2>&1 || [ "$(uname -s)" = "Darwin" ]; then
  pip install -q "torch==${TORCH_VERSION}"
else
  # --no-deps so only torch itself comes from the CPU index; its deps come from the usual index.
  pip install -q --no-deps --retries 1 --timeout 15 --index-url "$CPU_INDEX" "torch==${TORCH_VERSION}"
  pip install -q "torch==${TORCH_VERSION}"
fi
pip install -q -e ".[test]"
