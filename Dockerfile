# syntax=docker/dockerfile:1
# abtest images. Targets:
#   hrm-serve  the HRM server        (abtest serve hrm, port 8000, /readyz)
#   router     router + CLI + bench  (abtest serve router, port 8080, /readyz)
#
#   docker build --target hrm-serve -t abtest/hrm-serve:cpu .                 # CPU torch (default)
#   docker build --target router --build-arg TORCH_INDEX_URL= -t abtest/router:gpu .   # PyPI torch, bundles CUDA
#   docker build --target hrm-serve \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu24.04 \
#     --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 -t abtest/hrm-serve:cuda .
ARG BASE_IMAGE=python:3.11-slim

# ---- base: a Python >= 3.11 on the chosen base image --------------------------------
FROM ${BASE_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
# CUDA (Ubuntu) bases ship no Python: install the distro's (3.12 on Ubuntu 24.04).
RUN if ! command -v python3 >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -c 'import sys; assert sys.version_info >= (3, 11), sys.version'

# ---- builder: venv with torch (installed explicitly) and abtest ----------------------
FROM base AS builder
ARG TORCH_VERSION=2.13.0
# CPU wheels by default; empty = PyPI's default (CUDA) build; or a CUDA index, e.g. .../whl/cu128.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN python3 -m venv /opt/venv
RUN if [ -n "${TORCH_INDEX_URL}" ]; then \
        pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"; \
    else \
        pip install "torch==${TORCH_VERSION}"; \
    fi
WORKDIR /src
COPY pyproject.toml README.md ./
COPY hrm/ hrm/
COPY backends/ backends/
COPY router/ router/
COPY benchmarks/ benchmarks/
RUN pip install . && python -c "import torch, hrm, backends, router, benchmarks"

# ---- runtime: slim, non-root -----------------------------------------------------------
FROM base AS runtime
ARG ABTEST_UID=1000
ARG ABTEST_GID=1000
RUN groupadd --non-unique --gid "${ABTEST_GID}" abtest \
    && useradd --non-unique --uid "${ABTEST_UID}" --gid "${ABTEST_GID}" --create-home \
        --shell /usr/sbin/nologin abtest \
    && mkdir -p /models /app/results \
    && chown abtest:abtest /app /app/results
COPY --from=builder /opt/venv /opt/venv
WORKDIR /app
COPY --chown=abtest:abtest compose/ compose/
ENV HOME=/home/abtest \
    HF_HOME=/home/abtest/.cache/huggingface \
    ABTEST_MODELS_DIR=/models \
    ABTEST_RESULTS_DIR=/app/results
USER abtest

# ---- hrm-serve: the HRM server ----------------------------------------------------------
FROM runtime AS hrm-serve
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=5 \
    CMD ["python", "-c", "import sys,urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status != 200)"]
CMD ["abtest", "serve", "hrm", "--model-path", "/models/hrm-tiny", "--host", "0.0.0.0", "--port", "8000"]

# ---- router: the A/B router (also runs `abtest run` / `abtest models`) -------------------
FROM runtime AS router
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=5 \
    CMD ["python", "-c", "import sys,urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=4).status != 200)"]
CMD ["abtest", "serve", "router", "--config", "/app/compose/abtest.toml", "--host", "0.0.0.0", "--port", "8080"]
