"""Static checks of compose/docker-compose.yml (no Docker engine needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.compose.composefile import COMPOSE_DIR, ONE_SHOT, REPO, load_compose, read_env_file, variables_used

GPU = {"vllm", "tgi", "hrm", "router", "bench"}
# The router and bench reach every engine over HTTP, so only the engines reserve a GPU.
NEEDS_GPU = {"vllm", "tgi", "hrm"}
CPU = {"hrm-cpu", "router-cpu", "bench-cpu"}


def compose_schema() -> dict[str, Any]:
    """compose-spec's JSON schema, as vendored by check-jsonschema (pip install check-jsonschema)."""
    check_jsonschema = pytest.importorskip("check_jsonschema", reason="pip install check-jsonschema")
    path = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "compose-spec.json"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return read_env_file(COMPOSE_DIR / ".env.example")


@pytest.fixture(scope="module")
def services(env: dict[str, str]) -> dict[str, Any]:
    return load_compose(env)["services"]


@pytest.mark.parametrize("use_env", [True, False], ids=["env-example", "defaults"])
def test_compose_file_matches_compose_spec_schema(use_env: bool, env: dict[str, str]) -> None:
    doc = load_compose(env if use_env else None)
    validator = jsonschema.Draft202012Validator(compose_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_schema_check_catches_a_broken_file(env: dict[str, str]) -> None:
    doc = load_compose(env)
    doc["services"]["hrm"]["healthcheck"]["interval"] = ["10s"]
    doc["services"]["router"]["depends_on"]["hrm"]["condition"] = "service_ready"
    assert len(list(jsonschema.Draft202012Validator(compose_schema()).iter_errors(doc))) >= 2


def test_services_and_profiles(services: dict[str, Any]) -> None:
    assert set(services) == GPU | CPU | {"models"}
    for name in GPU:
        assert services[name]["profiles"] == ["gpu"], name
    for name in CPU:
        assert services[name]["profiles"] == ["cpu"], name
    assert sorted(services["models"]["profiles"]) == ["cpu", "gpu"]


def test_every_server_has_a_healthcheck_and_one_shots_do_not_restart(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        if name in ONE_SHOT:
            assert svc["restart"] == "no" and "healthcheck" not in svc, name
            continue
        hc = svc.get("healthcheck")
        assert hc and hc["test"][0] == "CMD" and not hc.get("disable"), f"{name}: no healthcheck"
        assert svc["restart"] == "unless-stopped", name
    paths = {
        name: " ".join(svc["healthcheck"]["test"]) for name, svc in services.items() if name not in ONE_SHOT
    }
    assert "/health " in paths["vllm"] and "/dev/tcp/127.0.0.1/8000" in paths["vllm"]
    assert "/health " in paths["tgi"] and "/dev/tcp/127.0.0.1/80 " in paths["tgi"]
    for ours in ("hrm", "router", "hrm-cpu", "router-cpu"):
        assert "/readyz" in paths[ours], ours


def test_depends_on_have_conditions_on_existing_services_in_the_same_profile(
    services: dict[str, Any],
) -> None:
    for name, svc in services.items():
        for dep, spec in svc.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            assert set(services[dep]["profiles"]) >= set(svc["profiles"]), (
                f"{name} -> {dep}: profile mismatch"
            )
            cond = spec["condition"]
            if cond == "service_healthy":
                assert "healthcheck" in services[dep], (
                    f"{name} waits for {dep} to be healthy; it has no healthcheck"
                )
            else:
                assert cond == "service_completed_successfully" and dep in ONE_SHOT, (name, dep, cond)
    assert set(services["router"]["depends_on"]) == {"hrm", "vllm", "tgi"}
    assert set(services["router-cpu"]["depends_on"]) == {"hrm-cpu"}
    assert services["bench"]["depends_on"]["router"]["condition"] == "service_healthy"


def test_models_mounted_read_only_except_the_builder(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        mounts = [v for v in svc.get("volumes", []) if v.split(":")[1] == "/models"]
        assert len(mounts) == 1, f"{name}: models not mounted"
        assert mounts[0].endswith(":ro") == (name != "models"), name


def test_gpu_reservations_only_on_gpu_services(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        devices = svc.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        if name in NEEDS_GPU:
            assert devices and devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"], (
                name
            )
        else:
            assert not devices, f"{name} must run without a GPU"


def test_hf_token_passed_through(services: dict[str, Any]) -> None:
    for name in ("vllm", "tgi", "hrm", "router", "bench", "hrm-cpu", "router-cpu"):
        assert "HF_TOKEN" in services[name]["environment"], name


def test_commands_and_ports(services: dict[str, Any], env: dict[str, str]) -> None:
    assert services["hrm"]["command"] == (
        "abtest serve hrm --model-path /models/hrm-tiny --host 0.0.0.0 --port 8000"
    )
    assert services["hrm-cpu"]["command"] == services["hrm"]["command"]
    assert services["router"]["command"].startswith("abtest serve router --config /app/compose/abtest.toml")
    assert "/app/compose/abtest.cpu.toml" in services["router-cpu"]["command"]
    assert services["bench"]["command"].startswith("abtest run --config compose/abtest.toml")
    assert services["vllm"]["image"].startswith("vllm/vllm-openai")
    assert services["tgi"]["image"].startswith("ghcr.io/huggingface/text-generation-inference")
    assert "--model /models/llama-tiny" in services["vllm"]["command"]
    assert "--model-id /models/llama-tiny" in services["tgi"]["command"]
    ports = {name: svc["ports"][0] for name, svc in services.items() if "ports" in svc}
    assert ports == {
        "hrm": "8000:8000", "hrm-cpu": "8000:8000", "vllm": "8001:8000", "tgi": "8002:80",
        "router": "8080:8080", "router-cpu": "8080:8080",
    }  # fmt: skip
    header = (COMPOSE_DIR / "docker-compose.yml").read_text().split("services:")[0]
    for port in ("8000", "8001", "8002", "8080"):
        assert port in header, f"port {port} undocumented in the compose header"


def test_vllm_model_switch_to_hrm_tiny(env: dict[str, str]) -> None:
    services = load_compose({**env, "VLLM_MODEL": "/models/hrm-tiny", "VLLM_SERVED_MODEL_NAME": "hrm-tiny"})
    assert "--model /models/hrm-tiny --served-model-name hrm-tiny" in services["services"]["vllm"]["command"]


def test_every_variable_is_documented_in_env_example(env: dict[str, str]) -> None:
    missing = variables_used() - set(env)
    assert not missing, f"add to compose/.env.example: {sorted(missing)}"


def test_builds_point_at_dockerfile_targets(services: dict[str, Any]) -> None:
    from tests.compose.dockerfile import stage_names

    targets = stage_names()
    for name, svc in services.items():
        if "build" in svc:
            assert (
                COMPOSE_DIR / svc["build"]["context"] / svc["build"]["dockerfile"]
            ).resolve() == REPO / "Dockerfile"
            assert svc["build"]["target"] in targets, name
            assert svc["image"].startswith(
                f"abtest/{'router' if svc['build']['target'] == 'router' else 'hrm-serve'}:"
            )
    assert (
        services["hrm"]["build"]["target"] == "hrm-serve"
        and services["router"]["build"]["target"] == "router"
    )


def test_mounted_config_files_exist(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("./"):
                assert (COMPOSE_DIR / src).is_file(), f"{name}: {src} missing"


@pytest.mark.skipif(
    shutil.which("docker-compose") is None, reason="apt-get install docker-compose (v1 `config`)"
)
def test_docker_compose_config_accepts_the_file() -> None:
    for profile in ("gpu", "cpu"):
        out = subprocess.run(
            ["docker-compose", "-f", str(COMPOSE_DIR / "docker-compose.yml"), "--env-file",
             str(COMPOSE_DIR / ".env.example"), "--profile", profile, "config", "--quiet"],
            capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
