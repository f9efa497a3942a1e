"""Turn `--model DIR_OR_CONFIG` into model directories to plan.

Accepts a Hugging Face model directory, its config.json, or an abtest config (TOML/YAML,
read with `backends.config.load_config`) whose `[[backends]]` name local model directories. Container paths under `/models/` map
to `$ABTEST_MODELS_DIR` (default `./models`), as in compose.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchmarks.planning.errors import PlanError

__all__ = ["ModelSource", "resolve_sources"]

_CONFIG_SUFFIXES = (".toml", ".yaml", ".yml")


@dataclass(frozen=True)
class ModelSource:
    path: Path
    backend: str | None = None  # backend name when read from an abtest config
    kind: str | None = None  # backend kind (hrm | hf | vllm | tgi)


def _candidates(model: str, config_path: Path) -> list[Path]:
    models_dir = Path(os.environ.get("ABTEST_MODELS_DIR", "models"))
    raw = Path(model)
    out = [raw, config_path.parent / raw, config_path.parent.parent / raw]
    if raw.is_absolute() and raw.parts[1:2] == ("models",):
        out.append(models_dir.joinpath(*raw.parts[2:]))
    out.append(models_dir / raw.name)
    return out


def resolve_sources(path: Path) -> list[ModelSource]:
    if path.is_dir():
        return [ModelSource(path)]
    if not path.exists():
        raise PlanError(f"--model {path}: no such file or directory")
    if path.name == "config.json":
        return [ModelSource(path.parent)]
    if path.suffix.lower() not in _CONFIG_SUFFIXES:
        raise PlanError(
            f"--model {path}: expected a model directory, its config.json, or an abtest .toml/.yaml"
        )
    from backends.config import load_config

    try:
        cfg = load_config(path)
    except ValueError as exc:  # backends.config.ConfigError names the file and the problem
        raise PlanError(str(exc)) from exc
    backends = cfg.get("backends")
    if not isinstance(backends, list):
        raise PlanError(f"{path}: no [[backends]] list")
    sources: list[ModelSource] = []
    for i, spec in enumerate(backends):
        model = spec.get("model") if isinstance(spec, dict) else None
        if not isinstance(model, str):
            continue
        found = next((c for c in _candidates(model, path) if (c / "config.json").is_file()), None)
        if found is not None:
            sources.append(ModelSource(found, str(spec.get("name", f"backends[{i}]")), spec.get("kind")))
    if not sources:
        raise PlanError(
            f"{path}: no backend names a local model directory with a config.json; pass --model DIR instead"
        )
    return sources
