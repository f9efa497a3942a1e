"""Shared open-loop dispatcher: sends on an absolute schedule, never relative to the last send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from benchmarks.load.base import SendFn
from benchmarks.records import RequestItem

__all__ = ["SPIN_S", "dispatch", "gamma_offsets"]

SPIN_S = 0.0  # spinning burns a core; on small shared machines it raises lag p99 (measured)


def gamma_offsets(n: int, rate: float, shape: float, seed: int) -> list[float]:
    """Cumulative arrival times with gamma inter-arrivals (shape 1 = Poisson), mean 1/rate."""
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=n)
    gaps[0] = 0.0  # the first request goes at the segment start
    return [float(x) for x in np.cumsum(gaps)]


async def dispatch(items: Sequence[RequestItem], offsets: list[float], send: SendFn,
                   spin_s: float = SPIN_S) -> None:
    """Start each request at origin + offset: sleep, then yield-spin the last `spin_s`.

    The event loop's sleeps wake up to ~1 ms late (epoll's millisecond timeout), so a
    short spin (yielding to other tasks) sharpens send times at a small CPU cost.
    """
    origin = time.perf_counter()
    tasks: list[asyncio.Task[None]] = []
    for item, off in zip(items, offsets, strict=True):
        due = origin + off
        delay = due - time.perf_counter()
        if delay > spin_s:
            await asyncio.sleep(delay - spin_s)
        while time.perf_counter() < due:
            await asyncio.sleep(0)
        tasks.append(asyncio.create_task(send(item, due)))
    if tasks:
        await asyncio.gather(*tasks)
