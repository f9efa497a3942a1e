"""Engine-level request parameters and results (plain dataclasses, no pydantic).

These are what `hrm.engine` consumes and returns. Adapters in `backends/` convert
the wire types in `hrm.schemas` to and from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hrm.schemas import FinishReason

__all__ = ["CompletionOutput", "LoglikelihoodOutput", "SamplingParams", "TokenChunk"]


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 128
    temperature: float = 0.7  # 0 means greedy
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass
class CompletionOutput:
    text: str
    token_ids: list[int]
    prompt_tokens: int
    finish_reason: FinishReason
    token_logprobs: list[float] = field(default_factory=list)  # log p of each generated token
    # Engine timestamps (time.perf_counter()): when the request was admitted and
    # when its first token was sampled. None where the engine does not know.
    t_start: float | None = None
    t_first_token: float | None = None
    t_end: float | None = None


@dataclass
class LoglikelihoodOutput:
    ll: float  # sum of the continuation's token log-probs
    token_logprobs: list[float]
    is_greedy: bool  # every continuation token was the argmax
    num_tokens: int


@dataclass
class TokenChunk:
    """One streamed piece: new text (may be empty while a UTF-8 char is incomplete).

    The last chunk of a stream has `final` set, with usage and finish reason.
    """

    text: str
    token_ids: list[int]
    final: CompletionOutput | None = None
