"""Loading the config file (TOML or YAML) that lists backends; errors name file and field."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from backends.base import BackendSettings, kinds, settings_model

__all__ = ["ConfigError", "backend_specs", "load_config", "validate_specs"]


class ConfigError(ValueError):
    """A config file that cannot be used. The message names the file and the field."""


def load_config(path: str | Path) -> dict[str, Any]:
    """Parse a `.toml`, `.yaml` or `.yml` file into a dict (structure is not checked here)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config file ({exc.strerror})") from None
    suffix = p.suffix.lower()
    if suffix == ".toml":
        try:
            doc: Any = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    elif suffix in (".yaml", ".yml"):
        import yaml  # type: ignore[import-untyped]

        try:
            doc = yaml.safe_load(raw) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: invalid YAML: {exc}") from None
    else:
        raise ConfigError(f"{p}: unknown config format {suffix!r} (use .toml, .yaml or .yml)")
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: top level must be a table/mapping, got {type(doc).__name__}")
    return doc


def backend_specs(cfg: dict[str, Any], source: str | Path = "<config>") -> list[dict[str, Any]]:
    """The `[[backends]]` entries, checked: each has a known kind and a unique name, and
    its fields are valid for that kind. Raises ConfigError naming `backends[i].field`."""
    entries = cfg.get("backends")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: backends: expected a non-empty list of [[backends]] tables")
    seen: set[str] = set()
    specs: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        where = f"{source}: backends[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a table, got {type(entry).__name__}")
        kind, name = entry.get("kind"), entry.get("name")
        if kind not in kinds():
            raise ConfigError(f"{where}.kind: unknown kind {kind!r}; valid kinds: {', '.join(kinds())}")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name: required, a non-empty string")
        if name in seen:
            raise ConfigError(f"{where}.name: duplicate backend name {name!r}")
        seen.add(name)
        validate_specs(entry, where)
        specs.append(dict(entry))
    return specs


def validate_specs(entry: dict[str, Any], where: str) -> BackendSettings:
    try:
        return settings_model(str(entry["kind"])).model_validate(entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"{where}.{field}: {first['msg']}") from None
