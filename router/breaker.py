"""Circuit breaker: open after N consecutive failures, half-open after a cooldown."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["CircuitBreaker"]


class CircuitBreaker:
    def __init__(self, failures: int, cooldown_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.consecutive_failures = 0
        self._opened_at: float | None = None

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self.cooldown_s else "open"

    def allow(self) -> bool:
        """Closed, or open long enough that a trial request may go through."""
        return self.state != "open"

    def record_success(self) -> None:
        self.consecutive_failures = 0
        self._opened_at = None

    def record_failure(self) -> None:
        self.consecutive_failures += 1
        if self._opened_at is not None or self.consecutive_failures >= self.threshold:
            self._opened_at = self._clock()  # (re)open; a failed half-open trial restarts the cooldown
