"""A configured backend as the router holds it: breaker, health, in-flight slots, drain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from backends.base import Backend
from router.breaker import CircuitBreaker
from router.settings import RouterSettings

__all__ = ["BackendHandle", "wait_set"]


async def wait_set(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait until `event` is set; False if `timeout_s` passes first."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
        return True
    except TimeoutError:
        return False


class BackendHandle:
    def __init__(self, backend: Backend, spec: dict[str, Any], settings: RouterSettings) -> None:
        self.name = str(spec["name"])
        self.backend = backend
        self.spec = spec
        self.breaker = CircuitBreaker(settings.breaker_failures, settings.breaker_cooldown_s)
        self.healthy = True
        self.max_inflight = settings.max_inflight_per_backend
        self._slots = asyncio.Semaphore(self.max_inflight)
        self.inflight = 0
        self.waiting = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.closed = False

    def available(self) -> bool:
        return self.healthy and self.breaker.allow() and not self.closed

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[Backend]:
        """Hold one of the backend's in-flight slots (waits when all are busy)."""
        self._idle.clear()
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.inflight += 1
        try:
            yield self.backend
        finally:
            self.inflight -= 1
            self._slots.release()
            if self.inflight == 0 and self.waiting == 0:
                self._idle.set()

    async def wait_idle(self, timeout_s: float) -> bool:
        return await wait_set(self._idle, timeout_s)

    async def close(self) -> None:
        self.closed = True
        await self.backend.close()
