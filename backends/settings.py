"""Pydantic settings shared by the kinds: timeouts and the HTTP-kind base model."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backends.base import BackendSettings

__all__ = ["HttpBackendSettings", "InProcessSettings", "Timeouts", "read_api_key"]


class Timeouts(BaseModel):
    """Seconds. `first_token` bounds the wait for the first byte of a stream (and the
    gap between stream events); `total` bounds a whole request."""

    model_config = ConfigDict(extra="forbid")
    connect: float = Field(default=5.0, gt=0)
    first_token: float = Field(default=60.0, gt=0)
    total: float = Field(default=300.0, gt=0)


class HttpBackendSettings(BackendSettings):
    """Fields of every kind reached over HTTP (vllm, tgi)."""

    url: str
    model: str | None = None  # served model name (vLLM `model` field); informational for TGI
    tokenizer: str | None = None  # local tokenizer path/id, used for token-id prompts when set
    timeouts: Timeouts = Field(default_factory=Timeouts)
    max_connections: int = Field(default=64, ge=1)
    max_concurrency: int = Field(default=16, ge=1)  # fan-out bound for one-prompt-per-request APIs
    retries: int = Field(default=2, ge=0, le=10)  # only before the first byte of a response
    retry_backoff_s: float = Field(default=0.2, ge=0)
    api_key_env: str | None = None  # name of an env var holding a bearer token
    api_key_file: Path | None = None  # file holding a bearer token
    prefix_lm: bool | None = None  # override detection of a prefix-LM model

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https:// (got {url!r})")
        return url.rstrip("/")


class InProcessSettings(BackendSettings):
    """Fields of the in-process kinds (hrm, hf)."""

    model: str  # checkpoint directory (or hub id for hf)
    device: str = "auto"
    dtype: str = "auto"
    max_batch_size: int = Field(default=32, ge=1)
    max_concurrency: int = Field(default=1, ge=1)
    # torch intra-op threads, process-wide (see hrm/threads.py); None: 1 on CPU, torch's default on GPU
    threads: int | None = Field(default=None, ge=1)


def read_api_key(settings: HttpBackendSettings) -> str | None:
    """The bearer token from `api_key_env` or `api_key_file` (never logged)."""
    if settings.api_key_env:
        value = os.environ.get(settings.api_key_env)
        if not value:
            raise ValueError(f"{settings.name}: api_key_env {settings.api_key_env!r} is not set")
        return value.strip()
    if settings.api_key_file:
        try:
            return settings.api_key_file.read_text().strip()
        except OSError as exc:
            raise ValueError(f"{settings.name}: api_key_file cannot be read: {exc.strerror}") from None
    return None
