"""The HTTP transport shared by the vllm and tgi adapters.

One pooled `httpx.AsyncClient` per adapter (opened in `open`, closed in `close`),
per-backend timeouts, retries only before the first byte of a response, an optional
bearer token, SSE parsing, and the mapping of every failure to a typed BackendError.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from backends.errors import (
    BackendOverloaded,
    BackendProtocolError,
    BackendRejected,
    BackendTimeout,
    BackendUnavailable,
)
from backends.settings import HttpBackendSettings, read_api_key

__all__ = ["HttpTransport", "SseEvent", "error_message"]

_RETRYABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class SseEvent:
    __slots__ = ("data", "event")

    def __init__(self, event: str | None, data: str) -> None:
        self.event = event
        self.data = data

    def json(self, backend: str) -> Any:
        try:
            return json.loads(self.data)
        except ValueError:
            raise BackendProtocolError(backend, f"stream event is not JSON: {self.data[:200]!r}") from None


def error_message(body: bytes) -> tuple[str, str | None]:
    """The backend's own message (TGI `{"error": str}`, OpenAI `{"error": {"message"}}`,
    FastAPI `{"detail": ...}`) and, where given, the offending field."""
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("data:"):  # an SSE error event (TGI streams)
        text = text[5:].strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return body.decode("utf-8", "replace")[:500] or "(empty body)", None
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err)
            param = err.get("param") or err.get("field")
            return str(msg), str(param) if param else None
        if isinstance(err, str):
            return err, None
        if "detail" in doc:
            return json.dumps(doc["detail"]) if not isinstance(doc["detail"], str) else doc["detail"], None
    return json.dumps(doc)[:500], None


class HttpTransport:
    """Owns the connection pool of one HTTP backend."""

    def __init__(self, settings: HttpBackendSettings) -> None:
        self._settings = settings
        self._name = settings.name
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:  # never shows the token
        return f"HttpTransport(name={self._name!r}, url={self._settings.url!r})"

    async def open(self) -> None:
        if self._client is not None:
            return
        s = self._settings
        token = read_api_key(s)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(
            base_url=s.url,
            headers=headers,
            timeout=httpx.Timeout(connect=s.timeouts.connect, read=s.timeouts.total,
                                  write=s.timeouts.total, pool=s.timeouts.connect),
            limits=httpx.Limits(max_connections=s.max_connections,
                                max_keepalive_connections=s.max_connections),
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            raise BackendUnavailable(self._name, "backend not started (call start() first)")
        return self._client

    def _raise_for_status(self, status: int, body: bytes) -> None:
        if status < 400:
            return
        message, field = error_message(body)
        exc: BackendUnavailable | BackendRejected
        if status == 429:
            exc = BackendOverloaded(self._name, f"overloaded (429): {message}")
        elif status < 500:
            exc = BackendRejected(self._name, message, status=status, field=field)
        else:
            exc = BackendUnavailable(self._name, f"HTTP {status}: {message}")
        exc.upstream_status = status
        raise exc

    async def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        """Send with retries on connection failures only (nothing was received yet)."""
        s = self._settings
        for attempt in range(s.retries + 1):
            try:
                return await self.client.send(request, stream=stream)
            except _RETRYABLE as exc:
                if attempt == s.retries:
                    kind = BackendTimeout if isinstance(exc, httpx.TimeoutException) else BackendUnavailable
                    raise kind(self._name, f"cannot connect to {s.url}: {exc!r}") from None
                await asyncio.sleep(s.retry_backoff_s * (2**attempt))
            except httpx.TimeoutException:
                raise BackendTimeout(self._name, f"no response within {s.timeouts.total}s") from None
            except httpx.TransportError as exc:
                raise BackendUnavailable(self._name, f"transport error: {exc!r}") from None
        raise AssertionError("unreachable")

    async def request_json(self, method: str, path: str, body: Any = None) -> Any:
        """One request, its JSON answer. Bounded by the total timeout."""
        request = self.client.build_request(method, path, json=body)
        try:
            async with asyncio.timeout(self._settings.timeouts.total):
                response = await self._send(request, stream=False)
        except TimeoutError:
            raise BackendTimeout(self._name, f"{path}: no answer within {self._settings.timeouts.total}s") from None
        self._raise_for_status(response.status_code, response.content)
        try:
            return response.json()
        except ValueError:
            raise BackendProtocolError(
                self._name, f"{path}: response is not JSON: {response.content[:200]!r}"
            ) from None

    async def get_status(self, path: str) -> int:
        """Status code of a GET (connection failures raise BackendUnavailable)."""
        response = await self._send(self.client.build_request("GET", path), stream=False)
        return response.status_code

    async def stream_sse(self, path: str, body: Any) -> AsyncIterator[SseEvent]:
        """POST and yield server-sent events. The first event must come within
        `first_token` seconds (and so must each next one); the whole stream within `total`."""
        s = self._settings
        request = self.client.build_request("POST", path, json=body, headers={"Accept": "text/event-stream"})
        deadline = time.monotonic() + s.timeouts.total
        response = await self._wait(self._send(request, stream=True), deadline, "first byte")
        try:
            if response.status_code >= 400:
                self._raise_for_status(response.status_code, await response.aread())
            lines = response.aiter_lines()
            event: str | None = None
            data: list[str] = []
            while True:
                try:
                    line = await self._wait(anext(lines), deadline, "next stream event")
                except StopAsyncIteration:
                    break
                except httpx.TransportError as exc:
                    raise BackendProtocolError(self._name, f"stream cut mid-way: {exc!r}") from None
                if line == "":
                    if data:
                        yield SseEvent(event, "\n".join(data))
                    event, data = None, []
                elif line.startswith(":"):
                    continue
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
            if data:
                yield SseEvent(event, "\n".join(data))
        finally:
            await response.aclose()

    async def _wait(self, awaitable: Any, deadline: float, what: str) -> Any:
        s = self._settings
        budget = min(s.timeouts.first_token, deadline - time.monotonic())
        try:
            async with asyncio.timeout(max(budget, 0.001)):
                return await awaitable
        except TimeoutError:
            raise BackendTimeout(self._name, f"{what} did not arrive within {budget:.1f}s") from None
        except httpx.TimeoutException:
            raise BackendTimeout(self._name, f"{what}: read timed out") from None
