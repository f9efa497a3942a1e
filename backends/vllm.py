"""The `vllm` kind: any OpenAI-compatible `/v1/completions` server (vLLM, transformers
serve, llama.cpp). Capabilities (log-probs, echo) are probed, not assumed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from backends.base import register
from backends.errors import BackendProtocolError, BackendRejected, BackendUnavailable
from backends.openai_wire import completion_body, echo_scores, parse_choice, parse_usage
from backends.remote import PREFIX_LM_NOTE, RemoteBackendBase, timed
from backends.scoring import continuation_start, split_context
from backends.settings import HttpBackendSettings
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)

__all__ = ["VllmBackend", "VllmSettings"]


class VllmSettings(HttpBackendSettings):
    kind: Literal["vllm"] = "vllm"


@register("vllm", VllmSettings)
class VllmBackend(RemoteBackendBase):
    settings: VllmSettings


    async def _model_name(self) -> str:
        return (await self.info()).model

    async def info(self) -> BackendInfo:
        if self._info is None:
            self._info = await self._probe()
        return self._info

    async def _probe(self) -> BackendInfo:
        entry: dict[str, Any] = {}
        try:
            models = await self._http.request_json("GET", "/v1/models")
            entries = [m for m in models["data"] if isinstance(m, dict)]
        except (BackendUnavailable, BackendRejected) as exc:
            if self.settings.model is None or exc.upstream_status is None:
                raise  # down, or nothing to fall back on
            entries = []  # some servers (transformers serve) fail to list; the configured model is used
        except (KeyError, TypeError):
            raise BackendProtocolError(self.name, "/v1/models: body has no `data` list") from None
        entry = next((m for m in entries if m.get("id") == self.settings.model), entries[0] if entries else {})
        model = self.settings.model or entry.get("id")
        if not model:
            raise BackendProtocolError(self.name, "/v1/models lists no model; set `model` in the backend config")
        probe = {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0, "logprobs": 1, "echo": True}
        try:
            answer = await self._http.request_json("POST", "/v1/completions", probe)
            logprobs = (answer.get("choices") or [{}])[0].get("logprobs") or {}
            echoes = len(logprobs.get("token_logprobs") or []) > 1
            token_logprobs = bool(logprobs.get("token_logprobs"))
        except BackendRejected:
            echoes = token_logprobs = False
        caps = Capabilities(
            loglikelihood=echoes, streaming=True, batch_prompts=False,
            max_context=entry.get("max_model_len"),
            tokenizer_id=self.settings.tokenizer or model, token_logprobs=token_logprobs,
        )
        extra: dict[str, object] = {"url": self.settings.url, "owned_by": entry.get("owned_by"),
                                    "prefix_lm": self._prefix_lm}
        return BackendInfo(name=self.name, kind="vllm", model=model, capabilities=caps, extra=extra)

    def normalizations(self, info: BackendInfo) -> list[str]:
        notes = [
            "max_tokens, temperature (0 = greedy), top_p, seed, stop: sent as-is to /v1/completions",
            f"one prompt per request, at most {self.settings.max_concurrency} in flight, order kept",
            "loglikelihood: echo + logprobs on " + ("token ids" if self.settings.tokenizer else "text (boundary "
                                                    "from text_offset)") if info.capabilities.loglikelihood
            else "loglikelihood: unavailable (server returns no echoed log-probs)",
        ]
        if not info.capabilities.token_logprobs:
            notes.append("per-token log-probs: unavailable on this server")
        if self._prefix_lm:
            notes.append(PREFIX_LM_NOTE)
        return notes

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        info = await self.info()
        return await self._fan_out(prompts, lambda p: self._one(p, params, info))

    async def _one(self, prompt: str, params: SamplingParams, info: BackendInfo) -> Completion:
        body = completion_body(info.model, prompt, params, logprobs=info.capabilities.token_logprobs)
        elapsed = timed()
        answer = await self._http.request_json("POST", "/v1/completions", body)
        completion = parse_choice(self.name, answer)
        completion.latency_s = elapsed()
        return completion

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        info = await self.info()
        body = completion_body(info.model, prompt, params, logprobs=False)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        elapsed = timed()
        ttft: float | None = None
        parts: list[str] = []
        finish: Any = None
        usage: tuple[int | None, int | None] = (None, None)
        done = False
        async for event in self._http.stream_sse("/v1/completions", body):
            if event.data.strip() == "[DONE]":
                done = True
                break
            doc = event.json(self.name)
            if isinstance(doc, dict) and "error" in doc:
                raise BackendUnavailable(self.name, f"stream error: {doc['error']}")
            if isinstance(doc, dict) and doc.get("usage"):
                usage = parse_usage(self.name, doc["usage"])
            for choice in doc.get("choices") or [] if isinstance(doc, dict) else []:
                text = choice.get("text") or ""
                if text:
                    ttft = ttft if ttft is not None else elapsed()
                    parts.append(text)
                    yield StreamEvent(text=text)
                finish = choice.get("finish_reason") or finish
        if finish is None:
            why = "without a finish_reason" if done else "before [DONE] and without a finish_reason"
            raise BackendProtocolError(self.name, f"stream ended {why} (cut mid-way?)")
        final = Completion(
            text="".join(parts), prompt_tokens=usage[0], completion_tokens=usage[1],
            finish_reason="length" if finish == "length" else "stop", latency_s=elapsed(), ttft_s=ttft,
        )
        yield StreamEvent(text="", final=final)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        info = await self.info()
        if not info.capabilities.loglikelihood:
            raise BackendRejected(
                self.name, "loglikelihood is not supported: the server returns no echoed prompt log-probs",
                status=501,
            )
        return await self._fan_out(list(zip(prompts, continuations)), lambda pc: self._score(info.model, *pc))

    async def _score(self, model: str, context: str, continuation: str) -> LoglikelihoodResult:
        ctx, cont = split_context(context, continuation)
        whole = ctx + cont
        n_cont: int | None = None
        prompt: str | list[int] = whole
        if self._tokenizer is not None:
            enc = self._tokenizer(whole, return_offsets_mapping=True)
            ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
            n_cont = len(ids) - continuation_start(offsets, len(ctx))
            prompt = ids
        body = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": 1, "echo": True}
        answer = await self._http.request_json("POST", "/v1/completions", body)
        lps, greedy = echo_scores(self.name, answer, len(ctx), whole if n_cont is None else None, n_cont)
        notes = [PREFIX_LM_NOTE] if self._prefix_lm else []
        return LoglikelihoodResult(ll=sum(lps), token_logprobs=lps, is_greedy=greedy, approximations=notes)
