"""The `abtest` kind: our own v1 contract (`hrm.schemas`) over HTTP, as served by the
standalone HRM server (`hrm.server`, `abtest serve hrm`) and by another abtest router.

`POST /generate` (all prompts in one request), `POST /loglikelihood`, `POST
/generate_stream` (SSE: `token` events `{text}`, then one `done` event with text,
finish_reason, usage and approximations; a router may send an `error` event with an
`ErrorBody`), `GET /readyz` for health. Neither server has an info endpoint: info comes
from the settings plus a `/readyz` probe (whose `model` field the HRM server fills).
Error bodies (`ErrorBody`) map to typed errors in `backends.http.HttpTransport`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import Field, ValidationError

from backends.base import register
from backends.errors import (
    BackendOverloaded,
    BackendProtocolError,
    BackendRejected,
    BackendUnavailable,
)
from backends.remote import RemoteBackendBase, timed
from backends.scoring import split_context
from backends.settings import HttpBackendSettings
from backends.types import (
    BackendInfo,
    Capabilities,
    Completion,
    LoglikelihoodResult,
    SamplingParams,
    StreamEvent,
)
from hrm.schemas import (
    ErrorBody,
    FinishReason,
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    Usage,
)

__all__ = ["AbtestBackend", "AbtestSettings", "generate_body"]

_BATCH_USAGE_NOTE = (
    "usage: the v1 response gives token counts for the whole batch only ({p} prompt / {c} completion "
    "tokens for {n} prompts); per-prompt counts are not reported"
)


class AbtestSettings(HttpBackendSettings):
    kind: Literal["abtest"] = "abtest"
    # All prompts of a call in one /generate request (the v1 contract takes a list). Off:
    # one request per prompt, `max_concurrency` in flight, exact per-prompt token counts.
    batch_prompts: bool = True
    max_context: int | None = Field(default=None, ge=1)  # the server does not report it


def generate_body(prompts: list[str], params: SamplingParams) -> dict[str, Any]:
    """The v1 `GenerateRequest` body. Not validated here: the server is the authority on
    its limits, and its 4xx names the field."""
    req = GenerateRequest.model_construct(
        prompts=prompts, max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p,
        seed=params.seed, stop=list(params.stop) or None,
    )
    return req.model_dump(exclude_none=True, exclude={"user", "backend"})


def _param_notes(params: SamplingParams) -> list[str]:
    if params.ignore_eos:
        return ["ignore_eos: not part of the v1 contract, not sent (generation may end at EOS)"]
    return []


def _raise_error_event(name: str, data: Any) -> None:
    """An SSE `error` event (a router's mid-stream failure) as a typed error."""
    try:
        detail = ErrorBody.model_validate(data).error
    except ValidationError:
        raise BackendProtocolError(name, f"stream error event is not an ErrorBody: {str(data)[:200]!r}") from None
    if detail.type == "invalid_request":
        raise BackendRejected(name, detail.message, status=400, field=detail.field)
    if detail.type == "overloaded":
        raise BackendOverloaded(name, f"overloaded: {detail.message}")
    raise BackendUnavailable(name, f"stream error ({detail.type}): {detail.message}")


@register("abtest", AbtestSettings)
class AbtestBackend(RemoteBackendBase):
    settings: AbtestSettings
    health_path = "/readyz"  # the v1 servers are healthy once their model is loaded

    async def info(self) -> BackendInfo:
        if self._info is None:
            doc = await self._http.request_json("GET", "/readyz")
            if not isinstance(doc, dict):
                raise BackendProtocolError(self.name, f"/readyz: expected an object, got {str(doc)[:200]!r}")
            served = doc.get("model")
            s = self.settings
            caps = Capabilities(loglikelihood=True, streaming=True, batch_prompts=s.batch_prompts,
                                max_context=s.max_context, tokenizer_id=s.tokenizer, token_logprobs=False)
            extra: dict[str, object] = {"prefix_lm": self._prefix_lm, "url": s.url,
                                        "served_model": served, "upstream_backends": doc.get("backends")}
            self._info = BackendInfo(name=self.name, kind="abtest", model=str(s.model or served or self.name),
                                     capabilities=caps, extra=extra)
        return self._info

    def normalizations(self, info: BackendInfo) -> list[str]:
        batching = ("all prompts of a call in one /generate request" if self.settings.batch_prompts
                    else f"one /generate request per prompt, at most {self.settings.max_concurrency} in flight")
        return [
            "native v1 contract (no translation of prompts, max_tokens, temperature, top_p, seed, stop)",
            batching,
            "the server's approximations are passed through; no per-token log-probs or token ids",
            "loglikelihood: /loglikelihood (the server's teacher forcing), context whitespace moved first",
        ]

    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        if self.settings.batch_prompts or len(prompts) == 1:
            return await self._generate_batch(prompts, params)
        batches = await self._fan_out(prompts, lambda p: self._generate_batch([p], params))
        return [b[0] for b in batches]

    async def _generate_batch(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        elapsed = timed()
        doc = await self._http.request_json("POST", "/generate", generate_body(prompts, params))
        try:
            resp = GenerateResponse.model_validate(doc)
        except ValidationError as exc:
            raise BackendProtocolError(self.name, f"/generate: not a GenerateResponse: {exc.errors()[0]}") from None
        n = len(prompts)
        reasons: list[FinishReason | None] = list(resp.finish_reasons) if resp.finish_reasons else [None] * n
        if len(resp.completions) != n or len(reasons) != n:
            raise BackendProtocolError(self.name, f"/generate: {len(resp.completions)} completions and "
                                                  f"{len(reasons)} finish_reasons for {n} prompts")
        latency = elapsed()
        notes = _param_notes(params) + list(resp.approximations)
        per_prompt: list[Usage | None]
        if resp.prompt_usage is not None and len(resp.prompt_usage) == n:
            per_prompt = list(resp.prompt_usage)
        elif resp.usage is not None and n == 1:
            per_prompt = [resp.usage]
        else:  # an older server: batch totals only
            per_prompt = [None] * n
            if resp.usage is not None:
                notes.append(_BATCH_USAGE_NOTE.format(p=resp.usage.prompt_tokens, c=resp.usage.completion_tokens, n=n))
        return [Completion(text=text, prompt_tokens=u.prompt_tokens if u else None,
                           completion_tokens=u.completion_tokens if u else None,
                           finish_reason=reason, latency_s=latency, approximations=list(notes))
                for text, reason, u in zip(resp.completions, reasons, per_prompt)]

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]:
        elapsed = timed()
        ttft: float | None = None
        pieces: list[str] = []
        async for event in self._http.stream_sse("/generate_stream", generate_body([prompt], params)):
            doc = event.json(self.name)
            if event.event == "error" or (event.event is None and isinstance(doc, dict) and "error" in doc):
                _raise_error_event(self.name, doc)
            if not isinstance(doc, dict):
                raise BackendProtocolError(self.name, f"stream event is not an object: {event.data[:200]!r}")
            if event.event == "done":
                yield StreamEvent(text="", final=self._final(doc, "".join(pieces), params, elapsed(), ttft))
                return
            text = doc.get("text")
            if not isinstance(text, str):
                raise BackendProtocolError(self.name, f"token event has no `text`: {event.data[:200]!r}")
            if text:
                ttft = ttft if ttft is not None else elapsed()
                pieces.append(text)
                yield StreamEvent(text=text)
        raise BackendProtocolError(self.name, "stream ended without a `done` event (cut mid-way?)")

    def _final(self, doc: dict[str, Any], streamed: str, params: SamplingParams, latency: float,
               ttft: float | None) -> Completion:
        try:
            usage = doc.get("usage") or {}
            reason = doc["finish_reason"]
            if reason not in ("stop", "length", "eos"):
                raise ValueError(f"finish_reason {reason!r}")
            text = doc.get("text", streamed)
            approx = [str(a) for a in doc.get("approximations") or []]
            p_tok, c_tok = usage.get("prompt_tokens"), usage.get("completion_tokens")
            return Completion(text=str(text), prompt_tokens=None if p_tok is None else int(p_tok),
                              completion_tokens=None if c_tok is None else int(c_tok), finish_reason=reason,
                              latency_s=latency, ttft_s=ttft, approximations=_param_notes(params) + approx)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BackendProtocolError(self.name, f"`done` event: bad or missing {exc}") from None

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
        if len(prompts) != len(continuations):
            raise BackendRejected(self.name, f"continuations has {len(continuations)} items but prompts has "
                                             f"{len(prompts)}", field="continuations")
        pairs = [split_context(p, c) for p, c in zip(prompts, continuations)]
        body = LoglikelihoodRequest.model_construct(prompts=[p for p, _ in pairs],
                                                    continuations=[c for _, c in pairs])
        doc = await self._http.request_json("POST", "/loglikelihood",
                                            body.model_dump(exclude_none=True, exclude={"user", "backend"}))
        try:
            resp = LoglikelihoodResponse.model_validate(doc)
        except ValidationError as exc:
            raise BackendProtocolError(self.name, f"/loglikelihood: not a LoglikelihoodResponse: "
                                                  f"{exc.errors()[0]}") from None
        greedy: list[bool | None] = list(resp.is_greedy) if resp.is_greedy is not None else [None] * len(resp.ll)
        if len(resp.ll) != len(pairs) or len(greedy) != len(pairs):
            raise BackendProtocolError(self.name, f"/loglikelihood: {len(resp.ll)} scores for {len(pairs)} pairs")
        return [LoglikelihoodResult(ll=ll, is_greedy=g, approximations=list(resp.approximations))
                for ll, g in zip(resp.ll, greedy)]
