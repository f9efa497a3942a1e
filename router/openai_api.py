"""OpenAI-compatible `/v1/completions` (stream and not) and `/v1/models`, behind the same
split: `model` naming a configured backend pins it; any other model name is routed by the
split, so an OpenAI SDK app gets A/B routing unchanged."""

from __future__ import annotations

import json
import time
from contextlib import AsyncExitStack

from fastapi import APIRouter, Request
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from backends.types import Completion, StreamEvent
from router.api import ERROR_RESPONSES
from router.common import ctx_of, make_params, routing_hints, sse, sse_body, usage_of
from router.dispatch import call_with_fallback, decide, open_stream
from router.errors import ClientError
from router.openai_schemas import (
    CompletionChoice,
    CompletionRequest,
    CompletionResponse,
    ModelCard,
    ModelList,
)
from router.state import RouterState
from router.table import RoutingTable

__all__ = ["SPLIT_MODEL_ID", "openai_routes"]

SPLIT_MODEL_ID = "abtest"
_FINISH = {"eos": "stop", "stop": "stop", "length": "length"}


def _pin(request: Request, table: RoutingTable, body: CompletionRequest) -> tuple[str | None, str, str | None]:
    by_model = body.model if body.model in table.handles else None
    pinned, field, key = routing_hints(request, table.settings.sticky_header, body.user, by_model)
    return pinned, ("model" if field == "backend" else field), key


def openai_routes(state: RouterState) -> APIRouter:
    r = APIRouter(prefix="/v1")
    metrics = state.metrics

    @r.get("/models", response_model=ModelList)
    async def models() -> ModelList:
        names = sorted(state.table_holder.table.handles)
        return ModelList(data=[ModelCard(id=SPLIT_MODEL_ID)] + [ModelCard(id=n) for n in names])

    @r.post("/completions", response_model=None,
            responses={200: {"model": CompletionResponse,
                             "content": {"text/event-stream": {}}}, **ERROR_RESPONSES})
    async def completions(body: CompletionRequest, request: Request) -> Response:
        ctx = ctx_of(request)
        prompts = body.prompts()
        if body.stream and len(prompts) != 1:
            raise ClientError(f"prompt: streaming takes exactly one prompt, got {len(prompts)}", field="prompt")
        stack = AsyncExitStack()
        try:
            table = await stack.enter_async_context(state.table_holder.use())
            pinned, field, key = _pin(request, table, body)
            decision = decide(table, pinned=pinned, pin_field=field, key=key)
            params, _ = make_params(body.max_tokens or 16, 1.0 if body.temperature is None else body.temperature,
                                    body.top_p or 1.0, body.seed, body.stops(), table.settings.max_tokens_cap)
            cid, created = f"cmpl-{ctx.request_id}", int(time.time())
            if table.settings.log_prompts:
                ctx.prompts = prompts
            if body.stream:
                stream = await open_stream(table, decision, ctx, metrics, prompts[0], params)
            else:
                comps: list[Completion] = await call_with_fallback(
                    table, decision, ctx, metrics, lambda b: b.generate(prompts, params))
        except BaseException:
            await stack.aclose()
            raise
        model = ctx.backend or SPLIT_MODEL_ID
        if not body.stream:
            await stack.aclose()
            usage = usage_of(comps)
            if usage is not None:
                ctx.tokens_in, ctx.tokens_out = usage.prompt_tokens, usage.completion_tokens
            choices = [CompletionChoice(text=c.text, index=i, finish_reason=_FINISH.get(c.finish_reason or "", None))
                       for i, c in enumerate(comps)]
            resp = CompletionResponse(id=cid, created=created, model=model, choices=choices, usage=usage)
            texts = [c.text for c in comps]

            async def start_shadow() -> None:
                state.shadow.maybe_generate(table, ctx.request_id, model, prompts, params, texts)

            shadowed = table.settings.shadow is not None
            return Response(resp.model_dump_json(), media_type="application/json",
                            background=BackgroundTask(start_shadow) if shadowed else None)
        include_usage = bool((body.stream_options or {}).get("include_usage"))

        def chunk(text: str, finish: str | None) -> dict[str, object]:
            return {"id": cid, "object": "text_completion", "created": created, "model": model,
                    "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}

        def on_event(ev: StreamEvent) -> bytes | None:
            return sse(json.dumps(chunk(ev.text, None))) if ev.text else None

        def on_final(final: Completion, text: str) -> list[bytes]:
            last = chunk("", _FINISH.get(final.finish_reason or "", "stop"))
            usage = usage_of([final])
            if include_usage:
                last["usage"] = usage.model_dump() if usage else None
            return [sse(json.dumps(last)), sse("[DONE]")]

        def shadow(text: str) -> None:
            state.shadow.maybe_generate(table, ctx.request_id, model, prompts, params, [text])

        return StreamingResponse(sse_body(stream, stack, ctx, on_event, on_final, None, shadow),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return r
