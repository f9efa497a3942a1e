"""The v1 contract through the router: /generate, /generate_stream, /loglikelihood."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

from fastapi import APIRouter, Request
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from backends.types import Completion, StreamEvent
from hrm.schemas import (
    ErrorBody,
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
)
from router.common import ctx_of, make_params, prompt_usage_of, routing_hints, sse, sse_body, usage_of
from router.dispatch import call_with_fallback, decide, open_stream
from router.errors import ClientError
from router.state import RouterState

__all__ = ["ERROR_RESPONSES", "v1_routes"]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": desc}
    for code, desc in [(400, "Invalid request (names the field)"), (401, "Missing API key"),
                       (403, "Wrong API key"), (413, "Body too large"), (429, "Overloaded (Retry-After)"),
                       (502, "Backend error"), (503, "No backend available"), (504, "Backend timeout")]
}


def _json(model: Any) -> Response:
    return Response(model.model_dump_json(exclude_none=True), media_type="application/json")


def v1_routes(state: RouterState) -> APIRouter:
    r = APIRouter()
    metrics = state.metrics

    @r.post("/generate", response_model=None, responses={200: {"model": GenerateResponse}, **ERROR_RESPONSES})
    async def generate(body: GenerateRequest, request: Request) -> Response:
        ctx = ctx_of(request)
        async with state.table_holder.use() as table:
            pinned, field, key = routing_hints(request, table.settings.sticky_header, body.user, body.backend)
            decision = decide(table, pinned=pinned, pin_field=field, key=key)
            params, approx = make_params(body.max_tokens, body.temperature, body.top_p, body.seed, body.stop,
                                         table.settings.max_tokens_cap)
            prompts = body.prompts
            if table.settings.log_prompts:
                ctx.prompts = prompts
            comps: list[Completion] = await call_with_fallback(
                table, decision, ctx, metrics, lambda b: b.generate(prompts, params))
        usage = usage_of(comps)
        if usage is not None:
            ctx.tokens_in, ctx.tokens_out = usage.prompt_tokens, usage.completion_tokens
        for c in comps:
            approx.extend(a for a in c.approximations if a not in approx)
        texts = [c.text for c in comps]
        resp = GenerateResponse(completions=texts, usage=usage, prompt_usage=prompt_usage_of(comps),
                                backend=ctx.backend, request_id=ctx.request_id,
                                approximations=approx,
                                finish_reasons=[c.finish_reason for c in comps if c.finish_reason]
                                if all(c.finish_reason for c in comps) else None)
        backend = ctx.backend or ""

        async def start_shadow() -> None:
            state.shadow.maybe_generate(table, ctx.request_id, backend, prompts, params, texts)

        out = _json(resp)
        if table.settings.shadow is not None:
            out.background = BackgroundTask(start_shadow)
        return out

    @r.post("/loglikelihood", response_model=None,
            responses={200: {"model": LoglikelihoodResponse}, **ERROR_RESPONSES})
    async def loglikelihood(body: LoglikelihoodRequest, request: Request) -> Response:
        ctx = ctx_of(request)
        async with state.table_holder.use() as table:
            pinned, field, key = routing_hints(request, table.settings.sticky_header, body.user, body.backend)
            decision = decide(table, pinned=pinned, pin_field=field, key=key)
            prompts, conts = body.prompts, body.continuations
            if table.settings.log_prompts:
                ctx.prompts = prompts
            results = await call_with_fallback(
                table, decision, ctx, metrics, lambda b: b.loglikelihood(prompts, conts))
        approx: list[str] = []
        for res in results:
            approx.extend(a for a in res.approximations if a not in approx)
        lls = [res.ll for res in results]
        greedy = [bool(res.is_greedy) for res in results] if all(res.is_greedy is not None for res in results) \
            else None
        resp = LoglikelihoodResponse(ll=lls, is_greedy=greedy, backend=ctx.backend, request_id=ctx.request_id,
                                     approximations=approx)
        backend = ctx.backend or ""

        async def start_shadow() -> None:
            state.shadow.maybe_loglikelihood(table, ctx.request_id, backend, prompts, conts, lls)

        out = _json(resp)
        if table.settings.shadow is not None:
            out.background = BackgroundTask(start_shadow)
        return out

    @r.post("/generate_stream", response_model=None,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "SSE: `token` events {text}, then one `done` event with the full "
                                            "text, finish_reason, usage, backend, request_id; or an `error` "
                                            "event"}, **ERROR_RESPONSES})
    async def generate_stream(body: GenerateRequest, request: Request) -> Response:
        ctx = ctx_of(request)
        if len(body.prompts) != 1:
            raise ClientError(f"prompts: /generate_stream takes exactly one prompt, got {len(body.prompts)}",
                              field="prompts")
        stack = AsyncExitStack()
        try:
            table = await stack.enter_async_context(state.table_holder.use())
            pinned, field, key = routing_hints(request, table.settings.sticky_header, body.user, body.backend)
            decision = decide(table, pinned=pinned, pin_field=field, key=key)
            params, approx = make_params(body.max_tokens, body.temperature, body.top_p, body.seed, body.stop,
                                         table.settings.max_tokens_cap)
            if table.settings.log_prompts:
                ctx.prompts = body.prompts
            stream = await open_stream(table, decision, ctx, metrics, body.prompts[0], params)
        except BaseException:
            await stack.aclose()
            raise

        def on_event(ev: StreamEvent) -> bytes | None:
            return sse({"text": ev.text}, "token") if ev.text else None

        def on_final(final: Completion, text: str) -> list[bytes]:
            usage = usage_of([final])
            done = {"text": text, "finish_reason": final.finish_reason,
                    "usage": usage.model_dump() if usage else None, "backend": ctx.backend,
                    "request_id": ctx.request_id, "approximations": approx + list(final.approximations)}
            return [sse(json.dumps(done), "done")]

        def shadow(text: str) -> None:
            state.shadow.maybe_generate(table, ctx.request_id, ctx.backend or "", body.prompts, params, [text])

        return StreamingResponse(sse_body(stream, stack, ctx, on_event, on_final, "error", shadow),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return r
