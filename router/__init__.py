"""The A/B routing proxy: `create_app(config)` builds the FastAPI app."""

from __future__ import annotations

from router.app import create_app
from router.config import load_router_config
from router.settings import RouterConfig, RouterSettings

__all__ = ["RouterConfig", "RouterSettings", "create_app", "load_router_config"]
