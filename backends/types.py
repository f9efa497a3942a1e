"""Types the backend interface speaks. Wire bodies live in `hrm.schemas`; engine
dataclasses in `hrm.params`. This module adds what only the adapter layer needs."""

from __future__ import annotations

from dataclasses import dataclass, field

from hrm.params import SamplingParams
from hrm.schemas import FinishReason

__all__ = ["BackendInfo", "Capabilities", "Completion", "LoglikelihoodResult", "SamplingParams", "StreamEvent"]


@dataclass(frozen=True)
class Capabilities:
    loglikelihood: bool
    streaming: bool
    batch_prompts: bool  # one request may carry many prompts
    max_context: int | None
    tokenizer_id: str | None
    token_logprobs: bool = False


@dataclass(frozen=True)
class BackendInfo:
    name: str
    kind: str
    model: str
    capabilities: Capabilities
    extra: dict[str, object] = field(default_factory=dict)


@dataclass
class Completion:
    """One prompt's result, normalized across engines."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: FinishReason | None
    token_ids: list[int] | None = None
    token_logprobs: list[float] | None = None
    # Seconds, measured by the adapter from when it sent the request.
    latency_s: float | None = None
    ttft_s: float | None = None
    approximations: list[str] = field(default_factory=list)


@dataclass
class LoglikelihoodResult:
    ll: float
    token_logprobs: list[float] | None = None
    is_greedy: bool | None = None
    approximations: list[str] = field(default_factory=list)


@dataclass
class StreamEvent:
    """A streamed chunk of text; the last event has `final` set (usage + finish reason)."""

    text: str
    final: Completion | None = None
