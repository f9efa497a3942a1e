"""Load the router's config file (TOML or YAML): `[[backends]]` + `[router]`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from router.settings import RouterConfig, build_settings

__all__ = ["read_config_file", "load_router_config", "config_from_dict"]


def read_config_file(path: Path) -> dict[str, Any]:
    """The raw dict. Uses `backends.config.load_config` when present (it owns the format)."""
    try:
        from backends.config import load_config  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        load_config = None
    if load_config is not None:
        return dict(load_config(path))
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith((".yaml", ".yml")):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        data = tomllib.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a table/mapping")
    return data


def _backend_specs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        from backends.config import backend_specs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        backend_specs = None
    if backend_specs is not None:
        return [dict(s) for s in backend_specs(cfg)]
    specs = cfg.get("backends") or []
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise ValueError("backends: must be a list of tables")
    return [dict(s) for s in specs]


def config_from_dict(
    cfg: dict[str, Any], *, cli: dict[str, Any] | None = None, path: Path | None = None
) -> RouterConfig:
    section = cfg.get("router") or {}
    if not isinstance(section, dict):
        raise ValueError("router: must be a table")
    settings = build_settings(section, cli)
    return RouterConfig(backends=_backend_specs(cfg), router=settings, path=path, cli_overrides=dict(cli or {}))


def load_router_config(path: Path | str, *, cli: dict[str, Any] | None = None) -> RouterConfig:
    p = Path(path)
    return config_from_dict(read_config_file(p), cli=cli, path=p)
