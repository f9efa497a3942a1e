"""compose/abtest.toml and abtest.cpu.toml load through the router's own config code and
point at the compose services (hostnames, container ports, mounted model paths)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.compose.composefile import COMPOSE_DIR, load_compose, read_env_file


@pytest.mark.parametrize(("file", "arms"), [
    ("abtest.toml", {"hrm", "vllm", "tgi"}),
    ("abtest.cpu.toml", {"hrm", "hf-llama"}),
])  # fmt: skip
def test_router_config_loads(file: str, arms: set[str]) -> None:
    from router.config import load_router_config

    cfg = load_router_config(COMPOSE_DIR / file)
    assert set(cfg.weights()) == arms
    assert cfg.router.policy == "weighted" and cfg.router.fallback


def test_gpu_config_urls_are_compose_services() -> None:
    from backends.config import backend_specs, load_config

    services = load_compose(read_env_file(COMPOSE_DIR / ".env.example"))["services"]
    for spec in backend_specs(load_config(COMPOSE_DIR / "abtest.toml")):
        if "url" not in spec:
            continue
        url = urlsplit(spec["url"])
        svc = services[url.hostname]
        container_ports = {p.split(":")[-1] for p in svc["ports"]}
        assert str(url.port) in container_ports, spec


def test_cpu_config_is_in_process_only() -> None:
    from backends.config import backend_specs, load_config

    specs = backend_specs(load_config(COMPOSE_DIR / "abtest.cpu.toml"))
    assert all("url" not in s and s["device"] == "cpu" for s in specs)
    assert {Path(s["model"]).name for s in specs} == {"hrm-tiny", "llama-tiny"}
    assert all(s["model"].startswith("/models/") for s in specs)
