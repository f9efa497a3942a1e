"""Closed loop: N in-flight requests; each finished request frees a slot for the next."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from benchmarks.load.base import SendFn
from benchmarks.records import RequestItem

__all__ = ["ClosedLoop"]


class ClosedLoop:
    rate: float | None = None

    def __init__(self, concurrency: int) -> None:
        self.concurrency: int | None = concurrency
        self.label = f"c={concurrency}"

    def offsets(self, n: int) -> list[float] | None:
        return None

    async def run(self, items: Sequence[RequestItem], offsets: list[float] | None, send: SendFn) -> None:
        queue = list(reversed(items))

        async def worker() -> None:
            while queue:
                item = queue.pop()
                await send(item, time.perf_counter())  # closed loop: scheduled == ready to send

        slots = max(1, min(self.concurrency or 1, len(items)))
        await asyncio.gather(*(worker() for _ in range(slots)))
