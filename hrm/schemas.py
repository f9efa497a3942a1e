"""The v1 wire contract (seed PF-003), defined once and shared by every layer.

`hrm.server`, `backends`, `router` and `benchmarks` all import these models; nothing
else defines request or response bodies. Additive fields beyond the seed contract
(`backend`, `request_id`, `approximations`, ...) are optional so that a plain seed
client keeps working.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "DEFAULT_MAX_TOKENS_CAP",
    "ErrorBody",
    "FinishReason",
    "GenerateRequest",
    "GenerateResponse",
    "LoglikelihoodRequest",
    "LoglikelihoodResponse",
    "Usage",
]

DEFAULT_MAX_TOKENS_CAP = 1024

FinishReason = Literal["stop", "length", "eos"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GenerateRequest(_Strict):
    prompts: list[str] = Field(min_length=1, max_length=1024)
    max_tokens: int = Field(default=128, ge=1)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    stop: list[str] | None = Field(default=None, max_length=16)
    # Routing hints (router only; the HRM server ignores them).
    user: str | None = Field(default=None, max_length=256)
    backend: str | None = Field(default=None, max_length=128)

    @field_validator("prompts")
    @classmethod
    def _non_empty_prompts(cls, prompts: list[str]) -> list[str]:
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompts[{i}] is empty")
        return prompts

    @field_validator("stop")
    @classmethod
    def _non_empty_stops(cls, stop: list[str] | None) -> list[str] | None:
        if stop is not None and any(not s for s in stop):
            raise ValueError("stop strings must be non-empty")
        return stop


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class GenerateResponse(BaseModel):
    completions: list[str]
    usage: Usage | None = None
    prompt_usage: list[Usage] | None = None  # per prompt, in prompt order (additive)
    finish_reasons: list[FinishReason] | None = None
    backend: str | None = None
    request_id: str | None = None
    approximations: list[str] = Field(default_factory=list)


class LoglikelihoodRequest(_Strict):
    prompts: list[str] = Field(min_length=1, max_length=1024)
    continuations: list[str] = Field(min_length=1, max_length=1024)
    user: str | None = Field(default=None, max_length=256)
    backend: str | None = Field(default=None, max_length=128)

    @model_validator(mode="after")
    def _same_length(self) -> LoglikelihoodRequest:
        if len(self.prompts) != len(self.continuations):
            raise ValueError(
                f"continuations has {len(self.continuations)} items but prompts has {len(self.prompts)}"
            )
        for i, c in enumerate(self.continuations):
            if not c:
                raise ValueError(f"continuations[{i}] is empty")
        return self


class LoglikelihoodResponse(BaseModel):
    ll: list[float]
    is_greedy: list[bool] | None = None
    backend: str | None = None
    request_id: str | None = None
    approximations: list[str] = Field(default_factory=list)


class ErrorBody(BaseModel):
    """Body of every 4xx/5xx: `{"error": {"type", "message", "field"}}`."""

    class Detail(BaseModel):
        type: str
        message: str
        field: str | None = None

    error: Detail
