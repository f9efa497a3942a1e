"""The router as a benchmark target, over HTTP only (POST /generate; X-Backend recorded)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from benchmarks.records import RequestItem, RequestRecord
from benchmarks.targets.base import classify_error, finish_record

__all__ = ["RouterTarget"]


class _HttpxTransport:
    def __init__(self, url: str, timeout_s: float, max_connections: int) -> None:
        self.client = httpx.AsyncClient(
            base_url=url,
            timeout=httpx.Timeout(timeout_s, connect=5.0),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

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

    def __init__(
        self,
        url: str,
        *,
        hint: str | None = None,
        timeout_s: float = 60.0,
        max_connections: int = 256,
        stream: bool = False,
    ) -> None:
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
        self.stream = stream  # POST /generate_stream (SSE) for TTFT/ITL through the router
        self._sse: httpx.AsyncClient | None = None

    async def start(self) -> None:
        self._t = _transports()[self.url.split("://", 1)[0]](self.url, self.timeout_s, self.max_connections)
        if self.stream:
            self._sse = httpx.AsyncClient(
                base_url=self.url,
                timeout=httpx.Timeout(self.timeout_s, connect=5.0),
                limits=httpx.Limits(max_connections=self.max_connections),
            )

    async def close(self) -> None:
        if self._t is not None:
            await self._t.aclose()
        if self._sse is not None:
            await self._sse.aclose()

    async def generate(self, item: RequestItem, rec: RequestRecord) -> None:
        from hrm.schemas import ErrorBody, GenerateRequest, GenerateResponse

        assert self._t is not None, "start() first"
        p = item.params
        body = GenerateRequest(
            prompts=[item.prompt],
            max_tokens=p.max_tokens,
            temperature=p.temperature,
            top_p=p.top_p,
            seed=p.seed,
            stop=list(p.stop) or None,
            backend=self.hint,
        )
        data = body.model_dump_json(exclude_none=True).encode()
        rec.max_tokens = p.max_tokens
        if self._sse is not None:
            await self._generate_stream(data, rec)
            return
        rec.t_sent = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout_s):
                status, headers, content = await self._t.post("/generate", data)
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

    async def _generate_stream(self, data: bytes, rec: RequestRecord) -> None:
        """SSE from /generate_stream: `token` events {text}, one `done` event, or an `error` event."""
        assert self._sse is not None
        rec.streamed = True
        rec.t_sent = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._read_sse(data, rec)
        except Exception as e:  # noqa: BLE001
            rec.error_class, _ = classify_error(e, streaming=True)
            rec.error = f"{type(e).__name__}: {e}"[:500]
        rec.t_end = time.perf_counter()
        finish_record(rec)

    async def _read_sse(self, data: bytes, rec: RequestRecord) -> None:
        assert self._sse is not None
        parts: list[str] = []
        async with self._sse.stream(
            "POST", "/generate_stream", content=data, headers={"content-type": "application/json"}
        ) as resp:
            rec.served_by, rec.http_status = resp.headers.get("x-backend"), resp.status_code
            if resp.status_code >= 400:
                rec.error_class = f"http_{resp.status_code}"
                rec.error = (await resp.aread())[:500].decode("utf-8", "replace")
                return
            event: str | None = None
            async for line in resp.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    payload, now = json.loads(line[5:].strip()), time.perf_counter()
                    if event == "token" and payload.get("text"):
                        parts.append(payload["text"])
                        rec.chunk_times.append(now)
                        rec.t_first_token = rec.t_first_token or now
                    elif event == "done":
                        rec.finish_reason = payload.get("finish_reason")
                        rec.served_by = rec.served_by or payload.get("backend")
                        usage = payload.get("usage") or {}
                        if usage:
                            rec.prompt_tokens = usage.get("prompt_tokens")
                            rec.completion_tokens = usage.get("completion_tokens")
                            rec.token_count_source = "server"
                    elif event == "error":
                        rec.error_class = "stream_error"
                        rec.error = str(payload.get("error", payload))[:500]
                elif not line:
                    event = None
        rec.t_end = time.perf_counter()
        rec.text = "".join(parts)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[float]:
        assert self._t is not None, "start() first"
        body: dict[str, Any] = {"prompts": prompts, "continuations": continuations}
        if self.hint:
            body["backend"] = self.hint
        async with asyncio.timeout(self.timeout_s):
            status, _, content = await self._t.post("/loglikelihood", json.dumps(body).encode())
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {content[:200]!r}")
        return [float(x) for x in json.loads(content)["ll"]]
