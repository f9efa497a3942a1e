"""OpenAI-compatible wire types for `/v1/completions` and `/v1/models` (router only)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hrm.schemas import Usage

__all__ = ["CompletionChoice", "CompletionRequest", "CompletionResponse", "ModelCard", "ModelList"]


class CompletionRequest(BaseModel):
    """The subset of OpenAI's completions request we honour. Unknown fields are ignored
    (SDKs send extras); `n` > 1, `logprobs`, `echo`, `suffix` are refused by name."""

    model_config = ConfigDict(extra="ignore")
    model: str = Field(max_length=256)
    prompt: str | list[str]
    max_tokens: int | None = Field(default=16, ge=1)
    temperature: float | None = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float | None = Field(default=1.0, gt=0.0, le=1.0)
    n: int | None = Field(default=1, ge=1, le=1)
    stream: bool | None = False
    stream_options: dict[str, Any] | None = None
    stop: str | list[str] | None = None
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    user: str | None = Field(default=None, max_length=256)
    logprobs: None = None
    echo: Literal[False] | None = None
    suffix: None = None

    @field_validator("prompt")
    @classmethod
    def _non_empty(cls, prompt: str | list[str]) -> str | list[str]:
        if isinstance(prompt, str):
            if not prompt:
                raise ValueError("prompt is empty")
            return prompt
        prompts = prompt
        if not prompts:
            raise ValueError("must hold at least one prompt")
        if len(prompts) > 1024:
            raise ValueError("at most 1024 prompts")
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt[{i}] is empty")
        return prompt

    @field_validator("stop")
    @classmethod
    def _stops(cls, stop: str | list[str] | None) -> str | list[str] | None:
        stops = [stop] if isinstance(stop, str) else (stop or [])
        if any(not s for s in stops) or len(stops) > 16:
            raise ValueError("stop: up to 16 non-empty strings")
        return stop

    def prompts(self) -> list[str]:
        return [self.prompt] if isinstance(self.prompt, str) else list(self.prompt)

    def stops(self) -> list[str] | None:
        return [self.stop] if isinstance(self.stop, str) else self.stop


class CompletionChoice(BaseModel):
    text: str
    index: int
    logprobs: None = None
    finish_reason: str | None


class CompletionResponse(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "abtest"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
