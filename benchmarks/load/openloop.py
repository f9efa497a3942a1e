"""Shared open-loop dispatcher: sends on an absolute schedule, never relative to the last send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from benchmarks.load.base import SendFn
from benchmarks.records import RequestItem

__all__ = ["dispatch", "gamma_offsets"]


def gamma_offsets(n: int, rate: float, shape: float, seed: int) -> list[float]:
    """Cumulative arrival times with gamma inter-arrivals (shape 1 = Poisson), mean 1/rate."""
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=n)
    gaps[0] = 0.0  # the first request goes at the segment start
    return [float(x) for x in np.cumsum(gaps)]


async def dispatch(items: Sequence[RequestItem], offsets: list[float], send: SendFn) -> None:
    """Start each request at origin + offset; sleep coarsely, then yield-spin the last ~1.5 ms."""
    origin = time.perf_counter()
    tasks: list[asyncio.Task[None]] = []
    for item, off in zip(items, offsets, strict=True):
        due = origin + off
        delay = due - time.perf_counter()
        if delay > 0.002:
            await asyncio.sleep(delay - 0.0015)
        while time.perf_counter() < due:
            await asyncio.sleep(0)
        tasks.append(asyncio.create_task(send(item, due)))
    if tasks:
        await asyncio.gather(*tasks)
