"""The `cpu` compose profile, run without Docker: the `hrm-cpu` and `router-cpu` commands
from docker-compose.yml are started as subprocesses with container paths mapped into the
repo (/models -> the sample models, /app/compose/... -> compose/...) and ports mapped to
free loopback ports. Then the services' own healthchecks and a /generate are run."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.compose.composefile import COMPOSE_DIR, REPO, load_compose, read_env_file

pytestmark = pytest.mark.timeout(300)


def serve_commands() -> set[str]:
    from benchmarks.cli import app

    out = CliRunner().invoke(app, ["serve", "--help"]).output
    return {name for name in ("hrm", "router") if f" {name} " in out or f"│ {name}" in out}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def map_argv(command: str, models: Path, config_dir: Path, port: int) -> list[str]:
    """Compose command -> local argv: `abtest` via this interpreter, container paths and
    ports mapped, bind address loopback only."""
    argv = shlex.split(command)
    assert argv[0] == "abtest"
    out = [sys.executable, "-m", "benchmarks.cli"]
    for i, arg in enumerate(argv[1:], start=1):
        prev = argv[i - 1]
        if prev == "--host":
            arg = "127.0.0.1"
        elif prev == "--port":
            arg = str(port)
        elif arg.startswith("/models/"):
            arg = str(models / arg.removeprefix("/models/"))
        elif arg.startswith("/app/compose/"):
            arg = str(config_dir / arg.removeprefix("/app/compose/"))
        out.append(arg)
    return out


def healthcheck_argv(test: list[str], port_in_container: int, port: int) -> list[str]:
    assert test[0] == "CMD" and test[1] == "python"
    return [sys.executable, *[a.replace(f":{port_in_container}/", f":{port}/") for a in test[2:]]]


@pytest.fixture
def started(tmp_path: Path, sample_models: dict[str, Path]) -> Iterator[dict[str, tuple[int, list[str]]]]:
    assert {"hrm", "router"} <= serve_commands(), "the cpu profile needs `abtest serve hrm` and `abtest serve router`"
    models = sample_models["hrm-tiny"].parent
    services = load_compose(read_env_file(COMPOSE_DIR / ".env.example"))["services"]
    # The router's config, as mounted at /app/compose/abtest.cpu.toml, with /models mapped.
    config_dir = tmp_path / "compose"
    config_dir.mkdir()
    text = (COMPOSE_DIR / "abtest.cpu.toml").read_text().replace('"/models/', f'"{models.as_posix()}/')
    (config_dir / "abtest.cpu.toml").write_text(text)
    env = {**os.environ, "ABTEST_MODELS_DIR": str(models), "ABTEST_RESULTS_DIR": str(tmp_path / "results"),
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}  # fmt: skip
    procs: dict[str, subprocess.Popen[bytes]] = {}
    info: dict[str, tuple[int, list[str]]] = {}
    try:
        for name in ("hrm-cpu", "router-cpu"):
            port = free_port()
            argv = map_argv(services[name]["command"], models, config_dir, port)
            procs[name] = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT)  # fmt: skip
            container_port = int(services[name]["ports"][0].split(":")[-1])
            info[name] = (port, healthcheck_argv(services[name]["healthcheck"]["test"], container_port, port))
        yield info
    finally:
        for name, proc in procs.items():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in procs.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_healthy(name: str, health: list[str], deadline: float) -> None:
    """Run the service's own compose healthcheck until it passes (as Docker would)."""
    while time.monotonic() < deadline:
        if subprocess.run(health, capture_output=True, timeout=10, check=False).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail(f"{name}: healthcheck never passed")


def test_cpu_profile_commands_serve_hrm_and_router(started: dict[str, tuple[int, list[str]]]) -> None:
    deadline = time.monotonic() + 180
    for name, (_, health) in started.items():
        wait_healthy(name, health, deadline)
    body = {"prompts": ["copy: abc =", "reverse: xyz ="], "max_tokens": 6, "temperature": 0}
    hrm_port, router_port = started["hrm-cpu"][0], started["router-cpu"][0]
    with httpx.Client(timeout=60) as client:
        direct = client.post(f"http://127.0.0.1:{hrm_port}/generate", json=body)
        assert direct.status_code == 200, direct.text
        assert len(direct.json()["completions"]) == 2
        for arm in ("hrm", "hf-llama"):
            r = client.post(f"http://127.0.0.1:{router_port}/generate", json=body, headers={"X-Backend": arm})
            assert r.status_code == 200, r.text
            assert r.headers["X-Backend"] == arm and len(r.json()["completions"]) == 2
        # Same weights and checkpoint: the router's in-process hrm matches the HRM server (greedy).
        via_router = client.post(
            f"http://127.0.0.1:{router_port}/generate", json=body, headers={"X-Backend": "hrm"}
        )
        assert via_router.json()["completions"] == direct.json()["completions"]
        bad = client.post(f"http://127.0.0.1:{router_port}/generate", json={"prompts": []})
        assert bad.status_code in (400, 422) and "prompts" in bad.text
