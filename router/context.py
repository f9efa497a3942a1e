"""Per-request state shared by the middleware (headers, logs, metrics) and the handlers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["RequestContext"]


@dataclass
class RequestContext:
    request_id: str
    method: str
    path: str
    t_start: float = field(default_factory=time.perf_counter)
    backend: str | None = None
    arm: str | None = None
    fallback_from: str | None = None
    backend_s: float = 0.0  # time spent waiting on backends before the response started
    tokens_in: int = 0
    tokens_out: int = 0
    status: int = 0
    t_response_start: float | None = None
    error: str | None = None
    prompts: list[str] | None = None  # set only when log_prompts is on

    def add_backend_time(self, seconds: float) -> None:
        self.backend_s += seconds

    def overhead_s(self) -> float:
        end = self.t_response_start if self.t_response_start is not None else time.perf_counter()
        return max(0.0, (end - self.t_start) - self.backend_s)
