"""Plain ASGI middleware shared by the HRM server and the router: bearer-key auth and a
request-body limit, with errors in the v1 error shape (`hrm.schemas.ErrorBody`)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from hrm.schemas import ErrorBody

__all__ = ["ASGIApp", "AuthMiddleware", "BodyLimitMiddleware", "Message", "Receive", "Scope", "Send", "header",
           "send_error"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz", "/readyz"})  # probes answer without a key


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


def header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return str(v.decode("latin-1"))
    return None


class AuthMiddleware:
    """Bearer API keys (constant-time compare). 401 without a key, 403 with a wrong one.
    `keys()` is asked on every request, so keys can change at run time; none means open."""

    def __init__(self, app: ASGIApp, keys: Callable[[], Sequence[str]]) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keys = self.keys()
        if scope["type"] != "http" or not keys or scope["path"] in OPEN_PATHS or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        auth = header(scope, b"authorization")
        if not auth or not auth.lower().startswith("bearer ") or not auth[7:].strip():
            await send_error(send, 401, "unauthorized", "missing bearer token (Authorization: Bearer <key>)",
                             "Authorization", [(b"www-authenticate", b"Bearer")])
            return
        given = auth[7:].strip().encode()
        ok = False
        for k in keys:  # compare against every key: timing does not reveal which matched
            ok |= hmac.compare_digest(given, k.encode())
        if not ok:
            await send_error(send, 403, "forbidden", "invalid API key", "Authorization")
            return
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """413 for bodies over `max_bytes()` (asked per request): by Content-Length up front, or
    while streaming in."""

    def __init__(self, app: ASGIApp, max_bytes: Callable[[], int]) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes()
        length = header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await send_error(send, 413, "payload_too_large", f"request body exceeds {limit} bytes", "body")
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    from fastapi import HTTPException

                    raise HTTPException(413, f"request body exceeds {limit} bytes")
            return message

        await self.app(scope, limited_receive, send)
