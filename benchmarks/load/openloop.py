"""Shared open-loop dispatcher: sends on an absolute schedule, never relative to the last send.

The event loop's own timers are only millisecond-accurate (epoll), which alone costs
~0.5 ms median and >2 ms p99 of schedule lag. So a timer thread sleeps with
`time.sleep` (nanosecond clock) until each due time and hands every due request to
the loop with `call_soon_threadsafe`; the loop starts the sends. No busy-spinning.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from benchmarks.load.base import SendFn
from benchmarks.records import RequestItem

__all__ = ["dispatch", "gamma_offsets"]

_MAX_SLEEP_S = 0.05  # the timer thread re-checks for cancellation at least this often
_SWITCH_INTERVAL_S = 0.0005  # GIL hand-off bound while dispatching (default 5 ms)


def gamma_offsets(n: int, rate: float, shape: float, seed: int) -> list[float]:
    """Cumulative arrival times with gamma inter-arrivals (shape 1 = Poisson), mean 1/rate."""
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape, 1.0 / (rate * shape), size=n)
    gaps[0] = 0.0  # the first request goes at the segment start
    return [float(x) for x in np.cumsum(gaps)]


async def dispatch(items: Sequence[RequestItem], offsets: list[float], send: SendFn) -> None:
    """Start each request at origin + offset, and return when all have finished."""
    if not items:
        return
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[None]] = []
    finished: asyncio.Future[None] = loop.create_future()
    stop = threading.Event()
    origin = time.perf_counter()
    dues = [origin + off for off in offsets]

    def fire(batch: list[int]) -> None:  # on the loop
        tasks.extend(loop.create_task(send(items[i], dues[i])) for i in batch)

    def _finish() -> None:  # on the loop
        if not finished.done():
            finished.set_result(None)

    def timer() -> None:  # on its own thread
        i, n = 0, len(dues)
        while i < n and not stop.is_set():
            wait = dues[i] - time.perf_counter()
            if wait > 0:
                time.sleep(min(wait, _MAX_SLEEP_S))
                continue
            now = time.perf_counter()
            batch = []
            while i < n and dues[i] <= now:
                batch.append(i)
                i += 1
            if not _post(fire, batch):
                return
        _post(_finish)

    def _post(fn: Callable[..., None], *args: object) -> bool:
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed under us (cancelled run, Ctrl-C)
            return False
        return True

    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, _SWITCH_INTERVAL_S))
    thread = threading.Thread(target=timer, name="open-loop-timer", daemon=True)
    thread.start()
    try:
        await finished  # every fire() ran before this (call_soon_threadsafe is FIFO)
        await asyncio.gather(*tasks)
    finally:
        stop.set()
        sys.setswitchinterval(old)
        for t in tasks:
            if not t.done():
                t.cancel()
