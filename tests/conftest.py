"""Shared fixtures. Sample models are built once per machine (cached in the models dir).

The models dir is ``$ABTEST_MODELS_DIR`` when set, else ``<repo>/models``. A missing or
incomplete model is built on first use (about 2-3 minutes on 2 CPU cores; a file lock
makes parallel test processes wait for one build instead of racing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _models_dir() -> Path:
    env = os.environ.get("ABTEST_MODELS_DIR")
    return Path(env) if env else REPO_ROOT / "models"


@pytest.fixture(scope="session")
def sample_models() -> dict[str, Path]:
    """``{"hrm-tiny": path, "llama-tiny": path}`` of the trained sample models."""
    from benchmarks.samples.prepare import ensure_models

    return ensure_models(_models_dir(), progress=False)


@pytest.fixture(scope="session")
def hrm_tiny(sample_models: dict[str, Path]) -> Path:
    return sample_models["hrm-tiny"]


@pytest.fixture(scope="session")
def llama_tiny(sample_models: dict[str, Path]) -> Path:
    return sample_models["llama-tiny"]


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no CUDA device is present."""
    if not any("gpu" in item.keywords for item in items) or _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
