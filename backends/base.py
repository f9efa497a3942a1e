"""The one async interface every engine adapter implements, and the kind registry."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from backends.types import BackendInfo, Completion, LoglikelihoodResult, SamplingParams, StreamEvent

__all__ = ["Backend", "BackendSettings", "create_backend", "kinds", "register", "settings_model"]


class BackendSettings(BaseModel):
    """Fields every kind shares. Each kind subclasses this with its own fields."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: str


@runtime_checkable
class Backend(Protocol):
    settings: BackendSettings

    @property
    def name(self) -> str: ...

    async def start(self) -> None: ...  # load model / open HTTP pool
    async def close(self) -> None: ...
    async def health(self) -> bool: ...
    async def info(self) -> BackendInfo: ...
    async def generate(self, prompts: list[str], params: SamplingParams) -> list[Completion]: ...
    def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[StreamEvent]: ...
    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]: ...


_REGISTRY: dict[str, tuple[type[BackendSettings], Callable[[Any], Backend]]] = {}


def register(kind: str, settings_cls: type[BackendSettings]) -> Callable[[type], type]:
    """Class decorator: `@register("tgi", TgiSettings) class TgiBackend: ...`."""

    def deco(cls: type) -> type:
        _REGISTRY[kind] = (settings_cls, cls)
        cls.kind = kind  # type: ignore[attr-defined]
        return cls

    return deco


def _load_builtin_kinds() -> None:
    # Importing the modules runs their @register decorators.
    import backends.abtest
    import backends.hf
    import backends.hrm
    import backends.tgi
    import backends.vllm  # noqa: F401


def kinds() -> list[str]:
    _load_builtin_kinds()
    return sorted(_REGISTRY)


def settings_model(kind: str) -> type[BackendSettings]:
    """The pydantic settings model of a kind (ValueError listing valid kinds if unknown)."""
    _load_builtin_kinds()
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}; valid kinds: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[kind][0]


def create_backend(spec: dict[str, Any]) -> Backend:
    """Build a backend from a dict like {"name": "a", "kind": "hrm", "model": "models/hrm-tiny"}."""
    _load_builtin_kinds()
    kind = spec.get("kind")
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}; valid kinds: {', '.join(sorted(_REGISTRY))}")
    settings_cls, backend_cls = _REGISTRY[kind]
    return backend_cls(settings_cls.model_validate(spec))
