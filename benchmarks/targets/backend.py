"""A backend as a benchmark target, through `backends.base.create_backend` and the Backend protocol."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from benchmarks.records import RequestItem, RequestRecord
from benchmarks.targets.base import classify_error, finish_record

__all__ = ["BackendTarget"]


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
        params = SamplingParams(
            max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p, seed=p.seed, stop=p.stop
        )
        rec.max_tokens = p.max_tokens
        rec.streamed = self.streaming
        if self.start_error is not None:
            rec.t_sent = rec.t_end = time.perf_counter()
            rec.error_class, rec.error = (
                self.start_error_class,
                f"backend failed to start: {self.start_error}",
            )
            return
        rec.t_sent = time.perf_counter()
        try:
            if self.streaming:
                async with asyncio.timeout(self.timeout_s):
                    await self._stream(item.prompt, params, rec)
            else:
                async with asyncio.timeout(self.timeout_s):
                    out = await self.backend.generate([item.prompt], params)
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
        async with asyncio.timeout(self.timeout_s):
            res = await self.backend.loglikelihood(prompts, continuations)
        return [r.ll for r in res]
