"""Typed engine errors. Servers map InvalidRequestError to 400 and QueueFullError to 429."""

from __future__ import annotations

__all__ = ["CheckpointError", "HrmError", "InvalidRequestError", "QueueFullError"]


class HrmError(Exception):
    pass


class InvalidRequestError(HrmError, ValueError):
    """A client mistake. `field` names the offending request field (e.g. "prompts[3]")."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class QueueFullError(HrmError):
    """The engine's bounded request queue is full; retry later (HTTP 429)."""

    def __init__(self, message: str = "request queue is full", retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CheckpointError(HrmError):
    """A checkpoint that cannot be loaded: missing files, bad config, missing/unexpected keys."""
