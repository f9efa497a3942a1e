"""The target interface and error classification shared by every target."""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from benchmarks.records import RequestItem, RequestRecord

__all__ = ["Target", "classify_error", "finish_record"]


class Target(Protocol):
    name: str
    supports_loglikelihood: bool
    start_error: str | None

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def generate(self, item: RequestItem, rec: RequestRecord) -> None: ...
    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[float]: ...


def classify_error(exc: BaseException, streaming: bool = False) -> tuple[str, int | None]:
    """Map an exception to (error class, HTTP status or None)."""
    from backends.errors import BackendProtocolError, BackendRejected, BackendTimeout, BackendUnavailable

    if isinstance(exc, asyncio.TimeoutError | BackendTimeout | httpx.TimeoutException):
        return "timeout", None
    if isinstance(exc, BackendRejected):
        return f"http_{exc.status}", exc.status
    if isinstance(exc, BackendProtocolError):
        return ("stream_error" if streaming else "protocol_error"), None
    if isinstance(exc, BackendUnavailable):
        status = vars(exc).get("status")
        return (f"http_{status}", status) if status else ("connect_error", None)
    if isinstance(exc, httpx.ConnectError | ConnectionError | OSError):
        return "connect_error", None
    if isinstance(exc, httpx.HTTPError):
        return "stream_error" if streaming else "protocol_error", None
    return f"exception_{type(exc).__name__}", None


def finish_record(rec: RequestRecord) -> None:
    """Post-checks on a completed record: empty output, truncated output, token-count mismatch."""
    if rec.error_class is not None:
        return
    if not rec.text and not rec.completion_tokens:
        rec.error_class, rec.error = "empty_output", "the backend returned no text"
    elif rec.finish_reason is None and rec.streamed:
        rec.error_class, rec.error = "truncated_output", "stream ended without a final event"
    elif (
        rec.finish_reason == "length"
        and rec.completion_tokens is not None
        and rec.completion_tokens < rec.max_tokens
    ):
        rec.error_class = "truncated_output"
        rec.error = f"finish_reason=length after {rec.completion_tokens} < max_tokens={rec.max_tokens} tokens"
