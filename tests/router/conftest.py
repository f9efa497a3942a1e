"""Fixtures: a live router (uvicorn on loopback) over fake backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from router import create_app
from tests.router.fakes import FakeFactory, make_config, serve_app


@dataclass
class LiveRouter:
    url: str
    factory: FakeFactory
    app: Any
    client: httpx.Client

    def backend(self, name: str) -> Any:
        return self.factory.built[name]


@contextmanager
def live_router(backends: list[dict[str, Any]] | None = None, **router: Any) -> Iterator[LiveRouter]:
    factory = FakeFactory()
    app = create_app(make_config(backends, **router), backend_factory=factory)
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield LiveRouter(url, factory, app, client)


@pytest.fixture
def router_factory() -> Callable[..., Any]:
    return live_router


@pytest.fixture
def live() -> Iterator[LiveRouter]:
    with live_router(split={"a": 80, "b": 20}, seed=7) as lr:
        yield lr
