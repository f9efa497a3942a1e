"""The seed's standalone HRM server: the v1 contract over `AsyncHrmEngine`.

`python -m hrm.server --model-path models/hrm-tiny` (or `abtest serve hrm`). Env
`AIOS_MODEL_PATH`, `AIOS_DEVICE`, `AIOS_MAX_BATCH_SIZE`, `AIOS_MAX_NEW_TOKENS`,
`AIOS_CORS_ORIGINS`, `AIOS_TOKENIZER_PATH` are read; CLI flags win over them. With
`AIOS_API_KEY` or `--api-key-file`, every endpoint but the probes needs a bearer key. Endpoints: POST /generate,
/loglikelihood, /generate_stream (SSE: `token` events, then `done` with usage), GET
/healthz, /readyz, /metrics. The model loads in the background: /healthz answers at
once, /readyz turns 200 when the model is loaded. Independent of `router/` and `backends/`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.responses import JSONResponse, Response, StreamingResponse

from hrm.asgi import AuthMiddleware, BodyLimitMiddleware
from hrm.errors import InvalidRequestError, QueueFullError
from hrm.params import SamplingParams
from hrm.schemas import (
    ErrorBody,
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    Usage,
)

__all__ = ["ServerConfig", "api_keys", "create_server_app", "main"]

log = logging.getLogger("abtest.hrm.server")


@dataclass
class ServerConfig:
    model_path: str = ""
    tokenizer_path: str | None = None  # default: the tokenizer files in model_path
    device: str = "auto"
    host: str = "127.0.0.1"
    port: int = 8000
    max_batch_size: int = 16
    max_new_tokens: int = 1024  # the max_tokens cap
    context_window: int | None = None
    max_queue: int = 256
    max_body_bytes: int = 1_000_000  # larger request bodies get 413
    api_key_file: str | None = None  # one bearer key per line; AIOS_API_KEY adds one more
    threads: int | None = None  # torch intra-op threads; None: 1 on CPU (see hrm/threads.py)
    enable_cors: bool = False
    cors_origins: tuple[str, ...] = ("*",)
    log_level: str = "info"

    @classmethod
    def from_env(cls, **cli: Any) -> ServerConfig:
        """Defaults < AIOS_* env < CLI values that are not None."""
        env = os.environ
        vals: dict[str, Any] = {}
        for key, name, conv in (("model_path", "AIOS_MODEL_PATH", str), ("device", "AIOS_DEVICE", str),
                                ("tokenizer_path", "AIOS_TOKENIZER_PATH", str),
                                ("max_batch_size", "AIOS_MAX_BATCH_SIZE", int),
                                ("max_new_tokens", "AIOS_MAX_NEW_TOKENS", int)):
            if env.get(name):
                vals[key] = conv(env[name])
        if env.get("AIOS_CORS_ORIGINS"):
            vals["cors_origins"] = tuple(o.strip() for o in env["AIOS_CORS_ORIGINS"].split(",") if o.strip())
        vals.update({k: v for k, v in cli.items() if v is not None})
        if "cors_origins" in vals:
            vals["cors_origins"] = tuple(vals["cors_origins"])
        return cls(**vals)


def api_keys(cfg: ServerConfig) -> list[str]:
    """Bearer keys from AIOS_API_KEY and `api_key_file`; none means no auth. The keys never
    enter `ServerConfig`, so `--print-config` cannot show them."""
    keys = [os.environ.get("AIOS_API_KEY", "").strip()]
    if cfg.api_key_file:
        with open(cfg.api_key_file, encoding="utf-8") as f:
            keys += [line.strip() for line in f]
    return [k for k in keys if k and not k.startswith("#")]


def _error(status: int, type_: str, message: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> Response:
    body = ErrorBody(error=ErrorBody.Detail(type=type_, message=message, field=field))
    return Response(body.model_dump_json(), status_code=status, media_type="application/json", headers=headers)


def _field(loc: Sequence[Any]) -> str | None:
    out = ""
    for p in loc[1:] if loc and loc[0] == "body" else loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or None


def create_server_app(cfg: ServerConfig, engine: Any = None) -> FastAPI:
    """The FastAPI app. `engine`: an already loaded `HrmEngine` (tests); else loaded from cfg."""
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

    reg = CollectorRegistry()
    m_req = Counter("hrm_requests", "Requests by endpoint and status", ["endpoint", "status"], registry=reg)
    m_lat = Histogram("hrm_request_seconds", "Request latency", ["endpoint"], registry=reg)
    m_tok = Counter("hrm_tokens", "Tokens in/out", ["direction"], registry=reg)
    m_queue = Gauge("hrm_queue_depth", "Requests waiting in the engine queue", registry=reg)
    st: dict[str, Any] = {"engine": None, "error": None}

    async def load() -> None:
        from hrm.async_engine import AsyncHrmEngine
        from hrm.engine import HrmEngine
        from hrm.loader import resolve_device
        from hrm.threads import configure_threads

        try:
            eng = engine
            if eng is None:
                configure_threads(cfg.threads, resolve_device(cfg.device))
                eng = await asyncio.to_thread(
                    HrmEngine.from_pretrained, cfg.model_path, device=cfg.device,
                    max_batch_size=cfg.max_batch_size, max_tokens_cap=cfg.max_new_tokens,
                    context_window=cfg.context_window, tokenizer_path=cfg.tokenizer_path)
            aeng = AsyncHrmEngine(eng, max_queue=cfg.max_queue)
            await aeng.start()
            st["engine"] = aeng
            log.info(json.dumps({"event": "ready", "model": eng.model_id}))
        except Exception as exc:
            st["error"] = f"{type(exc).__name__}: {exc}"
            log.exception("model load failed")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(load())
        yield
        await task
        if st["engine"] is not None:
            await st["engine"].stop(drain=True)

    app = FastAPI(title="HRM server", version="1", lifespan=lifespan)
    # Added innermost first: request id -> CORS -> auth -> body limit -> routes.
    app.add_middleware(BodyLimitMiddleware, max_bytes=lambda: cfg.max_body_bytes)
    keys = api_keys(cfg)
    if keys:
        app.add_middleware(AuthMiddleware, keys=lambda: keys)
    if cfg.enable_cors:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(cfg.cors_origins), allow_methods=["*"],
                           allow_headers=["*"])

    @app.middleware("http")
    async def request_id(request: Request, call_next: Any) -> Any:
        rid = request.headers.get("x-request-id") or uuid.uuid4().hex
        request.state.rid, t0 = rid[:128], time.perf_counter()
        resp = await call_next(request)
        resp.headers["X-Request-ID"] = request.state.rid
        m_req.labels(request.url.path, str(resp.status_code)).inc()
        m_lat.labels(request.url.path).observe(time.perf_counter() - t0)
        return resp

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        e = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        if e.get("type") == "json_invalid":
            return _error(400, "invalid_request", "body: invalid JSON", "body")
        field = _field(e.get("loc", ())) or "body"
        return _error(400, "invalid_request", f"{field}: {str(e.get('msg')).removeprefix('Value error, ')}", field)

    @app.exception_handler(InvalidRequestError)
    async def on_engine_invalid(request: Request, exc: InvalidRequestError) -> Response:
        return _error(400, "invalid_request", exc.message, exc.field)

    @app.exception_handler(QueueFullError)
    async def on_full(request: Request, exc: QueueFullError) -> Response:
        return _error(429, "overloaded", str(exc), None, {"Retry-After": str(max(1, round(exc.retry_after_s)))})

    def aengine() -> Any:
        if st["engine"] is None:
            raise _NotReady(st["error"] or "model is loading")
        return st["engine"]

    @app.exception_handler(_NotReady)
    async def on_not_ready(request: Request, exc: _NotReady) -> Response:
        return _error(503, "not_ready", str(exc))

    def params_of(body: GenerateRequest) -> tuple[SamplingParams, list[str]]:
        cap, approx = cfg.max_new_tokens, []
        if body.max_tokens > cap:
            approx.append(f"max_tokens capped at {cap} (asked {body.max_tokens})")
        return SamplingParams(max_tokens=min(body.max_tokens, cap), temperature=body.temperature, top_p=body.top_p,
                              seed=body.seed, stop=tuple(body.stop or ())), approx

    @app.post("/generate", response_model=GenerateResponse, response_model_exclude_none=True)
    async def generate(body: GenerateRequest, request: Request) -> GenerateResponse:
        eng = aengine()
        params, approx = params_of(body)
        tasks = [asyncio.ensure_future(eng.generate(p, params)) for p in body.prompts]
        try:
            outs = await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        p_tok, c_tok = sum(o.prompt_tokens for o in outs), sum(len(o.token_ids) for o in outs)
        m_tok.labels("in").inc(p_tok)
        m_tok.labels("out").inc(c_tok)
        per_prompt = [Usage(prompt_tokens=o.prompt_tokens, completion_tokens=len(o.token_ids),
                            total_tokens=o.prompt_tokens + len(o.token_ids)) for o in outs]
        return GenerateResponse(completions=[o.text for o in outs], finish_reasons=[o.finish_reason for o in outs],
                                usage=Usage(prompt_tokens=p_tok, completion_tokens=c_tok, total_tokens=p_tok + c_tok),
                                prompt_usage=per_prompt,
                                backend=eng.engine.model_id, request_id=request.state.rid, approximations=approx)

    @app.post("/loglikelihood", response_model=LoglikelihoodResponse, response_model_exclude_none=True)
    async def loglikelihood(body: LoglikelihoodRequest, request: Request) -> LoglikelihoodResponse:
        eng = aengine()
        outs = await eng.loglikelihood(body.prompts, body.continuations)
        return LoglikelihoodResponse(ll=[o.ll for o in outs], is_greedy=[o.is_greedy for o in outs],
                                     backend=eng.engine.model_id, request_id=request.state.rid)

    @app.post("/generate_stream")
    async def generate_stream(body: GenerateRequest, request: Request) -> Response:
        if len(body.prompts) != 1:
            return _error(400, "invalid_request", "prompts: /generate_stream takes exactly one prompt", "prompts")
        eng = aengine()
        params, approx = params_of(body)
        chunks = eng.stream(body.prompts[0], params)  # validation and queue-full errors raise here
        rid = request.state.rid

        async def sse() -> AsyncIterator[bytes]:
            async for ch in chunks:
                if ch.text:
                    yield f"event: token\ndata: {json.dumps({'text': ch.text})}\n\n".encode()
                if ch.final is not None:
                    f = ch.final
                    n = len(f.token_ids)
                    done = {"text": f.text, "finish_reason": f.finish_reason, "backend": eng.engine.model_id,
                            "usage": {"prompt_tokens": f.prompt_tokens, "completion_tokens": n,
                                      "total_tokens": f.prompt_tokens + n},
                            "request_id": rid, "approximations": approx}
                    yield f"event: done\ndata: {json.dumps(done)}\n\n".encode()

        return StreamingResponse(sse(), media_type="text/event-stream")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> Response:
        if st["engine"] is None:
            return _error(503, "not_ready", st["error"] or "model is loading")
        return JSONResponse({"status": "ready", "model": st["engine"].engine.model_id})

    @app.get("/metrics")
    async def metrics() -> Response:
        if st["engine"] is not None:
            m_queue.set(st["engine"].queue_depth)
        return Response(generate_latest(reg), media_type="text/plain; version=0.0.4")

    return app


class _NotReady(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hrm.server", description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path")
    p.add_argument("--tokenizer-path", help="tokenizer directory (default: the one in --model-path)")
    p.add_argument("--device")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--max-batch-size", type=int)
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--context-window", type=int)
    p.add_argument("--max-queue", type=int)
    p.add_argument("--max-body-bytes", type=int, help="larger request bodies get 413 (default 1000000)")
    p.add_argument("--api-key-file", help="require `Authorization: Bearer <key>`, one key per line (env AIOS_API_KEY)")
    p.add_argument("--threads", type=int, help="torch intra-op threads (default: 1 on CPU, torch's default on GPU)")
    p.add_argument("--enable-cors", action="store_true", default=None)
    p.add_argument("--cors-origins", nargs="*")
    p.add_argument("--log-level")
    p.add_argument("--dry-run", action="store_true", help="load the model, print a summary, exit (no HTTP)")
    p.add_argument("--print-config", action="store_true", help="print the effective config as JSON and exit")
    return p


def run(cfg: ServerConfig, *, dry_run: bool = False, print_config: bool = False) -> int:
    if print_config:
        print(json.dumps(dataclasses.asdict(cfg), indent=2))
        return 0
    if not cfg.model_path:
        print("error: --model-path (or AIOS_MODEL_PATH) is required", file=sys.stderr)
        return 2
    logging.basicConfig(level=cfg.log_level.upper(), format="%(message)s")
    if dry_run:
        from hrm.engine import HrmEngine

        t0 = time.perf_counter()
        eng = HrmEngine.from_pretrained(cfg.model_path, device=cfg.device, max_batch_size=cfg.max_batch_size,
                                        max_tokens_cap=cfg.max_new_tokens, context_window=cfg.context_window,
                                        tokenizer_path=cfg.tokenizer_path)
        print(json.dumps({"model": eng.model_id, "device": str(eng.device), "max_context": eng.max_context,
                          "prefix_lm": eng.prefix_lm, "load_s": round(time.perf_counter() - t0, 3)}))
        return 0
    import uvicorn

    try:
        app = create_server_app(cfg)
    except OSError as exc:
        print(f"error: --api-key-file {cfg.api_key_file}: {exc.strerror}", file=sys.stderr)
        return 2
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level, timeout_graceful_shutdown=30)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    dry, show = args.pop("dry_run"), args.pop("print_config")
    return run(ServerConfig.from_env(**args), dry_run=dry, print_config=show)


if __name__ == "__main__":
    raise SystemExit(main())
