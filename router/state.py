"""Everything one router app owns (no module globals): the table holder, metrics,
shadow runner. Handlers close over one `RouterState`."""

from __future__ import annotations

from dataclasses import dataclass, field

from router.metrics import RouterMetrics
from router.settings import RouterConfig
from router.shadow import ShadowRunner
from router.table import BackendFactory, TableHolder

__all__ = ["RouterState"]


@dataclass
class RouterState:
    config: RouterConfig
    factory: BackendFactory
    metrics: RouterMetrics
    shadow: ShadowRunner
    api_keys: list[str] = field(default_factory=list)  # bearer keys in force (reloaded with the config)
    holder: TableHolder | None = None
    ready: bool = False
    draining: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def table_holder(self) -> TableHolder:
        if self.holder is None:
            from router.errors import NoBackendAvailable

            raise NoBackendAvailable("router is starting: backends not loaded yet")
        return self.holder
