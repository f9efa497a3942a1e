"""Graceful shutdown: SIGTERM with requests in flight loses none; SIGHUP reloads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.router.fakes import free_port

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
[[backends]]
name = "a"
kind = "router_fake"
latency_s = 1.0

[[backends]]
name = "b"
kind = "router_fake"

[router]
split = {{ a = {wa}, b = {wb} }}
health_interval_s = 30
drain_timeout_s = 10
"""


def _start(cfg: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.router.run_router", str(cfg), str(port)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"router did not start: {proc.stdout.read() if proc.stdout else ''!r}")


def test_sigterm_drains_in_flight_requests(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    cfg.write_text(CONFIG.format(wa=1, wb=0))
    proc, url = _start(cfg)
    try:
        def call(i: int) -> int:
            with httpx.Client(timeout=10) as c:
                return c.post(url + "/generate", json={"prompts": [f"p{i}"]}).status_code

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(call, i) for i in range(8)]
            time.sleep(0.4)  # all 8 are in flight (the backend takes 1 s)
            proc.send_signal(signal.SIGTERM)
            codes = [f.result() for f in futures]
        assert codes == [200] * 8  # none lost
        # uvicorn re-raises SIGTERM once its graceful shutdown is done: exit by the signal is normal.
        assert proc.wait(timeout=15) in (0, -signal.SIGTERM)
        out = proc.stdout.read().decode() if proc.stdout else ""
        assert "Traceback" not in out
        try:  # and it stopped accepting
            httpx.get(url + "/healthz", timeout=1)
            raise AssertionError("still accepting after SIGTERM")
        except httpx.TransportError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sighup_reloads_weights(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    cfg.write_text(CONFIG.format(wa=0, wb=1))
    proc, url = _start(cfg)
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            assert c.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "b"
            cfg.write_text(CONFIG.format(wa=1, wb=0).replace("latency_s = 1.0", "latency_s = 0.0"))
            os.kill(proc.pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if c.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "a":
                    break
                time.sleep(0.1)
            assert c.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "a"
    finally:
        proc.terminate()
        proc.wait(timeout=15)
