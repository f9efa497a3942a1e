"""Helpers the v1 and OpenAI endpoints share: params, routing hints, usage, SSE."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

from fastapi import Request

from backends.errors import BackendError
from backends.types import Completion, SamplingParams, StreamEvent
from hrm.schemas import ErrorBody, Usage
from router.context import RequestContext
from router.dispatch import OpenStream

__all__ = ["ctx_of", "make_params", "routing_hints", "sse", "sse_body", "usage_of"]

log = logging.getLogger("abtest.router")


def ctx_of(request: Request) -> RequestContext:
    ctx: RequestContext = request.state.ctx
    return ctx


def make_params(
    max_tokens: int, temperature: float, top_p: float, seed: int | None, stop: list[str] | None, cap: int
) -> tuple[SamplingParams, list[str]]:
    approx: list[str] = []
    if max_tokens > cap:
        approx.append(f"max_tokens capped at {cap} (asked {max_tokens})")
        max_tokens = cap
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed,
                            stop=tuple(stop or ()))
    return params, approx


def routing_hints(request: Request, sticky_header: str, body_user: str | None,
                  body_backend: str | None) -> tuple[str | None, str, str | None]:
    """(pinned backend, the field that named it, sticky key). Headers win over body fields."""
    header_pin = request.headers.get("x-backend")
    pinned, field = (header_pin, "X-Backend") if header_pin is not None else (body_backend, "backend")
    key = request.headers.get(sticky_header) or body_user
    return pinned, field, key


def prompt_usage_of(completions: list[Completion]) -> list[Usage] | None:
    if any(c.prompt_tokens is None or c.completion_tokens is None for c in completions):
        return None
    return [Usage(prompt_tokens=c.prompt_tokens or 0, completion_tokens=c.completion_tokens or 0,
                  total_tokens=(c.prompt_tokens or 0) + (c.completion_tokens or 0)) for c in completions]


def usage_of(completions: list[Completion]) -> Usage | None:
    if any(c.prompt_tokens is None or c.completion_tokens is None for c in completions):
        return None
    p = sum(c.prompt_tokens or 0 for c in completions)
    n = sum(c.completion_tokens or 0 for c in completions)
    return Usage(prompt_tokens=p, completion_tokens=n, total_tokens=p + n)


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def sse_body(
    stream: OpenStream,
    stack: AsyncExitStack,
    ctx: RequestContext,
    on_event: Callable[[StreamEvent], bytes | None],
    on_final: Callable[[Completion, str], list[bytes]],
    error_event: str | None,
    on_done: Callable[[str], object] | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body: chunks, then the final event(s); errors after the first byte become an
    error event (no retry: the client already has partial output). `on_done` gets the whole
    text once the backend has finished (the shadow hook)."""

    async def gen() -> AsyncIterator[bytes]:
        text: list[str] = []
        try:
            async for ev in stream.events():
                text.append(ev.text)
                out = on_event(ev)
                if out:
                    yield out
                if ev.final is not None:
                    final = ev.final
                    ctx.tokens_in += final.prompt_tokens or 0
                    ctx.tokens_out += final.completion_tokens or 0
                    if on_done is not None:
                        on_done("".join(text))
                    for chunk in on_final(final, "".join(text)):
                        yield chunk
                    return
        except BackendError as exc:
            stream.handle.breaker.record_failure()
            ctx.error = type(exc).__name__
            body = ErrorBody(error=ErrorBody.Detail(type="backend_error", message=str(exc)))
            yield sse(body.model_dump_json(), error_event)
        except Exception as exc:
            log.exception("stream failed request_id=%s", ctx.request_id)
            ctx.error = type(exc).__name__
            body = ErrorBody(error=ErrorBody.Detail(type="backend_error", message=f"{type(exc).__name__}: {exc}"))
            yield sse(body.model_dump_json(), error_event)
        finally:
            try:
                await stream.aclose()
            finally:
                await stack.aclose()

    return gen()
