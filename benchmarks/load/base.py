"""The load-profile interface and the registry that builds profiles from CLI flags."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from benchmarks.records import RequestItem

__all__ = ["LoadProfile", "SendFn", "parse_levels", "profile_kinds"]

# send(item, t_scheduled) performs one request and records it.
SendFn = Callable[[RequestItem, float], Coroutine[Any, Any, None]]


class LoadProfile(Protocol):
    label: str  # e.g. "c=4", "r=10/poisson"
    concurrency: int | None  # closed loop slots (None: open loop)
    rate: float | None  # open loop mean req/s (None: closed loop)

    def offsets(self, n: int) -> list[float] | None:
        """Scheduled send offsets (s) from the segment start; None for a closed loop."""
        ...

    async def run(self, items: Sequence[RequestItem], offsets: list[float] | None, send: SendFn) -> None:
        """Send every item according to the profile, and return when all have finished."""
        ...


def _builders() -> dict[str, Callable[[float, int, float], LoadProfile]]:
    from benchmarks.load.concurrency import ClosedLoop
    from benchmarks.load.gamma import GammaArrivals
    from benchmarks.load.poisson import PoissonArrivals

    return {
        "concurrency": lambda v, seed, burst: ClosedLoop(int(v)),
        "poisson": lambda v, seed, burst: PoissonArrivals(v, seed),
        "gamma": lambda v, seed, burst: GammaArrivals(v, seed, burst),
    }


def profile_kinds() -> list[str]:
    return sorted(_builders())


def _numbers(text: str, flag: str) -> list[float]:
    out: list[float] = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"{flag}: {part!r} is not a number (use e.g. {flag} 1,4,16)") from None
        if v <= 0:
            raise ValueError(f"{flag}: values must be > 0, got {part!r}")
        out.append(v)
    return out


def parse_levels(
    concurrency: str | None, rate: str | None, arrival: str, seed: int, burstiness: float = 1.0
) -> list[LoadProfile]:
    """Build the load levels from `--concurrency 1,4,16` or `--rate 5,10 --arrival poisson`."""
    builders = _builders()
    if concurrency and rate:
        raise ValueError("--concurrency and --rate conflict: pick a closed loop or an open loop")
    if rate:
        if arrival not in builders or arrival == "concurrency":
            raise ValueError(f"--arrival: unknown {arrival!r}; valid: poisson, gamma")
        return [builders[arrival](r, seed, burstiness) for r in _numbers(rate, "--rate")]
    values = _numbers(concurrency or "1", "--concurrency")
    if any(v != int(v) for v in values):
        raise ValueError("--concurrency: values must be whole numbers")
    return [builders["concurrency"](v, seed, burstiness) for v in values]
