"""Fixtures for the adapter tests: throwaway tiny models (seconds) and loopback doubles."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.doubles import build_tiny_models, create_tgi_app, create_vllm_app, serve


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Random-init hrm-tiny / llama-tiny: fast, for protocol tests (not for quality)."""
    return build_tiny_models(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def tiny_hrm(tiny_models: dict[str, Path]) -> Path:
    return tiny_models["hrm-tiny"]


@pytest.fixture(scope="module")
def tgi_app(tiny_hrm: Path) -> Any:
    """The TGI double's app; `tgi_app.state.requests` logs (path, body) of every request."""
    return create_tgi_app(tiny_hrm)


@pytest.fixture(scope="module")
def tgi_url(tgi_app: Any) -> Iterator[str]:
    with serve(tgi_app) as url:
        yield url


@pytest.fixture(scope="module")
def vllm_app(tiny_hrm: Path) -> Any:
    """The vLLM double's app serving `hrm-tiny`; `vllm_app.state.requests` logs bodies."""
    return create_vllm_app(tiny_hrm, served_name="hrm-tiny")


@pytest.fixture(scope="module")
def vllm_url(vllm_app: Any) -> Iterator[str]:
    with serve(vllm_app) as url:
        yield url
