"""Load the router's config file (TOML or YAML): `[[backends]]` + `[router]`.

The file format and the `[[backends]]` checks belong to `backends.config`; this module
adds the `[router]` section (with env and CLI overrides) on top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.config import backend_specs, load_config
from router.settings import RouterConfig, build_settings

__all__ = ["config_from_dict", "load_router_config"]


def config_from_dict(
    cfg: dict[str, Any], *, cli: dict[str, Any] | None = None, path: Path | None = None
) -> RouterConfig:
    section = cfg.get("router") or {}
    if not isinstance(section, dict):
        raise ValueError(f"{path or '<config>'}: router: must be a table")  # noqa: TRY004 (a config error)
    settings = build_settings(section, cli)
    specs = backend_specs(cfg, path or "<config>")
    return RouterConfig(backends=specs, router=settings, path=path, cli_overrides=dict(cli or {}))


def load_router_config(path: Path | str, *, cli: dict[str, Any] | None = None) -> RouterConfig:
    p = Path(path)
    return config_from_dict(load_config(p), cli=cli, path=p)
