"""A strict TGI double: `/generate`, `/generate_stream`, `/info`, `/health`, `/tokenize`
and `POST /` (compat, JSON array), computed with transformers.

Every request body and every response body is validated against TGI's OpenAPI spec
(tests.doubles.tgi_spec); TGI's own validation errors are reproduced (422,
`{"error": ..., "error_type": "validation"}`). A response that breaks the spec is a
bug in the double and answers 500.

    with start_tgi_double(model_dir, max_stop_sequences=4) as url: ...
    app = create_tgi_app(model_dir)   # app.state.requests logs (path, body)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import Request

from tests.doubles.lm import DoubleLM, Generated
from tests.doubles.server import serve
from tests.doubles.tgi_spec import TgiSpec

__all__ = ["create_tgi_app", "start_tgi_double"]

_PARAMS = {"adapter_id", "best_of", "decoder_input_details", "details", "do_sample", "frequency_penalty",
           "grammar", "max_new_tokens", "repetition_penalty", "return_full_text", "seed", "stop", "temperature",
           "top_k", "top_n_tokens", "top_p", "truncate", "typical_p", "watermark"}
_FINISH = {"length": "length", "eos": "eos_token", "stop": "stop_sequence"}


class _Invalid(Exception):
    pass


def _num(p: dict[str, Any], key: str) -> float | None:
    value = p.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _check(spec: TgiSpec, schema: str, body: Any, lm: DoubleLM, max_stop: int) -> tuple[str, dict[str, Any]]:
    """TGI's own checks (router/src/validation.rs) where the types are right, then the spec."""
    p = body.get("parameters") if isinstance(body, dict) else None
    p = p if isinstance(p, dict) else {}
    if isinstance(body, dict) and body.get("inputs") == "":
        raise _Invalid("`inputs` cannot be empty")
    if (t := _num(p, "temperature")) is not None and t <= 0:
        raise _Invalid("`temperature` must be strictly positive")
    if (top_p := _num(p, "top_p")) is not None and not 0 < top_p < 1:
        raise _Invalid("`top_p` must be > 0.0 and < 1.0")
    if (n := _num(p, "max_new_tokens")) is not None and n <= 0:
        raise _Invalid("`max_new_tokens` must be strictly positive")
    if isinstance(p.get("stop"), list) and len(p["stop"]) > max_stop:
        raise _Invalid(f"`stop` supports up to {max_stop} stop sequences. Given: {len(p['stop'])}")
    problems = spec.errors(schema, body)
    if problems:
        raise _Invalid(f"Failed to deserialize the JSON body into the target type: {problems[0]}")
    unknown = set(p) - _PARAMS
    if unknown:
        raise _Invalid(f"Failed to deserialize the JSON body: parameters: unknown field `{min(unknown)}`")
    n_in = len(lm.encode(body["inputs"])[0])
    new = p.get("max_new_tokens") or 100
    if n_in + new > lm.max_context:
        raise _Invalid(f"`inputs` tokens + `max_new_tokens` must be <= {lm.max_context}. "
                       f"Given: {n_in} `inputs` tokens and {new} `max_new_tokens`")
    return body["inputs"], p


def _run(lm: DoubleLM, inputs: str, p: dict[str, Any]) -> tuple[list[int], Generated]:
    ids = lm.encode(inputs)[0]
    sample = bool(p.get("do_sample")) or p.get("temperature") not in (None, 1.0) or p.get("top_p") is not None
    temp = (p.get("temperature") or 1.0) if sample else None
    gen = lm.generate(ids, max_new=p.get("max_new_tokens") or 100, temperature=temp, top_p=p.get("top_p"),
                      seed=p.get("seed"), stops=list(p.get("stop") or []))
    return ids, gen


def _token(lm: DoubleLM, tid: int, lp: float | None) -> dict[str, Any]:
    return {"id": tid, "text": lm.token_text(tid), "logprob": lp, "special": lm.is_special(tid)}


def _response(lm: DoubleLM, ids: list[int], gen: Generated, p: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"generated_text": gen.text}
    if p.get("details", True):
        prefill: list[dict[str, Any]] = []
        if p.get("decoder_input_details"):
            scores = lm.prompt_scores(ids)[0]
            prefill = [{"id": t, "text": lm.token_text(t), "logprob": s} for t, s in zip(ids, scores)]
        body["details"] = {"finish_reason": _FINISH[gen.finish], "generated_tokens": len(gen.ids),
                           "seed": p.get("seed"), "prefill": prefill,
                           "tokens": [_token(lm, t, lp) for t, lp in zip(gen.ids, gen.logprobs)]}
    return body


def create_tgi_app(model_dir: str | Path, max_stop_sequences: int = 4) -> Any:
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, StreamingResponse

    lm = DoubleLM(model_dir)
    spec = TgiSpec.load()
    app = FastAPI()
    app.state.requests = []

    def reply(schema: str, doc: Any, status: int = 200) -> Any:
        problems = spec.errors(schema, doc)
        if problems:
            bad = {"error": f"double produced a response violating {schema}: {problems[0]}",
                   "error_type": "double_bug"}
            return JSONResponse(bad, status_code=500)
        return JSONResponse(doc, status_code=status)

    def invalid(exc: _Invalid) -> Any:
        return reply("ErrorResponse", {"error": str(exc), "error_type": "validation"}, 422)

    def sse(ids: list[int], gen: Generated, p: dict[str, Any]) -> Iterator[str]:
        emitted = ""
        for i, (tid, lp) in enumerate(zip(gen.ids, gen.logprobs)):
            last = i == len(gen.ids) - 1
            token = _token(lm, tid, lp)
            # TGI decodes incrementally: a token that ends mid-character streams as "".
            upto = lm.tokenizer.decode(gen.ids[: i + 1], skip_special_tokens=True)
            upto = upto if last else upto.rstrip("\ufffd")
            token["text"] = "" if token["special"] else upto[len(emitted):]
            emitted = upto if not token["special"] else emitted
            event: dict[str, Any] = {"index": i, "token": token, "generated_text": None,
                                     "details": None, "top_tokens": []}
            if last:
                event["generated_text"] = gen.text
                event["details"] = {"finish_reason": _FINISH[gen.finish], "generated_tokens": len(gen.ids),
                                    "input_length": len(ids), "seed": p.get("seed")}
            problems = spec.errors("StreamResponse", event)
            if problems:
                event = {"error": f"double bug: {problems[0]}", "error_type": "double_bug"}
            yield f"data: {json.dumps(event)}\n\n"

    async def parse(request: Request, path: str) -> Any:
        try:
            body = await request.json()
        except ValueError:
            raise _Invalid("Failed to parse the request body as JSON") from None
        app.state.requests.append((path, body))
        return body

    @app.get("/health")
    def health() -> Any:
        return JSONResponse(None, status_code=200)

    @app.get("/info")
    def info() -> Any:
        return reply("Info", {
            "model_id": str(model_dir), "model_sha": None, "model_pipeline_tag": "text-generation",
            "max_concurrent_requests": 128, "max_best_of": 2, "max_stop_sequences": max_stop_sequences,
            "max_input_tokens": lm.max_context - 1, "max_total_tokens": lm.max_context,
            "validation_workers": 2, "max_client_batch_size": 4, "router": "text-generation-router",
            "version": "3.3.6-double", "sha": None, "docker_label": None,
        })

    @app.post("/tokenize")
    async def tokenize(request: Request) -> Any:
        try:
            body = await parse(request, "/tokenize")
            problems = spec.errors("GenerateRequest", body)
            if problems:
                raise _Invalid(f"Failed to deserialize the JSON body into the target type: {problems[0]}")
        except _Invalid as exc:
            return invalid(exc)
        ids, offsets = lm.encode(body["inputs"])
        text = body["inputs"]
        return reply("TokenizeResponse", [{"id": t, "text": text[a:b], "start": a, "stop": b}
                                          for t, (a, b) in zip(ids, offsets)])

    @app.post("/generate")
    async def generate(request: Request) -> Any:
        try:
            inputs, p = _check(spec, "GenerateRequest", await parse(request, "/generate"), lm, max_stop_sequences)
        except _Invalid as exc:
            return invalid(exc)
        ids, gen = _run(lm, inputs, p)
        return reply("GenerateResponse", _response(lm, ids, gen, p))

    @app.post("/generate_stream")
    async def generate_stream(request: Request) -> Any:
        try:
            inputs, p = _check(spec, "GenerateRequest", await parse(request, "/generate_stream"), lm,
                               max_stop_sequences)
            if p.get("decoder_input_details"):
                raise _Invalid("`decoder_input_details` == true is not supported when streaming tokens")
        except _Invalid as exc:
            err = json.dumps({"error": str(exc), "error_type": "validation"})
            return StreamingResponse(iter([f"data: {err}\n\n"]), status_code=422, media_type="text/event-stream")
        ids, gen = _run(lm, inputs, p)
        return StreamingResponse(sse(ids, gen, p), media_type="text/event-stream")

    @app.post("/")
    async def compat(request: Request) -> Any:
        try:
            body = await parse(request, "/")
            inputs, p = _check(spec, "CompatGenerateRequest", body, lm, max_stop_sequences)
        except _Invalid as exc:
            return invalid(exc)
        ids, gen = _run(lm, inputs, p)
        if body.get("stream"):
            return StreamingResponse(sse(ids, gen, p), media_type="text/event-stream")
        return reply("[GenerateResponse]", [_response(lm, ids, gen, p)])

    return app


@contextmanager
def start_tgi_double(model_dir: str | Path, max_stop_sequences: int = 4) -> Iterator[str]:
    """Serve a TGI double of `model_dir` on loopback; yields its base url."""
    with serve(create_tgi_app(model_dir, max_stop_sequences)) as url:
        yield url
