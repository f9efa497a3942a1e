"""Router errors and the exception handlers that turn every failure into an `ErrorBody`.

Client mistakes are 4xx naming the field; backend trouble is 502/503/504; only our
own bugs are 500.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from backends.errors import BackendError, BackendRejected, BackendUnavailable
from hrm.schemas import ErrorBody

__all__ = [
    "ClientError",
    "NoBackendAvailable",
    "Overloaded",
    "RouterError",
    "error_response",
    "field_path",
    "install_error_handlers",
    "validation_message",
]

log = logging.getLogger("abtest.router")
_LEAD_FIELD = re.compile(r"^([a-z_][a-z0-9_]*(?:\[\d+\])?)(?= )")


class RouterError(Exception):
    status = 500
    type = "internal_error"

    def __init__(self, message: str, field: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.headers = headers or {}


class ClientError(RouterError):
    status = 400
    type = "invalid_request"


class Overloaded(RouterError):
    status = 429
    type = "overloaded"


class NoBackendAvailable(RouterError):
    status = 503
    type = "backend_unavailable"


def error_response(
    status: int, type_: str, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    body = ErrorBody(error=ErrorBody.Detail(type=type_, message=message, field=field))
    return Response(body.model_dump_json(), status_code=status, media_type="application/json", headers=headers)


def field_path(loc: Sequence[Any]) -> str | None:
    """("body", "prompts", 0) -> "prompts[0]"."""
    parts = [p for p in loc if p not in ("body", "query", "header", "path")]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or None


def validation_message(errors: Sequence[dict[str, Any]]) -> tuple[int, str, str | None]:
    """(status, message, field) for pydantic/FastAPI validation errors."""
    first: dict[str, Any] = errors[0] if errors else {"msg": "invalid request", "loc": ()}
    if first.get("type") == "json_invalid":
        ctx: dict[str, Any] = first.get("ctx") or {}
        return 400, f"body: invalid JSON ({ctx.get('error', 'decode error')})", "body"
    msgs = []
    field = None
    for e in errors[:5]:
        path = field_path(e.get("loc", ()))
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        m = _LEAD_FIELD.match(msg)  # validators lead with the (more precise) field: "prompts[3] is empty"
        if m and (path is None or m.group(1).startswith(path)):
            path = m.group(1)
        if path is None and e.get("type") in ("model_attributes_type", "missing", "dict_type"):
            path, msg = "body", "a JSON object body is required"
        field = field or path
        msgs.append(f"{path}: {msg}" if path else msg)
    return 400, "; ".join(msgs), field


def install_error_handlers(app: FastAPI) -> None:
    async def on_validation(request: Request, exc: RequestValidationError) -> Response:
        status, message, field = validation_message(list(exc.errors()))
        return error_response(status, "invalid_request", message, field)

    async def on_router_error(request: Request, exc: RouterError) -> Response:
        return error_response(exc.status, exc.type, exc.message, exc.field, exc.headers)

    async def on_backend_error(request: Request, exc: BackendError) -> Response:
        ctx = getattr(request.state, "ctx", None)
        if ctx is not None and ctx.backend is None:
            ctx.backend = exc.backend
        if isinstance(exc, BackendRejected):
            status = exc.status if 400 <= exc.status < 500 else 400
            headers = {"Retry-After": "1"} if status == 429 else None
            return error_response(status, "backend_rejected", exc.message, exc.field, headers)
        status = exc.status if isinstance(exc, BackendUnavailable) else 502
        type_ = {504: "backend_timeout", 503: "backend_unavailable", 429: "backend_overloaded"}.get(
            status, "backend_error")
        headers = {"Retry-After": "1"} if status == 429 else None
        return error_response(status, type_, f"{exc.backend}: {exc.message}", None, headers)

    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        type_ = "not_found" if exc.status_code == 404 else "http_error"
        return error_response(exc.status_code, type_, str(exc.detail), None, dict(exc.headers or {}))

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.exception("internal error")
        return error_response(500, "internal_error", f"internal error: {type(exc).__name__}")

    app.add_exception_handler(RequestValidationError, on_validation)  # type: ignore[arg-type]
    app.add_exception_handler(RouterError, on_router_error)  # type: ignore[arg-type]
    app.add_exception_handler(BackendError, on_backend_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, on_http)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, on_crash)
