"""`Sequence`: one request's state through the engine (nano-vllm style; no torch)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto

from hrm.params import CompletionOutput, SamplingParams
from hrm.schemas import FinishReason
from hrm.stops import Decoder, Detokenizer, StopChecker, final_text

__all__ = ["SeqStatus", "Sequence"]


class SeqStatus(Enum):
    WAITING = auto()
    RUNNING = auto()
    FINISHED = auto()


@dataclass(eq=False)
class Sequence:
    seq_id: int
    prompt_ids: list[int]
    params: SamplingParams
    max_tokens: int  # effective: capped by the engine cap and the context window
    seed: int
    eos_ids: frozenset[int]
    tokenizer: Decoder
    incremental: bool = False  # detokenize as we go (streams and stop strings)
    on_token: Callable[[Sequence, str], None] | None = None  # called with each text delta
    status: SeqStatus = SeqStatus.WAITING
    output_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    text: str = ""
    emitted: int = 0  # chars of `text` already handed to on_token
    cancelled: bool = False  # set from another thread; the next step retires the sequence
    t_start: float = field(default_factory=time.perf_counter)
    t_first_token: float | None = None
    t_end: float | None = None
    _detok: Detokenizer | None = None
    _stops: StopChecker | None = None

    def __post_init__(self) -> None:
        if self.params.stop:
            self.incremental = True
            self._stops = StopChecker(self.params.stop)
        if self.incremental:
            self._detok = Detokenizer(self.tokenizer, self.prompt_ids)

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids)

    @property
    def capacity(self) -> int:
        """KV positions this sequence may occupy."""
        return self.prompt_len + self.max_tokens

    @property
    def last_pos(self) -> int:
        """Cache position of the newest token (the one decode feeds next)."""
        return self.prompt_len + len(self.output_ids) - 1

    def append(self, token_id: int, logprob: float, now: float) -> bool:
        """Record a sampled token; returns True when the sequence is finished."""
        if self.t_first_token is None:
            self.t_first_token = now
        self.output_ids.append(token_id)
        self.logprobs.append(logprob)
        if self.cancelled:
            return self._finish("length", now)
        if token_id in self.eos_ids and not self.params.ignore_eos:
            return self._finish("eos", now)
        if self._detok is not None:
            delta = self._detok.push(token_id)
            if delta and self._grow(delta):
                return self._finish("stop", now)
        if len(self.output_ids) >= self.max_tokens:
            return self._finish("length", now)
        return False

    def _grow(self, delta: str) -> bool:
        """Append text; truncate at the earliest stop match and report whether one hit."""
        start = len(self.text)
        self.text += delta
        hit = self._stops.find(self.text, start) if self._stops is not None else -1
        if hit >= 0:
            self.text = self.text[:hit]
            return True
        if self.on_token is not None:
            hold = self._stops.holdback(self.text) if self._stops is not None else 0
            upto = len(self.text) - hold
            if upto > self.emitted:
                self.on_token(self, self.text[self.emitted : upto])
                self.emitted = upto
        return False

    def _finish(self, reason: FinishReason, now: float) -> bool:
        self.finish_reason, self.status, self.t_end = reason, SeqStatus.FINISHED, now
        if not self.incremental:
            ids = self.output_ids[:-1] if reason == "eos" else self.output_ids
            self.text = final_text(self.tokenizer, ids)
        if self.on_token is not None and len(self.text) > self.emitted:
            self.on_token(self, self.text[self.emitted :])
            self.emitted = len(self.text)
        return True

    def output(self) -> CompletionOutput:
        return CompletionOutput(
            text=self.text,
            token_ids=list(self.output_ids),
            prompt_tokens=self.prompt_len,
            finish_reason=self.finish_reason or "length",
            token_logprobs=list(self.logprobs),
            t_start=self.t_start,
            t_first_token=self.t_first_token,
            t_end=self.t_end,
        )
