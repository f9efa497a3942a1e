"""`abtest serve router` and `abtest serve hrm` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.router.fakes import free_port

REPO = Path(__file__).resolve().parents[2]
ABTEST = [sys.executable, "-m", "benchmarks.cli"]


def test_serve_router_cli_over_hrm(hrm_tiny: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    cfg.write_text(f'[[backends]]\nname = "hrm"\nkind = "hrm"\nmodel = "{hrm_tiny}"\ndevice = "cpu"\n'
                   '[router]\nhealth_interval_s = 30\n')
    port = free_port()
    proc = subprocess.Popen([*ABTEST, "serve", "router", "--config", str(cfg), "--port", str(port),
                             "--enable-cors", "--cors-origins", "http://ui.example", "--log-level", "info"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        r = httpx.post(url + "/generate", json={"prompts": ["Hello"], "max_tokens": 3},
                       headers={"Origin": "http://ui.example"}, timeout=30)
        assert r.status_code == 200 and r.headers["x-backend"] == "hrm"
        assert r.headers["access-control-allow-origin"] == "http://ui.example"  # CLI flag reached settings
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    logs = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    access = [x for x in logs if x.get("event") == "request" and x.get("path") == "/generate"]
    assert access and access[0]["status"] == 200 and access[0]["backend"] == "hrm"


def test_serve_router_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "router.toml"
    cfg.write_text('[[backends]]\nname = "a"\nkind = "nope"\n')
    out = subprocess.run([*ABTEST, "serve", "router", "--config", str(cfg)], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 2 and "backends[0].kind" in out.stderr and "Traceback" not in out.stderr
    cfg.write_text('[[backends]]\nname = "a"\nkind = "vllm"\nurl = "http://127.0.0.1:9"\nmodel = "m"\n'
                   f'[router]\napi_keys_file = "{tmp_path / "missing"}"\n')
    out = subprocess.run([*ABTEST, "serve", "router", "--config", str(cfg)], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 2 and "api_keys_file" in out.stderr and "Traceback" not in out.stderr


def test_serve_hrm_print_config(tmp_path: Path) -> None:
    out = subprocess.run([*ABTEST, "serve", "hrm", "--model-path", "m", "--port", "9123", "--print-config"],
                         cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                         env={"PATH": "/usr/bin:/bin", "AIOS_MAX_BATCH_SIZE": "3", "AIOS_DEVICE": "cpu"})
    assert out.returncode == 0, out.stderr
    cfg = json.loads(out.stdout)
    assert (cfg["model_path"], cfg["port"], cfg["max_batch_size"], cfg["device"]) == ("m", 9123, 3, "cpu")
