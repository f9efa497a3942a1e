"""The `hrm` kind: the in-process HRM engine (`hrm.async_engine.AsyncHrmEngine`,
continuous batching) behind the common interface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal, TypeVar

from pydantic import Field

from backends.base import register
from backends.errors import BackendOverloaded, BackendRejected, BackendUnavailable
from backends.scoring import split_context
from backends.settings import InProcessSettings
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)
from hrm.errors import CheckpointError, HrmError, InvalidRequestError, QueueFullError
from hrm.params import CompletionOutput

__all__ = ["HrmBackend", "HrmSettings"]

T = TypeVar("T")


class HrmSettings(InProcessSettings):
    kind: Literal["hrm"] = "hrm"
    max_queue: int = Field(default=256, ge=1)
    max_tokens_cap: int = Field(default=1024, ge=1)
    context_window: int | None = Field(default=None, ge=1)


def _completion(out: CompletionOutput, t_send: float) -> Completion:
    end = out.t_end if out.t_end is not None else time.perf_counter()
    return Completion(
        text=out.text, prompt_tokens=out.prompt_tokens, completion_tokens=len(out.token_ids),
        finish_reason=out.finish_reason, token_ids=list(out.token_ids),
        token_logprobs=list(out.token_logprobs) or None, latency_s=end - t_send,
        ttft_s=None if out.t_first_token is None else out.t_first_token - t_send,
    )


@register("hrm", HrmSettings)
class HrmBackend:
    settings: HrmSettings

    def __init__(self, settings: HrmSettings) -> None:
        self.settings = settings
        self._engine: Any = None  # hrm.async_engine.AsyncHrmEngine once started

    def __repr__(self) -> str:
        return f"HrmBackend(name={self.name!r}, model={self.settings.model!r})"

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def _async(self) -> Any:
        if self._engine is None:
            raise BackendUnavailable(self.name, "backend not started (call start() first)")
        return self._engine

    async def start(self) -> None:
        if self._engine is not None:
            return
        from transformers import AutoConfig, AutoTokenizer  # noqa: F401  (resolve lazy imports on this thread)

        from hrm.async_engine import AsyncHrmEngine
        from hrm.engine import HrmEngine
        from hrm.loader import resolve_device
        from hrm.threads import configure_threads

        s = self.settings
        try:
            configure_threads(s.threads, resolve_device(s.device))
            engine = await asyncio.to_thread(
                HrmEngine.from_pretrained, s.model, device=s.device, dtype=s.dtype,
                max_batch_size=s.max_batch_size, max_tokens_cap=s.max_tokens_cap, context_window=s.context_window,
            )
        except (CheckpointError, OSError, ValueError) as exc:
            raise BackendUnavailable(self.name, f"cannot load {s.model!r}: {exc}") from None
        self._engine = AsyncHrmEngine(engine, max_queue=s.max_queue)
        await self._engine.start()

    async def close(self) -> None:
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.stop()

    async def health(self) -> bool:
        return self._engine is not None

    async def info(self) -> BackendInfo:
        engine = self._async.engine if hasattr(self._async, "engine") else None
        max_ctx = getattr(engine, "max_context", None)
        model_id = getattr(engine, "model_id", self.settings.model)
        caps = Capabilities(loglikelihood=True, streaming=True, batch_prompts=True, max_context=max_ctx,
                            tokenizer_id=self.settings.model, token_logprobs=True)
        extra = {"prefix_lm": getattr(engine, "prefix_lm", None), "queue_depth": self._async.queue_depth,
                 "num_running": self._async.num_running}
        return BackendInfo(name=self.name, kind="hrm", model=str(model_id), capabilities=caps, extra=extra)

    def normalizations(self, info: BackendInfo) -> list[str]:
        return [
            "native engine parameters (no translation); continuous batching in-process",
            f"max_tokens capped at {self.settings.max_tokens_cap} (max_tokens_cap)",
            "loglikelihood: teacher forcing in the engine",
        ]

    async def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except QueueFullError as exc:
            raise BackendOverloaded(self.name, str(exc)) from None
        except InvalidRequestError as exc:
            raise BackendRejected(self.name, exc.message, status=400, field=exc.field) from None
        except HrmError as exc:
            raise BackendUnavailable(self.name, f"engine error: {exc}") from None

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        engine = self._async
        t_send = time.perf_counter()
        outs = await self._call(asyncio.gather(*(engine.generate(p, params) for p in prompts)))
        notes = self._notes(params)
        done = [_completion(o, t_send) for o in outs]
        for c in done:
            c.approximations = list(notes)
        return done

    def _notes(self, params: SamplingParams) -> list[str]:
        cap = self.settings.max_tokens_cap
        if params.max_tokens > cap:
            return [f"max_tokens: the engine caps generation at {cap} tokens (max_tokens_cap)"]
        return []

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        t_send = time.perf_counter()
        chunks = self._async.stream(prompt, params).__aiter__()
        ttft: float | None = None
        try:
            while True:
                try:
                    chunk = await self._call(chunks.__anext__())
                except StopAsyncIteration:
                    raise BackendUnavailable(self.name, "engine stream ended without a final chunk") from None
                if chunk.text:
                    ttft = ttft if ttft is not None else time.perf_counter() - t_send
                    yield StreamEvent(text=chunk.text)
                if chunk.final is not None:
                    final = _completion(chunk.final, t_send)
                    final.approximations = self._notes(params)
                    final.ttft_s = final.ttft_s if final.ttft_s is not None else ttft
                    yield StreamEvent(text="", final=final)
                    return
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:  # a consumer that stops early cancels the engine request
                await close()

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        pairs = [split_context(p, c) for p, c in zip(prompts, continuations)]
        outs = await self._call(self._async.loglikelihood([p for p, _ in pairs], [c for _, c in pairs]))
        return [LoglikelihoodResult(ll=o.ll, token_logprobs=list(o.token_logprobs), is_greedy=o.is_greedy)
                for o in outs]
