"""Benchmark data types: the fixed request list and the raw per-request records.

Records keep raw `time.perf_counter()` timestamps; every metric is derived from
them in `benchmarks.metrics` (one place).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LoglikelihoodRecord", "Params", "RequestItem", "RequestRecord", "record_key"]


@dataclass(frozen=True)
class Params:
    """Sampling parameters of one request (wire-level; mirrors `hrm.params.SamplingParams`)."""

    max_tokens: int = 32
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Params:
        return cls(
            max_tokens=int(d.get("max_tokens", 32)),
            temperature=float(d.get("temperature", 0.0)),
            top_p=float(d.get("top_p", 1.0)),
            seed=d.get("seed"),
            stop=tuple(d.get("stop") or ()),
        )


@dataclass(frozen=True)
class RequestItem:
    """One prompt of the fixed request list."""

    id: str
    prompt: str
    params: Params
    task: str | None = None
    reference: str | None = None
    # Log-likelihood items: candidate continuations; `answer` indexes the correct one.
    choices: tuple[str, ...] = ()
    answer: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "params": self.params.to_dict(),
            "task": self.task,
            "reference": self.reference,
            "choices": list(self.choices),
            "answer": self.answer,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestItem:
        return cls(
            id=str(d["id"]),
            prompt=str(d["prompt"]),
            params=Params.from_dict(d.get("params") or {}),
            task=d.get("task"),
            reference=d.get("reference"),
            choices=tuple(d.get("choices") or ()),
            answer=d.get("answer"),
        )


@dataclass
class RequestRecord:
    """One finished (or failed) generation request, as appended to requests.jsonl."""

    type: str  # "generate"
    target: str  # benchmark target name (backend name, or "router[/hint]")
    level: str  # load level label, e.g. "c=4" or "r=10.0"
    repeat: int
    request_id: str
    block: int
    warmup: bool
    served_by: str | None = None  # X-Backend header when via router
    t_scheduled: float = 0.0
    t_sent: float = 0.0
    t_first_token: float | None = None
    t_end: float = 0.0
    chunk_times: list[float] = field(default_factory=list)
    text: str = ""
    token_ids: list[int] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_count_source: str | None = None  # "server" | "token_ids" | "tokenizer" | None
    token_count_mismatch: bool = False
    finish_reason: str | None = None
    token_logprobs: list[float] | None = None
    error_class: str | None = None  # None means success
    error: str | None = None
    http_status: int | None = None
    streamed: bool = False
    max_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.error_class is None

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: dataclasses.asdict deep-copies (~100 us per record at 1,000 req/s).
        return dict(vars(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class LoglikelihoodRecord:
    """Scores of one item's continuations on one target (choices or cross-scoring)."""

    type: str  # "loglikelihood" | "cross_score"
    target: str
    request_id: str
    repeat: int
    continuations: list[str] = field(default_factory=list)
    ll: list[float] = field(default_factory=list)
    num_tokens: list[int | None] = field(default_factory=list)
    source: str | None = None  # cross_score: whose output was scored
    error_class: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoglikelihoodRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


def record_key(d: dict[str, Any]) -> tuple[str, ...]:
    """Identity of a record for resume: the same key is never run twice."""
    if d.get("type") == "generate":
        return ("generate", d["target"], d["level"], str(d["repeat"]), d["request_id"])
    return (d["type"], d["target"], str(d.get("repeat", 0)), d["request_id"], str(d.get("source")))
