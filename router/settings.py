"""Router settings: the `[router]` section of the config file, env `ABTEST_*`, CLI flags.

Precedence is CLI > env > file: `build_settings(file_section, cli)` merges the file's
values, then whatever `ABTEST_*` variables are set, then the CLI's (non-None) values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

__all__ = ["RouterConfig", "RouterSettings", "ShadowSettings", "build_settings"]


class ShadowSettings(BaseModel):
    """Mirror a sample of primary traffic to `backend`; outputs paired in a JSONL log."""

    model_config = ConfigDict(extra="forbid")
    backend: str
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    max_concurrency: int = Field(default=4, ge=1)
    log_path: Path = Path("results/shadow.jsonl")


class RouterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ABTEST_", env_nested_delimiter="__", extra="forbid")

    # Split: backend name -> relative weight (normalised by the sum). Empty: every
    # configured backend with weight 1.
    split: dict[str, float] = Field(default_factory=dict)
    policy: str = "weighted"
    sticky_header: str = "X-User-Id"
    hash_salt: str = "abtest"
    seed: int | None = None
    fallback: list[str] = Field(default_factory=list)
    retries: int = Field(default=1, ge=0, le=5)  # extra tries on the same backend, before first byte
    shadow: ShadowSettings | None = None
    breaker_failures: int = Field(default=5, ge=1)
    breaker_cooldown_s: float = Field(default=10.0, gt=0)
    health_interval_s: float = Field(default=5.0, gt=0)
    max_inflight_per_backend: int = Field(default=64, ge=1)
    max_queue: int = Field(default=512, ge=1)  # requests in the router (waiting + running)
    request_timeout_s: float = Field(default=120.0, gt=0)
    max_tokens_cap: int = Field(default=1024, ge=1)
    max_body_bytes: int = Field(default=1_000_000, ge=1024)
    api_keys: list[str] = Field(default_factory=list)
    api_keys_file: Path | None = None
    enable_cors: bool = False
    cors_origins: list[str] = Field(default_factory=list)
    log_prompts: bool = False
    drain_timeout_s: float = Field(default=30.0, ge=0)
    watch_config: bool = False
    watch_interval_s: float = Field(default=2.0, gt=0)
    retry_after_s: int = Field(default=1, ge=1)

    @field_validator("split")
    @classmethod
    def _positive_weights(cls, split: dict[str, float]) -> dict[str, float]:
        for name, w in split.items():
            if w < 0:
                raise ValueError(f"split.{name}: weight must be >= 0, got {w}")
        if split and sum(split.values()) <= 0:
            raise ValueError("split: at least one weight must be > 0")
        return split

    def all_api_keys(self) -> list[str]:
        """`api_keys` plus the lines of `api_keys_file`; ValueError if the file cannot be read."""
        keys = [k for k in self.api_keys if k]
        if self.api_keys_file is not None:
            try:
                text = self.api_keys_file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"api_keys_file {self.api_keys_file}: {exc.strerror}") from None
            keys += [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        return keys


class RouterConfig(BaseModel):
    """The whole config: backend specs (dicts for `backends.create_backend`) + router settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    backends: list[dict[str, Any]]
    router: RouterSettings
    path: Path | None = None  # where it was loaded from (hot reload re-reads it)
    cli_overrides: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_names(self) -> RouterConfig:
        names = [str(b.get("name")) for b in self.backends]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"backends: duplicate names {dupes}")
        known = set(names)
        r = self.router
        refs = [("split", n) for n in r.split] + [("fallback", n) for n in r.fallback]
        if r.shadow is not None:
            refs.append(("shadow.backend", r.shadow.backend))
        for where, n in refs:
            if n not in known:
                raise ValueError(f"router.{where}: unknown backend {n!r}; configured: {sorted(known)}")
        if not self.backends:
            raise ValueError("backends: at least one backend is required")
        from router.policies import policy_names  # policies import this module

        if r.policy not in policy_names():
            raise ValueError(f"router.policy: unknown policy {r.policy!r}; valid: {', '.join(policy_names())}")
        return self

    def weights(self) -> dict[str, float]:
        """The arms and their weights (default: every non-shadow backend, weight 1)."""
        if self.router.split:
            return {n: w for n, w in self.router.split.items() if w > 0}
        shadow = self.router.shadow.backend if self.router.shadow else None
        names = [str(b["name"]) for b in self.backends if b["name"] != shadow]
        return {n: 1.0 for n in names or [str(self.backends[0]["name"])]}


def build_settings(file_section: dict[str, Any] | None, cli: dict[str, Any] | None = None) -> RouterSettings:
    """file < env (ABTEST_*) < CLI. `cli` values of None mean "not given"."""
    merged: dict[str, Any] = dict(file_section or {})
    env_values = EnvSettingsSource(RouterSettings)()
    merged.update(env_values)
    merged.update({k: v for k, v in (cli or {}).items() if v is not None})
    return RouterSettings(**merged)
