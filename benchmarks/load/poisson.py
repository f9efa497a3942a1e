"""Open loop with seeded Poisson arrivals (exponential gaps) at a mean rate."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.load.base import SendFn
from benchmarks.load.openloop import dispatch, gamma_offsets
from benchmarks.records import RequestItem

__all__ = ["PoissonArrivals"]


class PoissonArrivals:
    concurrency: int | None = None

    def __init__(self, rate: float, seed: int) -> None:
        self.rate: float | None = rate
        self.seed = seed
        self.label = f"r={rate:g}/poisson"

    def offsets(self, n: int) -> list[float] | None:
        return gamma_offsets(n, self.rate or 1.0, 1.0, self.seed)

    async def run(self, items: Sequence[RequestItem], offsets: list[float] | None, send: SendFn) -> None:
        await dispatch(items, offsets if offsets is not None else [0.0] * len(items), send)
