"""A controllable in-test backend kind ("router_fake") and a loopback server helper for router tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from backends.base import BackendSettings, create_backend, register
from backends.errors import BackendRejected, BackendTimeout, BackendUnavailable
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)
from router.config import config_from_dict
from router.settings import RouterConfig

__all__ = ["FakeBackend", "FakeFactory", "FakeSettings", "make_config", "serve_app"]

Failure = Literal["unavailable", "timeout", "reject", "crash", "overloaded"]


class FakeSettings(BackendSettings):
    kind: Literal["router_fake"] = "router_fake"
    latency_s: float = 0.0
    fail: Failure | None = None
    fail_times: int = -1  # -1: always (when fail is set)
    reply: str = "{name}:{prompt}"
    chunks: int = 3


@register("router_fake", FakeSettings)
class FakeBackend:
    """Echoes `{name}:{prompt}`; fails or sleeps as configured (mutable at runtime)."""

    settings: FakeSettings

    def __init__(self, settings: FakeSettings) -> None:
        self.settings = settings
        self.latency_s = settings.latency_s
        self.fail: Failure | None = settings.fail
        self.fail_times = settings.fail_times
        self.healthy = True
        self.calls = 0
        self.prompts: list[str] = []
        self.params: list[SamplingParams] = []
        self.started = False
        self.closed = False
        self.fail_mid_stream = False
        self.junk = False  # return a malformed result (simulates a bug past the adapter boundary)

    @property
    def name(self) -> str:
        return self.settings.name

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True

    async def health(self) -> bool:
        return self.healthy

    async def info(self) -> BackendInfo:
        caps = Capabilities(loglikelihood=True, streaming=True, batch_prompts=True, max_context=512,
                            tokenizer_id="fake")
        return BackendInfo(name=self.name, kind="router_fake", model="fake", capabilities=caps)

    async def _enter(self, prompts: list[str], params: SamplingParams | None) -> None:
        self.calls += 1
        self.prompts.extend(prompts)
        if params is not None:
            self.params.append(params)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self.fail is not None and self.fail_times != 0:
            self.fail_times -= 1
            raise _failure(self.fail, self.name)

    def _text(self, prompt: str) -> str:
        return self.settings.reply.format(name=self.name, prompt=prompt)

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        await self._enter(prompts, params)
        if self.junk:
            return None  # type: ignore[return-value]
        return [Completion(text=self._text(p), prompt_tokens=len(p.split()), completion_tokens=3,
                           finish_reason="length") for p in prompts]

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        await self._enter([prompt], params)
        text = self._text(prompt)
        n = max(1, self.settings.chunks)
        step = max(1, len(text) // n)
        pieces = [text[i:i + step] for i in range(0, len(text), step)]
        for i, piece in enumerate(pieces[:-1]):
            yield StreamEvent(text=piece)
            if self.fail_mid_stream and i == 0:
                raise BackendUnavailable(self.name, "connection reset mid-stream")
            await asyncio.sleep(0)
        yield StreamEvent(text=pieces[-1], final=Completion(text=text, prompt_tokens=len(prompt.split()),
                                                            completion_tokens=len(pieces), finish_reason="eos"))

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        await self._enter(prompts, None)
        return [LoglikelihoodResult(ll=-float(len(c)), is_greedy=True) for c in continuations]


def _failure(kind: Failure, name: str) -> Exception:
    makers: dict[str, Callable[[], Exception]] = {
        "unavailable": lambda: BackendUnavailable(name, "connection refused"),
        "timeout": lambda: BackendTimeout(name, "read timeout"),
        "reject": lambda: BackendRejected(name, "prompt too long", status=400, field="prompts[0]"),
        "crash": lambda: RuntimeError("adapter bug"),
        "overloaded": lambda: _overloaded(name),
    }
    return makers[kind]()


def _overloaded(name: str) -> Exception:
    from backends.errors import BackendOverloaded

    return BackendOverloaded(name, "queue full")


class FakeFactory:
    """Backend factory that remembers every backend it built (latest per name)."""

    def __init__(self) -> None:
        self.built: dict[str, Any] = {}
        self.history: list[Any] = []

    def __call__(self, spec: dict[str, Any]) -> Any:
        b = create_backend(spec)
        self.built[spec["name"]] = b
        self.history.append(b)
        return b


def make_config(backends: list[dict[str, Any]] | None = None, **router: Any) -> RouterConfig:
    specs = backends or [{"name": "a", "kind": "router_fake"}, {"name": "b", "kind": "router_fake"}]
    router.setdefault("health_interval_s", 30.0)
    return config_from_dict({"backends": specs, "router": router})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Run `app` (lifespan on) under uvicorn on loopback in a thread; yields the base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("router test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
