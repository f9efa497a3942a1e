"""Plain ASGI middleware: request context + headers + access log + metrics, admission (the
global bound beyond which requests get 429). Auth and the body limit live in `hrm.asgi`,
shared with the HRM server."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable

from hrm.asgi import (
    ASGIApp,
    AuthMiddleware,
    BodyLimitMiddleware,
    Message,
    Receive,
    Scope,
    Send,
    header,
    send_error,
)
from router.context import RequestContext
from router.metrics import RouterMetrics

__all__ = ["AdmissionMiddleware", "AuthMiddleware", "BodyLimitMiddleware", "ContextMiddleware"]

_RID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_access_log = logging.getLogger("abtest.router.access")


class ContextMiddleware:
    """Outermost: request id, routing/timing headers on every response, log line, metrics."""

    def __init__(self, app: ASGIApp, metrics: RouterMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = header(scope, b"x-request-id")
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


class AdmissionMiddleware:
    """Global bound on requests inside the router (waiting + running): beyond it, 429."""

    def __init__(self, app: ASGIApp, metrics: RouterMetrics, limits: Callable[[], tuple[int, int]],
                 paths: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.limits = limits  # (max_queue, retry_after_s), asked per request: hot-reloadable
        self.paths = paths
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        max_queue, retry_after_s = self.limits()
        if self.active >= max_queue:
            self.metrics.rejected.inc()
            await send_error(send, 429, "overloaded",
                             f"router is at its queue bound ({max_queue} requests); retry later",
                             None, [(b"retry-after", str(retry_after_s).encode())])
            return
        self.active += 1
        self.metrics.active.set(self.active)
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self.metrics.active.set(self.active)
