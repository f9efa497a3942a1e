"""deploy/k8s manifests: schema-valid for Kubernetes (kubernetes-validate ships the schemas
offline), with probes, Services and HPAs wired to the right Deployments."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.compose.composefile import REPO

K8S = REPO / "deploy" / "k8s"
K8S_VERSION = "1.30.0"


def docs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return out


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs() if d["kind"] == kind}


def test_manifests_validate_against_kubernetes_schemas() -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    checked = 0
    for doc in docs():
        if doc["kind"] == "Kustomization":
            continue
        kv.validate(doc, K8S_VERSION, strict=True)
        checked += 1
    assert checked >= 9


def test_validator_rejects_a_bad_manifest() -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    bad = by_kind("Deployment")["abtest-router"]
    bad = {**bad, "spec": {**bad["spec"], "replicas": "two"}}
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, K8S_VERSION, strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustom = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustom["resources"]) == files


@pytest.mark.parametrize(
    ("name", "port", "sub"), [("abtest-router", 8080, "router"), ("abtest-hrm", 8000, "hrm")]
)
def test_deployments_have_probes_service_and_hpa(name: str, port: int, sub: str) -> None:
    dep = by_kind("Deployment")[name]
    pod = dep["spec"]["template"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    assert container["command"][:3] == ["abtest", "serve", sub]
    assert container["ports"][0]["containerPort"] == port
    assert container["command"][-2:] == ["--port", str(port)]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    models = [m for m in container["volumeMounts"] if m["mountPath"] == "/models"]
    assert models and models[0]["readOnly"] is True
    svc = by_kind("Service")[name]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert svc["spec"]["ports"][0]["targetPort"] == container["ports"][0]["name"]
    hpa = by_kind("HorizontalPodAutoscaler")[name]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]


def test_router_runs_several_replicas_and_its_config_loads() -> None:
    assert by_kind("Deployment")["abtest-router"]["spec"]["replicas"] >= 2
    assert by_kind("HorizontalPodAutoscaler")["abtest-router"]["spec"]["minReplicas"] >= 2
    text = by_kind("ConfigMap")["abtest-router-config"]["data"]["abtest.toml"]
    from router.config import config_from_dict

    cfg = config_from_dict(tomllib.loads(text), path=Path("abtest.toml"))
    assert cfg.weights() == {"hrm": 1.0, "vllm": 1.0, "tgi": 1.0}
