"""Benchmark targets: a backend (through `backends.base.create_backend`) or the router over HTTP.

Each target performs one request and fills a RequestRecord with raw timestamps;
it never computes metrics. Errors are classified, never raised.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Protocol

import httpx

from benchmarks.records import RequestItem, RequestRecord

__all__ = ["BackendTarget", "RouterTarget", "Target", "classify_error", "finish_record"]


class Target(Protocol):
    name: str
    supports_loglikelihood: bool
    start_error: str | None

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def generate(self, item: RequestItem, rec: RequestRecord) -> None: ...
    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[float]: ...


def classify_error(exc: BaseException, streaming: bool = False) -> tuple[str, int | None]:
    """Map an exception to (error class, HTTP status or None)."""
    from backends.errors import BackendProtocolError, BackendRejected, BackendTimeout, BackendUnavailable

    if isinstance(exc, asyncio.TimeoutError | BackendTimeout | httpx.TimeoutException):
        return "timeout", None
    if isinstance(exc, BackendRejected):
        return f"http_{exc.status}", exc.status
    if isinstance(exc, BackendProtocolError):
        return ("stream_error" if streaming else "protocol_error"), None
    if isinstance(exc, BackendUnavailable):
        status = vars(exc).get("status")
        return (f"http_{status}", status) if status else ("connect_error", None)
    if isinstance(exc, httpx.ConnectError | ConnectionError | OSError):
        return "connect_error", None
    if isinstance(exc, httpx.HTTPError):
        return "stream_error" if streaming else "protocol_error", None
    return f"exception_{type(exc).__name__}", None


def finish_record(rec: RequestRecord) -> None:
    """Post-checks on a completed record: empty output, truncated output, token-count mismatch."""
    if rec.error_class is not None:
        return
    if not rec.text and not rec.completion_tokens:
        rec.error_class, rec.error = "empty_output", "the backend returned no text"
    elif rec.finish_reason is None and rec.streamed:
        rec.error_class, rec.error = "truncated_output", "stream ended without a final event"
    elif rec.finish_reason == "length" and rec.completion_tokens is not None and rec.completion_tokens < rec.max_tokens:
        rec.error_class = "truncated_output"
        rec.error = f"finish_reason=length after {rec.completion_tokens} < max_tokens={rec.max_tokens} tokens"


class BackendTarget:
    """One backend via the `Backend` protocol; streams when the backend can (for TTFT/ITL)."""

    def __init__(self, spec: dict[str, Any], *, timeout_s: float = 60.0, stream: bool = True) -> None:
        from backends.base import create_backend

        self.backend = create_backend(spec)  # raises ValueError on an unknown kind
        self.name = str(spec["name"])
        self.timeout_s = timeout_s
        self.want_stream = stream
        self.streaming = False
        self.supports_loglikelihood = False
        self.start_error: str | None = None
        self.start_error_class = "connect_error"
        self.tokenizer: Any = None
        self._tokenizer_id: str | None = None

    async def start(self) -> None:
        try:
            await self.backend.start()
            info = await self.backend.info()
        except Exception as e:  # noqa: BLE001 - recorded, other backends still run
            self.start_error_class, _ = classify_error(e)
            self.start_error = f"{type(e).__name__}: {e}"
            return
        caps = info.capabilities
        self.streaming = caps.streaming and self.want_stream
        self.supports_loglikelihood = caps.loglikelihood
        self._tokenizer_id = caps.tokenizer_id

    async def close(self) -> None:
        try:
            await self.backend.close()
        except Exception as e:  # noqa: BLE001 - closing is best effort
            self.start_error = self.start_error or f"close failed: {e}"

    def _count_tokens(self, text: str) -> int | None:
        if self.tokenizer is None and self._tokenizer_id and Path(self._tokenizer_id).exists():
            try:
                from transformers import AutoTokenizer

                self.tokenizer = AutoTokenizer.from_pretrained(self._tokenizer_id)
            except Exception:  # noqa: BLE001
                self._tokenizer_id = None
        if self.tokenizer is None:
            return None
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    async def generate(self, item: RequestItem, rec: RequestRecord) -> None:
        from backends.types import SamplingParams

        p = item.params
        params = SamplingParams(max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p,
                                seed=p.seed, stop=p.stop)
        rec.max_tokens = p.max_tokens
        rec.streamed = self.streaming
        if self.start_error is not None:
            rec.t_sent = rec.t_end = time.perf_counter()
            rec.error_class, rec.error = self.start_error_class, f"backend failed to start: {self.start_error}"
            return
        rec.t_sent = time.perf_counter()
        try:
            if self.streaming:
                await asyncio.wait_for(self._stream(item.prompt, params, rec), self.timeout_s)
            else:
                out = await asyncio.wait_for(self.backend.generate([item.prompt], params), self.timeout_s)
                rec.t_end = time.perf_counter()
                c = out[0]
                rec.text = c.text
                if c.ttft_s is not None:
                    rec.t_first_token = rec.t_sent + c.ttft_s
                self._fill_counts(rec, c)
        except Exception as e:  # noqa: BLE001 - every failure becomes a classified record
            rec.t_end = time.perf_counter()
            rec.error_class, rec.http_status = classify_error(e, self.streaming)
            rec.error = f"{type(e).__name__}: {e}"[:500]
        finish_record(rec)

    async def _stream(self, prompt: str, params: Any, rec: RequestRecord) -> None:
        parts: list[str] = []
        final = None
        async for ev in self.backend.stream(prompt, params):
            now = time.perf_counter()
            if ev.text:
                parts.append(ev.text)
                rec.chunk_times.append(now)
                if rec.t_first_token is None:
                    rec.t_first_token = now
            if ev.final is not None:
                final = ev.final
        rec.t_end = time.perf_counter()
        rec.text = "".join(parts)
        if final is not None:
            if final.text and final.text != rec.text and not parts:
                rec.text = final.text
            self._fill_counts(rec, final)

    def _fill_counts(self, rec: RequestRecord, c: Any) -> None:
        rec.finish_reason = c.finish_reason
        rec.prompt_tokens = c.prompt_tokens
        rec.token_ids = list(c.token_ids) if c.token_ids is not None else None
        rec.token_logprobs = list(c.token_logprobs) if c.token_logprobs else None
        if c.completion_tokens is not None:
            rec.completion_tokens, rec.token_count_source = c.completion_tokens, "server"
            if rec.token_ids is not None and len(rec.token_ids) != c.completion_tokens:
                rec.token_count_mismatch = True
        elif rec.token_ids is not None:
            rec.completion_tokens, rec.token_count_source = len(rec.token_ids), "token_ids"
        else:
            n = self._count_tokens(rec.text)
            if n is not None:
                rec.completion_tokens, rec.token_count_source = n, "tokenizer"

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[float]:
        res = await asyncio.wait_for(self.backend.loglikelihood(prompts, continuations), self.timeout_s)
        return [r.ll for r in res]


class _HttpxTransport:
    def __init__(self, url: str, timeout_s: float, max_connections: int) -> None:
        self.client = httpx.AsyncClient(
            base_url=url, timeout=httpx.Timeout(timeout_s, connect=5.0),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections))

    async def post(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        r = await self.client.post(path, content=body, headers={"content-type": "application/json"})
        return r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content

    async def aclose(self) -> None:
        await self.client.aclose()


class _LeanTransport:
    def __init__(self, url: str, timeout_s: float, max_connections: int) -> None:
        from benchmarks.lean_http import LeanClient

        self.client = LeanClient(url, max_connections=max_connections)

    async def post(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        r = await self.client.post(path, body, {"content-type": "application/json"})
        return r.status, r.headers, r.content

    async def aclose(self) -> None:
        await self.client.aclose()


def _transports() -> dict[str, Any]:
    """http:// uses the lean client (low CPU per request), https:// uses httpx."""
    return {"http": _LeanTransport, "https": _HttpxTransport}


class RouterTarget:
    """The router over HTTP: POST /generate with one prompt; records the X-Backend header."""

    def __init__(self, url: str, *, hint: str | None = None, timeout_s: float = 60.0,
                 max_connections: int = 256) -> None:
        self.url = url.rstrip("/")
        scheme = self.url.split("://", 1)[0]
        if scheme not in _transports():
            raise ValueError(f"--via-router {url!r}: URL must start with http:// or https://")
        self.hint = hint
        self.name = f"router/{hint}" if hint else "router"
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.supports_loglikelihood = True
        self.start_error: str | None = None
        self._t: Any = None

    async def start(self) -> None:
        self._t = _transports()[self.url.split("://", 1)[0]](self.url, self.timeout_s, self.max_connections)

    async def close(self) -> None:
        if self._t is not None:
            await self._t.aclose()

    async def generate(self, item: RequestItem, rec: RequestRecord) -> None:
        from hrm.schemas import ErrorBody, GenerateRequest, GenerateResponse

        assert self._t is not None, "start() first"
        p = item.params
        body = GenerateRequest(prompts=[item.prompt], max_tokens=p.max_tokens, temperature=p.temperature,
                               top_p=p.top_p, seed=p.seed, stop=list(p.stop) or None, backend=self.hint)
        data = body.model_dump_json(exclude_none=True).encode()
        rec.max_tokens = p.max_tokens
        rec.t_sent = time.perf_counter()
        try:
            status, headers, content = await asyncio.wait_for(self._t.post("/generate", data), self.timeout_s)
            rec.t_end = time.perf_counter()
            rec.served_by = headers.get("x-backend")
            rec.http_status = status
            if status >= 400:
                rec.error_class = f"http_{status}"
                try:
                    rec.error = ErrorBody.model_validate_json(content).error.message[:500]
                except Exception:  # noqa: BLE001
                    rec.error = content[:500].decode("utf-8", "replace")
            else:
                out = GenerateResponse.model_validate_json(content)
                rec.text = out.completions[0] if out.completions else ""
                rec.served_by = rec.served_by or out.backend
                if out.finish_reasons:
                    rec.finish_reason = out.finish_reasons[0]
                if out.usage is not None:
                    rec.prompt_tokens = out.usage.prompt_tokens
                    rec.completion_tokens = out.usage.completion_tokens
                    rec.token_count_source = "server"
        except Exception as e:  # noqa: BLE001
            rec.t_end = time.perf_counter()
            rec.error_class, _ = classify_error(e)
            rec.error = f"{type(e).__name__}: {e}"[:500]
        finish_record(rec)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[float]:
        assert self._t is not None, "start() first"
        body: dict[str, Any] = {"prompts": prompts, "continuations": continuations}
        if self.hint:
            body["backend"] = self.hint
        status, _, content = await asyncio.wait_for(
            self._t.post("/loglikelihood", json.dumps(body).encode()), self.timeout_s)
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {content[:200]!r}")
        return [float(x) for x in json.loads(content)["ll"]]
