"""Open loop with seeded gamma arrivals; burstiness < 1 is burstier than Poisson, > 1 smoother."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.load.base import SendFn
from benchmarks.load.openloop import dispatch, gamma_offsets
from benchmarks.records import RequestItem

__all__ = ["GammaArrivals"]


class GammaArrivals:
    concurrency: int | None = None

    def __init__(self, rate: float, seed: int, burstiness: float = 1.0) -> None:
        if burstiness <= 0:
            raise ValueError("--burstiness must be > 0")
        self.rate: float | None = rate
        self.seed = seed
        self.burstiness = burstiness
        self.label = f"r={rate:g}/gamma({burstiness:g})"

    def offsets(self, n: int) -> list[float] | None:
        return gamma_offsets(n, self.rate or 1.0, self.burstiness, self.seed)

    async def run(self, items: Sequence[RequestItem], offsets: list[float] | None, send: SendFn) -> None:
        await dispatch(items, offsets if offsets is not None else [0.0] * len(items), send)
