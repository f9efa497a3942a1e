"""The `tgi` kind: HuggingFace text-generation-inference's native API
(`/generate`, `/generate_stream`, `/info`, `/tokenize`), one prompt per request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from backends.base import register
from backends.errors import BackendProtocolError, BackendRejected, BackendUnavailable
from backends.remote import PREFIX_LM_NOTE, RemoteBackendBase, timed
from backends.scoring import continuation_start, split_context, truncate_at_stop
from backends.settings import HttpBackendSettings
from backends.stops import StopScanner
from backends.tgi_wire import FINISH, parse_generate, tgi_request
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)

__all__ = ["TgiBackend", "TgiSettings"]


class TgiSettings(HttpBackendSettings):
    kind: Literal["tgi"] = "tgi"


def _raise_stream_error(name: str, doc: dict[str, Any]) -> None:
    if doc.get("error_type") == "validation":
        raise BackendRejected(name, str(doc["error"]), status=422)
    raise BackendUnavailable(name, f"stream error ({doc.get('error_type', 'unknown')}): {doc['error']}")


@register("tgi", TgiSettings)
class TgiBackend(RemoteBackendBase):
    settings: TgiSettings


    async def info(self) -> BackendInfo:
        if self._info is None:
            doc = await self._http.request_json("GET", "/info")
            try:
                caps = Capabilities(
                    loglikelihood=True, streaming=True, batch_prompts=False,
                    max_context=int(doc["max_input_tokens"]), tokenizer_id=str(doc["model_id"]),
                    token_logprobs=True,
                )
                extra = {k: doc.get(k) for k in ("max_stop_sequences", "max_total_tokens", "version", "router")}
            except (KeyError, TypeError, ValueError) as exc:
                raise BackendProtocolError(self.name, f"/info lacks {exc}") from None
            extra["prefix_lm"] = self._prefix_lm
            self._info = BackendInfo(name=self.name, kind="tgi", model=str(doc["model_id"]),
                                     capabilities=caps, extra=extra)
        return self._info

    async def _max_stop(self) -> int | None:
        value = (await self.info()).extra.get("max_stop_sequences")
        return int(value) if isinstance(value, int) else None

    def normalizations(self, info: BackendInfo) -> list[str]:
        limit = info.extra.get("max_stop_sequences")
        notes = [
            "max_tokens -> max_new_tokens; temperature=0 -> do_sample=false, temperature omitted",
            "top_p=1.0 omitted (TGI rejects 1.0); seed 0 not sent (TGI needs seed > 0)",
            f"stop: first {limit if limit is not None else 4} sent, the rest cut client-side",
            f"one prompt per request, at most {self.settings.max_concurrency} in flight, order kept",
            "loglikelihood: /generate max_new_tokens=1 + decoder_input_details, boundary from /tokenize offsets",
        ]
        if self._prefix_lm:
            notes.append(PREFIX_LM_NOTE)
        return notes

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        req = tgi_request(params, await self._max_stop())

        async def one(prompt: str) -> Completion:
            elapsed = timed()
            answer = await self._http.request_json("POST", "/generate",
                                                   {"inputs": prompt, "parameters": req.parameters})
            completion = parse_generate(self.name, answer, req.client_stops)
            completion.latency_s = elapsed()
            completion.approximations = list(req.approximations)
            return completion

        return await self._fan_out(prompts, one)

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        req = tgi_request(params, await self._max_stop())
        parameters = dict(req.parameters, decoder_input_details=False)
        scanner = StopScanner(req.client_stops)
        elapsed = timed()
        ttft: float | None = None
        final: Completion | None = None
        n_tokens = 0
        async for event in self._http.stream_sse("/generate_stream", {"inputs": prompt, "parameters": parameters}):
            doc = event.json(self.name)
            if not isinstance(doc, dict):
                raise BackendProtocolError(self.name, f"stream event is not an object: {event.data[:200]!r}")
            if "error" in doc:
                _raise_stream_error(self.name, doc)
            try:
                token = doc["token"]
                piece = "" if token.get("special") else str(token["text"])
                details = doc.get("details")
            except (KeyError, TypeError) as exc:
                raise BackendProtocolError(self.name, f"stream event lacks {exc}") from None
            n_tokens += 1
            out = scanner.feed(piece)
            if out:
                ttft = ttft if ttft is not None else elapsed()
                yield StreamEvent(text=out)
            if scanner.stopped or details:
                d: dict[str, Any] = details or {}
                try:
                    reason = "stop" if scanner.stopped else FINISH[d["finish_reason"]]
                    generated = int(d["generated_tokens"]) if d else n_tokens
                    input_length = int(d["input_length"]) if d else None
                except (KeyError, TypeError, ValueError) as exc:
                    raise BackendProtocolError(self.name, f"last stream event details lack {exc}") from None
                rest = scanner.flush()
                if rest:
                    yield StreamEvent(text=rest)
                text = scanner.text
                if isinstance(doc.get("generated_text"), str):
                    text = truncate_at_stop(doc["generated_text"], req.client_stops)[0]
                final = Completion(text=text, prompt_tokens=input_length, completion_tokens=generated,
                                   finish_reason=reason, latency_s=elapsed(), ttft_s=ttft,  # type: ignore[arg-type]
                                   approximations=list(req.approximations))
                break
        if final is None:
            raise BackendProtocolError(self.name, "stream ended without a final event with details (cut mid-way?)")
        yield StreamEvent(text="", final=final)

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        await self.info()
        return await self._fan_out(list(zip(prompts, continuations)), lambda pc: self._score(*pc))

    async def _score(self, context: str, continuation: str) -> LoglikelihoodResult:
        ctx, cont = split_context(context, continuation)
        whole = ctx + cont
        tokens = await self._http.request_json("POST", "/tokenize", {"inputs": whole})
        body = {"inputs": whole, "parameters": {"max_new_tokens": 1, "details": True,
                                                "decoder_input_details": True, "do_sample": False}}
        answer = await self._http.request_json("POST", "/generate", body)
        try:
            spans = [(int(t["start"]), int(t["stop"])) for t in tokens]
            n_cont = len(spans) - continuation_start(spans, len(ctx))
            prefill = answer["details"]["prefill"]
            picked = prefill[len(prefill) - n_cont:]
            if n_cont <= 0 or len(prefill) - n_cont < 1:
                raise ValueError(f"{n_cont} continuation tokens of {len(prefill)} prefill tokens")
            want = [int(t["id"]) for t in tokens][-n_cont:]
            if [int(t["id"]) for t in picked] != want:
                raise ValueError("prefill token ids differ from /tokenize ids")
            lps = [float(t["logprob"]) for t in picked]
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendProtocolError(self.name, f"cannot score from /tokenize + prefill: {exc}") from None
        notes = [PREFIX_LM_NOTE] if self._prefix_lm else []
        return LoglikelihoodResult(ll=sum(lps), token_logprobs=lps, is_greedy=None, approximations=notes)
