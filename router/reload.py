"""Hot reload: re-read the config file and swap the routing table (SIGHUP, file watch,
or POST /admin/reload). In-flight requests finish on the table they started with.

Reloadable: backends (and their weights/model paths), split, policy, fallback, shadow,
retries, breaker and health settings, API keys, the body limit and the queue bound. CORS,
host, port and workers are read once at startup.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from router.config import load_router_config
from router.settings import RouterConfig
from router.state import RouterState

__all__ = ["install_sighup", "reload_now", "watch_file"]

log = logging.getLogger("abtest.router")


async def reload_now(state: RouterState, config: RouterConfig | None = None) -> int:
    """Swap in `config` (or the re-read config file). Returns the new table version."""
    if config is None:
        if state.config.path is None:
            raise ValueError("no config file to reload from")
        config = load_router_config(state.config.path, cli=state.config.cli_overrides)
    keys = config.router.all_api_keys()
    table = await state.table_holder.swap(config)
    state.config, state.api_keys = config, keys
    return table.version


def _spawn(state: RouterState) -> None:
    async def run() -> None:
        try:
            await reload_now(state)
        except Exception:
            log.exception("reload failed; keeping the current routing table")

    task = asyncio.get_running_loop().create_task(run())
    tasks = state.extra.setdefault("reload_tasks", set())
    assert isinstance(tasks, set)
    tasks.add(task)
    task.add_done_callback(tasks.discard)


def install_sighup(state: RouterState) -> bool:
    """True if installed (only possible in the main thread on POSIX)."""
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _spawn, state)
        return True
    except (NotImplementedError, RuntimeError, ValueError, AttributeError):
        return False


async def watch_file(state: RouterState) -> None:
    path = state.config.path
    if path is None:
        return
    last = path.stat().st_mtime_ns if path.exists() else 0
    while True:
        await asyncio.sleep(state.config.router.watch_interval_s)
        try:
            now = path.stat().st_mtime_ns
        except OSError:
            continue
        if now != last:
            last = now
            _spawn(state)
