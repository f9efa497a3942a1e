"""A tiny deterministic fake backend (kind "fake"), registered on import, for fast benchmark tests."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator

from backends.base import BackendSettings, register
from backends.errors import BackendProtocolError, BackendRejected, BackendUnavailable
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)

__all__ = ["FakeBackend", "FakeSettings", "fake_text"]


class FakeSettings(BackendSettings):
    model: str = ""
    max_tokens_cap: int = 1024  # mirrors a real field; must survive the manifest for --resume
    api_key_env: str | None = None
    delay_ms: float = 2.0  # per token
    ttft_ms: float = 3.0
    tokens: int = 6
    variant: str = ""  # outputs differ from variant "" on prompts whose hash is odd
    fail_every: int = 0  # every Nth request raises BackendUnavailable(503)
    reject_word: str = ""  # prompts containing it get a 400
    streaming: bool = True
    break_stream: bool = False  # raise BackendProtocolError after the first chunk
    no_final: bool = False  # end the stream without a final event
    no_counts: bool = False  # report neither completion_tokens nor token_ids
    tokenizer_id: str | None = None
    count_offset: int = 0  # add to completion_tokens (to provoke a count mismatch)


def fake_text(prompt: str, tokens: int, variant: str = "") -> list[str]:
    h = hashlib.sha256(prompt.encode()).hexdigest()
    if variant and int(h[0], 16) % 2:
        h = hashlib.sha256((variant + prompt).encode()).hexdigest()
    return [f" t{h[i : i + 2]}" for i in range(tokens)]


@register("fake", FakeSettings)
class FakeBackend:
    settings: FakeSettings

    def __init__(self, settings: FakeSettings) -> None:
        self.settings = settings
        self.calls = 0

    @property
    def name(self) -> str:
        return self.settings.name

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def health(self) -> bool:
        return True

    async def info(self) -> BackendInfo:
        caps = Capabilities(
            loglikelihood=True,
            streaming=self.settings.streaming,
            batch_prompts=True,
            max_context=512,
            tokenizer_id=self.settings.tokenizer_id,
        )
        return BackendInfo(self.name, "fake", "fake-model", caps)

    def _check(self, prompt: str) -> None:
        self.calls += 1
        s = self.settings
        if s.reject_word and s.reject_word in prompt:
            raise BackendRejected(self.name, "rejected prompt", status=400, field="prompts[0]")
        if s.fail_every and self.calls % s.fail_every == 0:
            err = BackendUnavailable(self.name, "HTTP 503")
            err.status = 503
            raise err

    def _completion(self, prompt: str, params: SamplingParams) -> Completion:
        n = min(self.settings.tokens, params.max_tokens)
        toks = fake_text(prompt, n, self.settings.variant)
        if self.settings.no_counts:
            return Completion(
                text="".join(toks), prompt_tokens=None, completion_tokens=None, finish_reason="eos"
            )
        return Completion(
            text="".join(toks),
            prompt_tokens=len(prompt.split()),
            completion_tokens=n + self.settings.count_offset,
            finish_reason="length" if n == params.max_tokens else "eos",
            token_ids=[int(t.removeprefix(" t"), 16) for t in toks],
        )

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        out = []
        for p in prompts:
            self._check(p)
            c = self._completion(p, params)
            await asyncio.sleep(
                (self.settings.ttft_ms + self.settings.delay_ms * (c.completion_tokens or 0)) / 1e3
            )
            c.ttft_s = self.settings.ttft_ms / 1e3
            out.append(c)
        return out

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        self._check(prompt)
        c = self._completion(prompt, params)
        await asyncio.sleep(self.settings.ttft_ms / 1e3)
        for i, piece in enumerate(fake_text(prompt, c.completion_tokens or 0, self.settings.variant)):
            if i:
                await asyncio.sleep(self.settings.delay_ms / 1e3)
            yield StreamEvent(text=piece)
            if self.settings.break_stream:
                raise BackendProtocolError(self.name, "stream cut")
        if not self.settings.no_final:
            yield StreamEvent(text="", final=c)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        out = []
        for p, c in zip(prompts, continuations, strict=True):
            h = int(hashlib.sha256((self.settings.variant[:0] + p + c).encode()).hexdigest()[:6], 16)
            out.append(LoglikelihoodResult(ll=-(h % 1000) / 100.0 - len(c) * 0.1, is_greedy=False))
        return out
