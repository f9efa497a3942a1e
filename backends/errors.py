"""Typed backend errors. The router maps Rejected to 400 and Unavailable to 502/503/504."""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendOverloaded",
    "BackendProtocolError",
    "BackendRejected",
    "BackendTimeout",
    "BackendUnavailable",
]


class BackendError(Exception):
    upstream_status: int | None = None  # the backend's own HTTP status, when it answered one

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(f"{backend}: {message}")
        self.backend = backend
        self.message = message


class BackendRejected(BackendError):
    """The backend refused the request (its 4xx). Not retried, no fallback."""

    def __init__(self, backend: str, message: str, status: int = 400, field: str | None = None) -> None:
        super().__init__(backend, message)
        self.status = status
        self.field = field


class BackendUnavailable(BackendError):
    """Connection failure or backend 5xx: eligible for retry (before first byte) and fallback."""

    status = 502


class BackendTimeout(BackendUnavailable):
    status = 504


class BackendProtocolError(BackendUnavailable):
    """The backend answered something we cannot parse (bad JSON, missing field, cut stream)."""

    status = 502


class BackendOverloaded(BackendUnavailable):
    """The backend said it is overloaded (its 429): eligible for fallback."""

    status = 429
