"""RunSettings: every option of `abtest run`, validated once at the edge and stored in the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["RunSettings", "default_results_dir", "parse_backend_flag", "parse_slo"]


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "default"
    targets: list[dict[str, Any]] = Field(default_factory=list)  # backend specs for create_backend
    via_router: str | None = None
    router_backends: list[str] = Field(default_factory=list)  # per-request `backend` hints
    router_stream: bool = False  # use the router's /generate_stream (SSE) for TTFT/ITL
    config_path: str | None = None
    prompt_set: str = "default"
    prompts_file: str | None = None
    n: int | None = Field(default=None, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    seed: int = 0
    max_tokens: int = Field(default=32, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    concurrency: str | None = None
    rate: str | None = None
    arrival: str = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    warmup: int = Field(default=2, ge=0)
    repeats: int = Field(default=2, ge=1)
    order: str = "abba"
    block_size: int | None = Field(default=None, ge=1)  # None: auto (see bench.auto_block_size)
    reference: str | None = None
    slo_ms: dict[str, float] = Field(default_factory=dict)
    max_lag_ms: float = Field(default=25.0, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    stream: bool = True
    cross_score: bool = True
    results_dir: str = "results"

    @field_validator("order")
    @classmethod
    def _order(cls, v: str) -> str:
        if v not in ("abba", "random"):
            raise ValueError(f"unknown order {v!r}; valid: abba, random")
        return v


def default_results_dir() -> str:
    import os

    return os.environ.get("ABTEST_RESULTS_DIR") or "results"


def parse_backend_flag(flag: str) -> dict[str, Any]:
    """`NAME=KIND:URL_OR_PATH` -> a backend spec (`url` for http(s), else `model` path)."""
    if "=" not in flag or ":" not in flag.split("=", 1)[1]:
        raise ValueError(f"--backend {flag!r}: expected NAME=KIND:URL_OR_PATH, e.g. a=hrm:models/hrm-tiny")
    name, rest = flag.split("=", 1)
    kind, target = rest.split(":", 1)
    if not name or not kind or not target:
        raise ValueError(f"--backend {flag!r}: NAME, KIND and URL_OR_PATH must all be non-empty")
    if target.startswith(("http://", "https://")):
        return {"name": name, "kind": kind, "url": target}
    return {"name": name, "kind": kind, "model": target}


def parse_slo(text: str | None) -> dict[str, float]:
    """`ttft=200,e2el=2000` (milliseconds) -> {"ttft": 200.0, "e2el": 2000.0}."""
    if not text:
        return {}
    valid = ("ttft", "tpot", "e2el")
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, val = part.partition("=")
        key = key.strip()
        if key not in valid:
            raise ValueError(f"--slo: unknown metric {key!r}; valid: {', '.join(valid)}")
        try:
            out[key] = float(val)
        except ValueError:
            raise ValueError(f"--slo: {part!r} needs a number of milliseconds, e.g. ttft=200") from None
        if out[key] <= 0:
            raise ValueError(f"--slo: {key} must be > 0 ms")
    return out


def path_or_none(p: str | None) -> Path | None:
    return Path(p) if p else None
