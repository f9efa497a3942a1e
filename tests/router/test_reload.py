"""Hot reload: swap weights and backends without dropping in-flight requests."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from router import create_app, load_router_config
from tests.router.fakes import FakeFactory, serve_app

CONFIG = """
[[backends]]
name = "a"
kind = "router_fake"
latency_s = {latency}

[[backends]]
name = "b"
kind = "router_fake"

[router]
split = {{ a = {wa}, b = {wb} }}
health_interval_s = 30
watch_config = {watch}
watch_interval_s = 0.05
drain_timeout_s = 5
"""


def _write(path: Path, wa: int, wb: int, latency: float = 0.0, watch: bool = False) -> None:
    path.write_text(CONFIG.format(wa=wa, wb=wb, latency=latency, watch=str(watch).lower()))


def _arms(client: httpx.Client, n: int = 20) -> set[str]:
    return {client.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] for _ in range(n)}


def test_admin_reload_swaps_weights_and_drains_old_backend(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    _write(cfg, 1, 0, latency=0.6)
    factory = FakeFactory()
    app = create_app(load_router_config(cfg), backend_factory=factory)
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        old_a = factory.built["a"]
        result: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: result.update(r=client.post("/generate", json={"prompts": ["slow"]})))
        t.start()
        time.sleep(0.2)  # the slow request is in flight on the old `a`
        _write(cfg, 0, 1, latency=0.0)  # a's spec changed: a new `a`; the split moves to b
        with httpx.Client(base_url=url, timeout=10) as c2:
            assert c2.post("/admin/reload").json() == {"version": 2}
            assert _arms(c2) == {"b"}
        t.join()
        assert result["r"].status_code == 200 and result["r"].json()["completions"] == ["a:slow"]
        deadline = time.monotonic() + 3
        while not old_a.closed and time.monotonic() < deadline:
            time.sleep(0.02)
        assert old_a.closed  # retired after its in-flight request finished
        assert factory.built["a"] is not old_a and not factory.built["a"].closed
        assert factory.history.count(factory.built["b"]) == 1  # unchanged backend reused, not reloaded


def test_file_watch_reload(tmp_path: Path) -> None:
    cfg = tmp_path / "router.yaml.toml"
    _write(cfg, 1, 0, watch=True)
    app = create_app(load_router_config(cfg), backend_factory=FakeFactory())
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert _arms(client) == {"a"}
        time.sleep(0.05)
        _write(cfg, 0, 1, watch=True)
        deadline = time.monotonic() + 5
        while _arms(client, 5) != {"b"} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _arms(client) == {"b"}


def test_bad_reload_keeps_current_table(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    _write(cfg, 1, 0)
    app = create_app(load_router_config(cfg), backend_factory=FakeFactory())
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        cfg.write_text(cfg.read_text().replace("a = 1, b = 0", "a = 1, zzz = 1"))
        r = client.post("/admin/reload")
        assert r.status_code == 400 and "zzz" in r.json()["error"]["message"]
        assert _arms(client) == {"a"}


def test_admin_reload_is_loopback_only_without_api_keys(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient  # its client address is "testclient", not loopback

    cfg = tmp_path / "router.toml"
    _write(cfg, 1, 0)
    app = create_app(load_router_config(cfg), backend_factory=FakeFactory())
    with TestClient(app) as client:
        r = client.post("/admin/reload")
        assert r.status_code == 403 and "loopback-only" in r.json()["error"]["message"]


def test_reload_changes_api_keys_body_limit_and_queue_bound(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    _write(cfg, 1, 0)
    keys = tmp_path / "keys"
    app = create_app(load_router_config(cfg), backend_factory=FakeFactory())
    body = {"prompts": ["p"]}
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/generate", json=body).status_code == 200  # no keys: open
        keys.write_text("k1\n")
        _write(cfg, 1, 0, latency=0.5)
        cfg.write_text(cfg.read_text() + f'api_keys_file = "{keys}"\nmax_body_bytes = 2048\nmax_queue = 1\n')
        assert client.post("/admin/reload").status_code == 200  # loopback, so allowed without a key
        assert client.post("/generate", json=body).status_code == 401
        auth = {"Authorization": "Bearer k1"}
        slow: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: slow.update(r=client.post("/generate", json=body, headers=auth)))
        t.start()
        time.sleep(0.2)  # one request inside the router: the new queue bound of 1 is full
        with httpx.Client(base_url=url, timeout=10) as c2:
            assert c2.post("/generate", json=body, headers=auth).status_code == 429
        t.join()
        assert slow["r"].status_code == 200
        big = client.post("/generate", json={"prompts": ["x" * 4096]}, headers=auth)
        assert big.status_code == 413
        keys.write_text("k2\n")  # rotate: the old key stops working after the next reload
        assert client.post("/admin/reload", headers=auth).status_code == 200
        assert client.post("/generate", json=body, headers=auth).status_code == 403
        keys.unlink()  # an unreadable key file: the reload fails and the keys in force stay
        r = client.post("/admin/reload", headers={"Authorization": "Bearer k2"})
        assert r.status_code == 400 and r.json()["error"]["field"] == "config"
        assert client.post("/generate", json=body, headers={"Authorization": "Bearer k2"}).status_code == 200
