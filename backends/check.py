"""Probe configured backends: health, model info, a one-token generation, log-likelihood
support and the normalizations that will apply (`abtest backends check`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from backends.base import create_backend
from backends.errors import BackendError
from backends.types import BackendInfo, SamplingParams

__all__ = ["CheckResult", "check_all", "check_backend"]


@dataclass
class CheckResult:
    name: str
    kind: str
    up: bool = False
    info: BackendInfo | None = None
    generation: str | None = None  # the one generated token's text, or None
    latency_s: float | None = None
    loglikelihood: str = "unknown"  # "ok (ll=...)", "unsupported", "error: ..."
    normalizations: list[str] = field(default_factory=list)
    error: str | None = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BackendError):
        return f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


async def check_backend(spec: dict[str, Any], timeout_s: float = 60.0) -> CheckResult:
    result = CheckResult(name=str(spec.get("name")), kind=str(spec.get("kind")))
    backend = create_backend(spec)
    try:
        async with asyncio.timeout(timeout_s):
            await backend.start()
            if not await backend.health():
                result.error = "health check failed (backend down)"
                return result
            info = result.info = await backend.info()
            (completion,) = await backend.generate(["Hello"], SamplingParams(max_tokens=1, temperature=0.0))
            result.generation, result.latency_s = completion.text, completion.latency_s
            result.up = True
            describe = getattr(backend, "normalizations", None)
            result.normalizations = list(describe(info)) if describe else []
            if info.capabilities.loglikelihood:
                try:
                    (ll,) = await backend.loglikelihood(["Hello"], [" world"])
                    result.loglikelihood = f"ok (ll={ll.ll:.3f})"
                except (BackendError, TimeoutError) as exc:
                    result.loglikelihood = f"error: {_describe(exc)}"
            else:
                result.loglikelihood = "unsupported"
    except (BackendError, TimeoutError, ValueError, OSError) as exc:
        result.up = False
        result.error = _describe(exc)
    finally:
        await backend.close()
    return result


async def check_all(specs: list[dict[str, Any]], timeout_s: float = 60.0) -> list[CheckResult]:
    return list(await asyncio.gather(*(check_backend(s, timeout_s) for s in specs)))
