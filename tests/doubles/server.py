"""Run an ASGI app as a real HTTP server on loopback (uvicorn in a background thread)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["free_port", "serve", "start_server"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(app: Any, *, port: int | None = None) -> tuple[str, Callable[[], None]]:
    """Start `app` on 127.0.0.1; returns (base_url, stop). stop() waits for shutdown."""
    import uvicorn

    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"test server on port {port} did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=5)

    return f"http://127.0.0.1:{port}", stop


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """`with serve(app) as base_url: ...`"""
    url, stop = start_server(app)
    try:
        yield url
    finally:
        stop()
