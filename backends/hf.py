"""The `hf` kind: transformers in-process (`AutoModelForCausalLM.generate`), run in a
worker thread so the event loop is never blocked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal, TypeVar

from backends.base import register
from backends.errors import BackendRejected, BackendUnavailable
from backends.hf_compute import HfModel, load_hf, resolve_device_dtype
from backends.settings import InProcessSettings
from backends.stops import StopScanner
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)

__all__ = ["HfBackend", "HfSettings"]

T = TypeVar("T")


class HfSettings(InProcessSettings):
    kind: Literal["hf"] = "hf"


def _seed_note(prompts: list[str], params: SamplingParams) -> list[str]:
    if params.seed is not None and not params.greedy and len(prompts) > 1:
        return ["seed: hf seeds the torch RNG once per batch, so a prompt's sample depends on its batch-mates"]
    return []


@register("hf", HfSettings)
class HfBackend:
    settings: HfSettings

    def __init__(self, settings: HfSettings) -> None:
        self.settings = settings
        self._hf: HfModel | None = None
        self._lock = asyncio.Semaphore(settings.max_concurrency)  # re-created in start() on the running loop

    def __repr__(self) -> str:
        return f"HfBackend(name={self.name!r}, model={self.settings.model!r})"

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def _model(self) -> HfModel:
        if self._hf is None:
            raise BackendUnavailable(self.name, "backend not started (call start() first)")
        return self._hf

    async def start(self) -> None:
        self._lock = asyncio.Semaphore(self.settings.max_concurrency)
        if self._hf is None:
            s = self.settings
            # Resolve transformers' lazy attributes on this thread: two loads racing
            # through the lazy module in worker threads can fail with ImportError.
            from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401

            from hrm.threads import configure_threads

            try:
                configure_threads(s.threads, resolve_device_dtype(s.device, s.dtype)[0])
                self._hf = await asyncio.to_thread(load_hf, s.model, s.device, s.dtype)
            except (OSError, ValueError) as exc:
                raise BackendUnavailable(self.name, f"cannot load {s.model!r}: {exc}") from None

    async def close(self) -> None:
        self._hf = None

    async def health(self) -> bool:
        return self._hf is not None

    async def info(self) -> BackendInfo:
        m = self._model
        caps = Capabilities(loglikelihood=True, streaming=True, batch_prompts=True, max_context=m.max_context,
                            tokenizer_id=m.model_id, token_logprobs=True)
        return BackendInfo(name=self.name, kind="hf", model=m.model_id, capabilities=caps,
                           extra={"device": m.device, "prefix_lm": m.prefix_lm})

    def normalizations(self, info: BackendInfo) -> list[str]:
        return [
            "temperature=0 -> do_sample=False; sampling sets top_k=0 (transformers defaults to 50)",
            "stop -> generate(stop_strings=...) and the text is cut at the stop",
            f"prompts batched {self.settings.max_batch_size} at a time with left padding; seed seeds the batch",
            "loglikelihood: teacher forcing in-process",
        ] + (["prefix-LM model scored causally"] if info.extra.get("prefix_lm") else [])

    def _check_lengths(self, prompts: list[str], params: SamplingParams, field: str = "prompts") -> None:
        m = self._model
        if m.max_context is None:
            return
        for i, prompt in enumerate(prompts):
            n = len(m.tokenizer(prompt)["input_ids"])
            if n + params.max_tokens > m.max_context:
                raise BackendRejected(
                    self.name, f"{field}[{i}] has {n} tokens; with max_tokens={params.max_tokens} it exceeds the "
                    f"context window of {m.max_context}", status=400, field=f"{field}[{i}]")

    async def _work(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking transformers work in a thread; its failures become BackendUnavailable."""
        try:
            return await asyncio.to_thread(fn, *args)
        except (RuntimeError, ValueError, IndexError) as exc:
            raise BackendUnavailable(self.name, f"transformers failed: {exc!r}") from None

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        m = self._model
        self._check_lengths(prompts, params)
        size = self.settings.max_batch_size
        out: list[Completion] = []
        loop = asyncio.get_running_loop()
        for i in range(0, len(prompts), size):
            chunk = prompts[i : i + size]
            async with self._lock:
                t0 = loop.time()
                done = await self._work(m.generate, chunk, params)
                elapsed = loop.time() - t0
            for c in done:
                c.latency_s = elapsed
                c.approximations = _seed_note(chunk, params)
            out.extend(done)
        return out

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        from transformers import TextIteratorStreamer

        m = self._model
        self._check_lengths([prompt], params, field="prompt")
        loop = asyncio.get_running_loop()
        async with self._lock:
            streamer = TextIteratorStreamer(m.tokenizer, skip_prompt=True, skip_special_tokens=True)
            t0 = loop.time()
            job = asyncio.ensure_future(self._work(m.generate, [prompt], params, streamer))
            scanner = StopScanner(params.stop)
            ttft: float | None = None
            pieces = iter(streamer)
            while not scanner.stopped:
                piece = await asyncio.to_thread(next, pieces, None)
                if piece is None:
                    break
                out = scanner.feed(piece)
                if out:
                    ttft = ttft if ttft is not None else loop.time() - t0
                    yield StreamEvent(text=out)
            rest = scanner.flush()
            if rest:
                yield StreamEvent(text=rest)
            final = (await job)[0]
        final.latency_s, final.ttft_s = loop.time() - t0, ttft
        yield StreamEvent(text="", final=final)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        m = self._model
        pairs = list(zip(prompts, continuations))
        size = self.settings.max_batch_size
        out: list[LoglikelihoodResult] = []
        for i in range(0, len(pairs), size):
            async with self._lock:
                out.extend(await self._work(m.score, pairs[i : i + size]))
        return out
