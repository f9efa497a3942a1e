"""The routing table: one immutable snapshot of backends + split + policy.

Requests take the current table once (`TableHolder.use()`) and keep it until they
finish; a reload builds a new table, swaps it in atomically, waits for the old
table's requests to finish, then closes the backends the new table no longer uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from backends.base import Backend
from router.policies import RoutingPolicy, create_policy
from router.pool import BackendHandle, wait_set
from router.settings import RouterConfig

__all__ = ["BackendFactory", "RoutingTable", "TableHolder", "build_table"]

BackendFactory = Callable[[dict[str, Any]], Backend]
log = logging.getLogger("abtest.router")


class RoutingTable:
    def __init__(self, config: RouterConfig, handles: dict[str, BackendHandle], version: int) -> None:
        self.config = config
        self.settings = config.router
        self.handles = handles
        self.weights = config.weights()
        self.policy: RoutingPolicy = create_policy(self.settings.policy, self.weights, self.settings)
        self.version = version
        self.users = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def shadow(self) -> BackendHandle | None:
        s = self.settings.shadow
        return self.handles[s.backend] if s is not None else None

    async def wait_unused(self, timeout_s: float) -> bool:
        return await wait_set(self._idle, timeout_s)


async def build_table(
    config: RouterConfig, factory: BackendFactory, previous: RoutingTable | None = None
) -> RoutingTable:
    """Start the backends `config` names; reuse `previous`'s handles whose spec is unchanged."""
    handles: dict[str, BackendHandle] = {}
    started: list[BackendHandle] = []
    try:
        for spec in config.backends:
            old = previous.handles.get(str(spec["name"])) if previous else None
            if old is not None and old.spec == spec:
                handles[old.name] = old
                continue
            h = BackendHandle(factory(spec), spec, config.router)
            await h.backend.start()
            started.append(h)
            handles[h.name] = h
    except BaseException:
        for h in started:
            await h.close()
        raise
    return RoutingTable(config, handles, (previous.version + 1) if previous else 1)


class TableHolder:
    """Owns the current table; swaps atomically and retires old backends after draining."""

    def __init__(self, table: RoutingTable, factory: BackendFactory) -> None:
        self.table = table
        self.factory = factory
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def use(self) -> AsyncIterator[RoutingTable]:
        t = self.table
        t.users += 1
        t._idle.clear()
        try:
            yield t
        finally:
            t.users -= 1
            if t.users == 0:
                t._idle.set()

    async def swap(self, config: RouterConfig) -> RoutingTable:
        async with self._lock:
            old = self.table
            new = await build_table(config, self.factory, old)
            self.table = new  # atomic: new requests see the new table from here on
            retired = [h for n, h in old.handles.items() if new.handles.get(n) is not h]
            log.info(
                '{"event": "reload", "version": %d, "backends": %s, "retired": %s}',
                new.version,
                sorted(new.handles),
                sorted(h.name for h in retired),
            )
        if retired:
            task = asyncio.get_running_loop().create_task(self._retire(old, retired))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return new

    async def _retire(self, old: RoutingTable, retired: list[BackendHandle]) -> None:
        drained = await old.wait_unused(old.settings.drain_timeout_s)
        for h in retired:
            drained = await h.wait_idle(1.0 if drained else 0.0) and drained
            await h.close()
        if not drained:
            log.warning('{"event": "retire_timeout", "version": %d}', old.version)

    async def close(self, timeout_s: float) -> None:
        for task in list(self._tasks):
            await task
        t = self.table
        await t.wait_unused(timeout_s)
        for h in t.handles.values():
            await h.close()
