"""Active health checks, readiness, and the gauges refreshed at scrape time."""

from __future__ import annotations

import asyncio
import logging

from router.metrics import RouterMetrics
from router.state import RouterState
from router.table import RoutingTable

__all__ = ["check_once", "health_loop", "readiness", "refresh_gauges"]

log = logging.getLogger("abtest.router")


async def check_once(table: RoutingTable, metrics: RouterMetrics, timeout_s: float) -> None:
    async def one(name: str) -> None:
        h = table.handles[name]
        try:
            async with asyncio.timeout(timeout_s):
                ok = bool(await h.backend.health())
        except Exception:  # noqa: BLE001 (any failure means unhealthy)
            ok = False
        if ok != h.healthy:
            log.warning('{"event": "health", "backend": "%s", "healthy": %s}', name, str(ok).lower())
        h.healthy = ok
        metrics.healthy.labels(name).set(1 if ok else 0)

    await asyncio.gather(*(one(n) for n in list(table.handles)))


async def health_loop(state: RouterState) -> None:
    while True:
        table = state.table_holder.table
        interval = table.settings.health_interval_s
        await asyncio.sleep(interval)
        try:
            await check_once(state.table_holder.table, state.metrics, min(interval, 5.0))
        except Exception:  # a crash here would silently stop health checking
            log.exception("health check round failed")


def readiness(state: RouterState) -> tuple[bool, dict[str, object]]:
    """Ready when started, not draining, and the split (arms + fallback) has a usable backend."""
    if state.holder is None or not state.ready:
        return False, {"reason": "starting"}
    if state.draining:
        return False, {"reason": "draining"}
    table = state.holder.table
    names = list(table.weights) + [n for n in table.settings.fallback if n not in table.weights]
    usable = [n for n in names if table.handles[n].available()]
    detail: dict[str, object] = {
        "backends": {n: {"healthy": h.healthy, "circuit": h.breaker.state} for n, h in table.handles.items()},
        "version": table.version,
    }
    if not usable:
        detail["reason"] = f"no healthy backend among {names}"
        return False, detail
    return True, detail


def refresh_gauges(state: RouterState) -> None:
    if state.holder is None:
        return
    table = state.holder.table
    m = state.metrics
    m.queue_depth.set(sum(h.waiting for h in table.handles.values()))
    for n, h in table.handles.items():
        m.inflight.labels(n).set(h.inflight)
        m.healthy.labels(n).set(1 if h.healthy else 0)
        m.breaker_open.labels(n).set(0 if h.breaker.allow() else 1)
