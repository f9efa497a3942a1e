"""Helpers for the static compose checks: load the file, read .env.example, interpolate
`${VAR}`, `${VAR:-default}`, `${VAR-default}` the way docker compose does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "COMPOSE_DIR",
    "ONE_SHOT",
    "REPO",
    "interpolate",
    "load_compose",
    "read_env_file",
    "variables_used",
]

REPO = Path(__file__).resolve().parents[2]
COMPOSE_DIR = REPO / "compose"
ONE_SHOT = {"models", "bench", "bench-cpu"}  # run to completion; everything else is a server
_VAR = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\})")


def read_env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path}: not KEY=VALUE: {line!r}"
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def interpolate(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, default = m.group(1), m.group(2), m.group(3) or ""
        if op == ":-":
            return env.get(name) or default
        if op == "-":
            return env.get(name, default)
        return env.get(name, "")

    return _VAR.sub(sub, value)


def load_compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The compose file as compose sees it after interpolation (`env` None: all defaults)."""
    raw = yaml.safe_load((COMPOSE_DIR / "docker-compose.yml").read_text())
    doc = interpolate(raw, env or {})
    assert isinstance(doc, dict)
    return doc


def variables_used() -> set[str]:
    text = (COMPOSE_DIR / "docker-compose.yml").read_text()
    return {m.group(1) for m in _VAR.finditer(text) if m.group(1)}
