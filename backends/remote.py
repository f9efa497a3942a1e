"""What the HTTP kinds share: transport lifecycle, fan-out with a concurrency bound,
an optional local tokenizer and prefix-LM detection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from backends.errors import BackendUnavailable
from backends.http import HttpTransport
from backends.settings import HttpBackendSettings
from backends.types import BackendInfo

__all__ = ["PREFIX_LM_NOTE", "RemoteBackendBase", "detect_prefix_lm", "timed"]

T = TypeVar("T")
R = TypeVar("R")

PREFIX_LM_NOTE = (
    "loglikelihood: prefix-LM model scored echo-style (the server sees context and continuation "
    "as one prompt), which is not conditional scoring of the continuation given the context"
)


def detect_prefix_lm(settings: HttpBackendSettings) -> bool:
    """`prefix_lm` from settings, else from a local config.json (tokenizer or model dir)."""
    if settings.prefix_lm is not None:
        return settings.prefix_lm
    for candidate in (settings.tokenizer, settings.model):
        if candidate and (Path(candidate) / "config.json").is_file():
            try:
                return bool(json.loads((Path(candidate) / "config.json").read_text()).get("prefix_lm", False))
            except (OSError, ValueError):
                return False
    return False


def timed() -> Callable[[], float]:
    """A stopwatch: `elapsed = timed(); ...; elapsed()` in seconds."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    return lambda: loop.time() - t0


class RemoteBackendBase:
    settings: HttpBackendSettings
    health_path = "/health"  # 200 means healthy

    def __init__(self, settings: HttpBackendSettings) -> None:
        self.settings = settings
        self._http = HttpTransport(settings)
        self._sem: asyncio.Semaphore | None = None
        self._tokenizer: Any = None
        self._prefix_lm = detect_prefix_lm(settings)
        self._info: BackendInfo | None = None  # filled by the kind's info() on first use

    async def health(self) -> bool:
        try:
            return await self._http.get_status(self.health_path) == 200
        except BackendUnavailable:
            return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, url={self.settings.url!r})"

    @property
    def name(self) -> str:
        return self.settings.name

    async def start(self) -> None:
        self._sem = asyncio.Semaphore(self.settings.max_concurrency)  # bound to the running loop
        await self._http.open()
        if self.settings.tokenizer and self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = await asyncio.to_thread(AutoTokenizer.from_pretrained, self.settings.tokenizer)

    async def close(self) -> None:
        await self._http.close()

    async def _fan_out(self, items: Sequence[T], fn: Callable[[T], Awaitable[R]]) -> list[R]:
        """Run fn on every item, at most `max_concurrency` at once, results in order."""

        sem = self._sem or asyncio.Semaphore(self.settings.max_concurrency)

        async def bounded(item: T) -> R:
            async with sem:
                return await fn(item)

        return list(await asyncio.gather(*(bounded(i) for i in items)))
