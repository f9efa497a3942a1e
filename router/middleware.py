"""Plain ASGI middleware: request context + headers + access log + metrics, auth, body
limit, admission (the global bound beyond which requests get 429)."""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from hrm.schemas import ErrorBody
from router.context import RequestContext
from router.metrics import RouterMetrics

__all__ = ["AdmissionMiddleware", "AuthMiddleware", "BodyLimitMiddleware", "ContextMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_RID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_access_log = logging.getLogger("abtest.router.access")
_OPEN_PATHS = frozenset({"/healthz", "/readyz"})


def _error_body(type_: str, message: str, field: str | None = None) -> bytes:
    return ErrorBody(error=ErrorBody.Detail(type=type_, message=message, field=field)).model_dump_json().encode()


async def send_error(
    send: Send, status: int, type_: str, message: str, field: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = _error_body(type_, message, field)
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": hdrs + (headers or [])})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return str(v.decode("latin-1"))
    return None


class ContextMiddleware:
    """Outermost: request id, routing/timing headers on every response, log line, metrics."""

    def __init__(self, app: ASGIApp, metrics: RouterMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _header(scope, b"x-request-id")
        if rid is None or not _RID_OK.match(rid):
            rid = uuid.uuid4().hex
        ctx = RequestContext(request_id=rid, method=scope["method"], path=scope["path"])
        scope.setdefault("state", {})["ctx"] = ctx
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                ctx.status = message["status"]
                ctx.t_response_start = time.perf_counter()
                overhead_ms = ctx.overhead_s() * 1000
                total_ms = (ctx.t_response_start - ctx.t_start) * 1000
                extra = [
                    (b"x-request-id", rid.encode()),
                    (b"x-backend", (ctx.backend or "none").encode()),
                    (b"x-arm", (ctx.arm or "none").encode()),
                    (b"x-router-overhead-ms", f"{overhead_ms:.3f}".encode()),
                    (b"server-timing", (f"router;dur={overhead_ms:.3f}, backend;dur={ctx.backend_s * 1000:.3f}, "
                                        f"total;dur={total_ms:.3f}").encode()),
                ]
                if ctx.fallback_from:
                    extra.append((b"x-fallback-from", ctx.fallback_from.encode()))
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # our own bug: still a proper 500 with the headers
            logging.getLogger("abtest.router").exception("unhandled error request_id=%s", rid)
            ctx.error = type(exc).__name__
            if not started:
                await send_error(send_with_headers, 500, "internal_error", f"internal error: {type(exc).__name__}")
        finally:
            self._finish(ctx)

    def _finish(self, ctx: RequestContext) -> None:
        total = time.perf_counter() - ctx.t_start
        self.metrics.observe_request(ctx, total)
        if _access_log.isEnabledFor(logging.INFO):
            _access_log.info(json.dumps({
                "event": "request", "request_id": ctx.request_id, "method": ctx.method, "path": ctx.path,
                "status": ctx.status, "backend": ctx.backend, "arm": ctx.arm, "fallback_from": ctx.fallback_from,
                "total_ms": round(total * 1000, 3), "backend_ms": round(ctx.backend_s * 1000, 3),
                "overhead_ms": round(ctx.overhead_s() * 1000, 3), "tokens_in": ctx.tokens_in,
                "tokens_out": ctx.tokens_out, "error": ctx.error,
                **({"prompts": ctx.prompts} if ctx.prompts is not None else {}),
            }))


class AuthMiddleware:
    """Bearer API keys (constant-time compare). 401 without a key, 403 with a wrong one."""

    def __init__(self, app: ASGIApp, keys: list[str]) -> None:
        self.app = app
        self.keys = [k.encode() for k in keys]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _OPEN_PATHS or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        auth = _header(scope, b"authorization")
        if not auth or not auth.lower().startswith("bearer ") or not auth[7:].strip():
            await send_error(send, 401, "unauthorized", "missing bearer token (Authorization: Bearer <key>)",
                             "Authorization", [(b"www-authenticate", b"Bearer")])
            return
        given = auth[7:].strip().encode()
        ok = False
        for k in self.keys:  # compare against every key: timing does not reveal which matched
            ok |= hmac.compare_digest(given, k)
        if not ok:
            await send_error(send, 403, "forbidden", "invalid API key", "Authorization")
            return
        await self.app(scope, receive, send)


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 for bodies over the limit: by Content-Length up front, or while streaming in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await send_error(send, 413, "payload_too_large",
                             f"request body exceeds {self.max_bytes} bytes", "body")
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    from fastapi import HTTPException

                    raise HTTPException(413, f"request body exceeds {self.max_bytes} bytes")
            return message

        await self.app(scope, limited_receive, send)


class AdmissionMiddleware:
    """Global bound on requests inside the router (waiting + running): beyond it, 429."""

    def __init__(self, app: ASGIApp, metrics: RouterMetrics, max_queue: int, retry_after_s: int,
                 paths: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.max_queue = max_queue
        self.retry_after = str(retry_after_s).encode()
        self.paths = paths
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        if self.active >= self.max_queue:
            self.metrics.rejected.inc()
            await send_error(send, 429, "overloaded",
                             f"router is at its queue bound ({self.max_queue} requests); retry later",
                             None, [(b"retry-after", self.retry_after)])
            return
        self.active += 1
        self.metrics.active.set(self.active)
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self.metrics.active.set(self.active)
