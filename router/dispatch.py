"""Pick a backend and call it: pinning, split, retries before first byte, fallback on
"unavailable" errors only (never on 4xx), circuit breaker, per-backend slots."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TypeVar

from backends.base import Backend
from backends.errors import BackendError, BackendRejected, BackendTimeout, BackendUnavailable
from backends.types import SamplingParams, StreamEvent
from router.context import RequestContext
from router.errors import ClientError, NoBackendAvailable
from router.metrics import RouterMetrics
from router.pool import BackendHandle
from router.table import RoutingTable

__all__ = ["Decision", "OpenStream", "call_with_fallback", "decide", "open_stream"]

T = TypeVar("T")
log = logging.getLogger("abtest.router")


@dataclass(frozen=True)
class Decision:
    primary: str
    arm: str
    candidates: tuple[str, ...]


def decide(table: RoutingTable, *, pinned: str | None, pin_field: str, key: str | None) -> Decision:
    """Pinned requests go only to the named backend; others follow the split + fallback list."""
    if pinned is not None:
        if pinned not in table.handles:
            raise ClientError(f"{pin_field}: unknown backend {pinned!r}; configured: {sorted(table.handles)}",
                              field=pin_field)
        return Decision(pinned, "pinned", (pinned,))
    arm = table.policy.choose(key)
    rest = tuple(n for n in table.settings.fallback if n != arm and n in table.handles)
    return Decision(arm, arm, (arm, *rest))


def _unexpected(name: str, exc: Exception) -> BackendUnavailable:
    log.exception("backend %s raised an unexpected error", name)
    return BackendUnavailable(name, f"unexpected backend error: {type(exc).__name__}: {exc}")


def _skipped(handle: BackendHandle) -> BackendUnavailable:
    exc = BackendUnavailable(handle.name, f"skipped: healthy={handle.healthy}, circuit {handle.breaker.state}")
    exc.status = 503
    return exc


def _attempts(table: RoutingTable, decision: Decision) -> list[tuple[BackendHandle, int]]:
    return [(table.handles[n], table.settings.retries) for n in decision.candidates]


def _served(ctx: RequestContext, decision: Decision, name: str, metrics: RouterMetrics) -> None:
    ctx.backend = name
    ctx.arm = decision.arm
    if name != decision.primary:
        ctx.fallback_from = decision.primary
        metrics.fallbacks.labels(decision.primary, name).inc()


async def _with_fallback(
    table: RoutingTable, decision: Decision, ctx: RequestContext, metrics: RouterMetrics,
    attempt: Callable[[BackendHandle, float], Awaitable[T]],
) -> T:
    """Try each candidate (with its retries) until `attempt(handle, timeout)` succeeds. A 4xx
    (`BackendRejected`) ends the request at once; anything else counts as "unavailable"."""
    ctx.arm = decision.arm
    last: BackendError | None = None
    timeout = table.settings.request_timeout_s
    for handle, retries in _attempts(table, decision):
        for _ in range(1 + retries):
            if not handle.available():
                last = last or _skipped(handle)
                break
            t0 = time.perf_counter()
            try:
                result = await attempt(handle, timeout)
            except BackendRejected:
                ctx.add_backend_time(time.perf_counter() - t0)
                ctx.backend = handle.name
                handle.breaker.record_success()  # it answered: alive
                raise
            except TimeoutError:
                last = BackendTimeout(handle.name, f"no answer within {timeout}s")
            except BackendUnavailable as exc:
                last = exc
            except Exception as exc:  # noqa: BLE001 (an adapter bug: backend trouble, not ours)
                last = _unexpected(handle.name, exc)
            else:
                ctx.add_backend_time(time.perf_counter() - t0)
                handle.breaker.record_success()
                _served(ctx, decision, handle.name, metrics)
                return result
            ctx.add_backend_time(time.perf_counter() - t0)
            handle.breaker.record_failure()
    ctx.backend = ctx.backend or decision.primary
    if last is None:
        raise NoBackendAvailable("no backend available")
    raise last


async def call_with_fallback(
    table: RoutingTable, decision: Decision, ctx: RequestContext, metrics: RouterMetrics,
    op: Callable[[Backend], Awaitable[T]],
) -> T:
    async def attempt(handle: BackendHandle, timeout: float) -> T:
        async with handle.lease() as backend, asyncio.timeout(timeout):
            return await op(backend)

    return await _with_fallback(table, decision, ctx, metrics, attempt)


class OpenStream:
    """A backend stream whose first event has arrived. Iterate it, then `aclose()`."""

    def __init__(self, first: StreamEvent, rest: AsyncIterator[StreamEvent], stack: AsyncExitStack,
                 handle: BackendHandle) -> None:
        self.first = first
        self._rest = rest
        self._stack = stack
        self.handle = handle

    async def events(self) -> AsyncIterator[StreamEvent]:
        yield self.first
        if self.first.final is not None:
            return
        async for ev in self._rest:
            yield ev
            if ev.final is not None:
                return
        raise BackendUnavailable(self.handle.name, "stream ended without a final event")

    async def aclose(self) -> None:
        aclose = getattr(self._rest, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            await self._stack.aclose()


async def open_stream(
    table: RoutingTable, decision: Decision, ctx: RequestContext, metrics: RouterMetrics,
    prompt: str, params: SamplingParams,
) -> OpenStream:
    """Retries and fallback happen only here, before the first event reaches the client."""

    async def attempt(handle: BackendHandle, timeout: float) -> OpenStream:
        stack = AsyncExitStack()  # holds the lease until the stream is closed
        try:
            backend = await stack.enter_async_context(handle.lease())
            it = backend.stream(prompt, params)
            async with asyncio.timeout(timeout):
                first = await anext(it)
        except StopAsyncIteration:
            await stack.aclose()
            raise BackendUnavailable(handle.name, "stream ended before the first event") from None
        except BaseException:
            await stack.aclose()
            raise
        return OpenStream(first, it, stack, handle)

    return await _with_fallback(table, decision, ctx, metrics, attempt)
