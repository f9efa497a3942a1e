"""A strict vLLM double: the OpenAI-compatible `/v1/completions` protocol as vLLM serves it
(echo + logprobs, stop_reason, SSE ending in `data: [DONE]`, usage chunk on
`stream_options.include_usage`), computed with transformers. Unknown fields are rejected.

    with start_vllm_double(model_dir) as url: ...      # base url, e.g. http://127.0.0.1:PORT
    app = create_vllm_app(model_dir, served_name="m")   # the ASGI app; app.state.requests logs bodies
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import Request

from tests.doubles.lm import DoubleLM, Generated
from tests.doubles.server import serve

__all__ = ["create_vllm_app", "start_vllm_double"]

_FIELDS = {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream", "stream_options",
           "echo", "logprobs", "n", "ignore_eos", "user", "presence_penalty", "frequency_penalty"}


class _Bad(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.param, self.status = message, param, status


def _error(exc: _Bad) -> Any:
    from fastapi.responses import JSONResponse

    kind = "NotFoundError" if exc.status == 404 else "BadRequestError"
    return JSONResponse({"error": {"message": exc.message, "type": kind, "param": exc.param, "code": exc.status}},
                        status_code=exc.status)


def _validate(body: Any, served: str, lm: DoubleLM) -> tuple[list[int], str]:
    if not isinstance(body, dict):
        raise _Bad("request body must be a JSON object")
    unknown = set(body) - _FIELDS
    if unknown:
        raise _Bad(f"unknown fields: {sorted(unknown)}", min(unknown))
    if body.get("model") != served:
        raise _Bad(f"The model `{body.get('model')}` does not exist.", "model", 404)
    prompt = body.get("prompt")
    if isinstance(prompt, str) and prompt:
        ids = lm.encode(prompt)[0]
    elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and t >= 0 for t in prompt):
        ids = list(prompt)
    else:
        raise _Bad("prompt must be a non-empty string or a list of token ids (one prompt per request here)",
                   "prompt")
    max_tokens = body.get("max_tokens", 16)
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise _Bad("max_tokens must be at least 1", "max_tokens")
    if len(ids) + max_tokens > lm.max_context:
        raise _Bad(f"This model's maximum context length is {lm.max_context} tokens. However, you requested "
                   f"{len(ids) + max_tokens} tokens.", "max_tokens")
    temperature = body.get("temperature", 1.0)
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise _Bad("temperature must be non-negative", "temperature")
    top_p = body.get("top_p", 1.0)
    if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise _Bad("top_p must be in (0, 1]", "top_p")
    logprobs = body.get("logprobs")
    if logprobs is not None and (not isinstance(logprobs, int) or not 0 <= logprobs <= 20):
        raise _Bad("logprobs must be an integer in [0, 20]", "logprobs")
    if body.get("n", 1) != 1:
        raise _Bad("this double serves n=1 only", "n")
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise _Bad("stop must be a string or a list of non-empty strings", "stop")
    body["_stop"] = stop
    return ids, prompt if isinstance(prompt, str) else lm.tokenizer.decode(ids)


def _logprobs_block(lm: DoubleLM, ids: list[int], scores: list[float | None], argmax: list[int | None],
                    best: list[float | None], start: int) -> dict[str, Any]:
    tokens = [lm.token_text(t) for t in ids]
    offsets, pos = [], start
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    tops: list[dict[str, float] | None] = []
    for t, s, a, b in zip(ids, scores, argmax, best):
        tops.append(None if s is None or a is None or b is None else {lm.token_text(a): b, lm.token_text(t): s})
    return {"tokens": tokens, "token_logprobs": scores, "top_logprobs": tops, "text_offset": offsets}


def create_vllm_app(model_dir: str | Path, served_name: str | None = None, echo_drops_bos: bool = False) -> Any:
    """`echo_drops_bos` mimics llama.cpp, whose echo leaves out the BOS token."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, StreamingResponse

    lm = DoubleLM(model_dir)
    served = served_name or str(model_dir)
    app = FastAPI()
    app.state.requests = []

    @app.get("/health")
    def health() -> Any:
        return JSONResponse({}, status_code=200)

    @app.get("/v1/models")
    def models() -> Any:
        return {"object": "list", "data": [{"id": served, "object": "model", "created": int(time.time()),
                                            "owned_by": "vllm", "root": str(model_dir),
                                            "max_model_len": lm.max_context}]}

    @app.post("/v1/completions")
    async def completions(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return _error(_Bad("request body is not valid JSON"))
        app.state.requests.append(json.loads(json.dumps(body)))
        try:
            ids, prompt_text = _validate(body, served, lm)
        except _Bad as exc:
            return _error(exc)
        temp = float(body.get("temperature", 1.0))
        gen = lm.generate(ids, max_new=body.get("max_tokens", 16), temperature=temp or None,
                          top_p=body.get("top_p"), seed=body.get("seed"), stops=body["_stop"],
                          ignore_eos=bool(body.get("ignore_eos")))
        text = gen.text
        if gen.stop_hit:
            text = text[: text.find(gen.stop_hit)]
        finish = "length" if gen.finish == "length" else "stop"
        usage = {"prompt_tokens": len(ids), "completion_tokens": len(gen.ids),
                 "total_tokens": len(ids) + len(gen.ids)}
        rid, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())
        head = {"id": rid, "object": "text_completion", "created": created, "model": served}
        if body.get("stream"):
            return StreamingResponse(_sse(head, gen, text, finish, usage, body), media_type="text/event-stream")
        logprobs = None
        if body.get("logprobs") is not None:
            scores, argmax, best = lm.prompt_scores(ids + gen.ids)
            if body.get("echo"):
                skip = 1 if echo_drops_bos and ids and ids[0] == lm.tokenizer.bos_token_id else 0
                logprobs = _logprobs_block(lm, (ids + gen.ids)[skip:], scores[skip:], argmax[skip:], best[skip:], 0)
            else:
                n = len(ids)
                logprobs = _logprobs_block(lm, gen.ids, scores[n:], argmax[n:], best[n:], len(prompt_text))
        choice = {"index": 0, "text": (prompt_text if body.get("echo") else "") + text, "logprobs": logprobs,
                  "finish_reason": finish, "stop_reason": gen.stop_hit}
        return JSONResponse({**head, "choices": [choice], "usage": usage})

    return app


def _sse(head: dict[str, Any], gen: Generated, text: str, finish: str, usage: dict[str, Any],
         body: dict[str, Any]) -> Iterator[str]:
    sent = 0
    for i in range(len(gen.token_texts)):
        upto = len("".join(gen.token_texts[: i + 1]).rstrip("\ufffd"))
        piece = text[sent:min(upto, len(text))]
        if piece:
            sent += len(piece)
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": None, "stop_reason": None}
            yield f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"
    last = {"index": 0, "text": text[sent:], "logprobs": None, "finish_reason": finish, "stop_reason": gen.stop_hit}
    yield f"data: {json.dumps({**head, 'choices': [last]})}\n\n"
    if (body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps({**head, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


@contextmanager
def start_vllm_double(model_dir: str | Path, served_name: str | None = None,
                      echo_drops_bos: bool = False) -> Iterator[str]:
    """Serve a vLLM double of `model_dir` on loopback; yields its base url."""
    with serve(create_vllm_app(model_dir, served_name, echo_drops_bos)) as url:
        yield url
