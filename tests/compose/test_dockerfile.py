"""Static checks of the multi-stage Dockerfile and .dockerignore."""

from __future__ import annotations

import shlex

import pytest

from tests.compose.composefile import REPO
from tests.compose.dockerfile import Stage, global_args, stages

pytest.importorskip("dockerfile_parse", reason="pip install dockerfile-parse")


def chain(all_stages: dict[str, Stage], name: str) -> list[str]:
    out = [name]
    while all_stages[out[-1]].base in all_stages:
        out.append(all_stages[out[-1]].base)
    return out


def inherited(all_stages: dict[str, Stage], name: str, instruction: str) -> list[str]:
    return [v for s in reversed(chain(all_stages, name)) for v in all_stages[s].values(instruction)]


def test_targets_exist_and_chain_to_the_base_image_arg() -> None:
    s = stages()
    assert {"base", "builder", "runtime", "hrm-serve", "router"} <= set(s)
    assert chain(s, "hrm-serve") == ["hrm-serve", "runtime", "base"]
    assert chain(s, "router") == ["router", "runtime", "base"]
    assert chain(s, "builder") == ["builder", "base"]
    assert s["base"].base == "${BASE_IMAGE}"
    assert any(a.startswith("BASE_IMAGE=") for a in global_args()), "BASE_IMAGE must be declared before FROM"


def test_torch_installed_explicitly_with_an_index_build_arg() -> None:
    builder = stages()["builder"]
    args = builder.values("ARG")
    assert "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in args
    assert any(a.startswith("TORCH_VERSION=") for a in args)
    runs = " ".join(builder.values("RUN"))
    assert 'pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"' in runs
    assert runs.index("torch==") < runs.index("pip install .")  # torch first, so pip never picks one


def test_runtime_is_slim_and_non_root() -> None:
    s = stages()
    runtime = s["runtime"]
    assert any("--from=builder /opt/venv /opt/venv" in c for c in runtime.values("COPY"))
    for target in ("hrm-serve", "router"):
        users = inherited(s, target, "USER")
        assert users and users[-1] not in ("root", "0"), target
        assert not any("pip install" in r for st in chain(s, target) for r in s[st].values("RUN")), target


@pytest.mark.parametrize(
    ("target", "port", "sub"), [("hrm-serve", "8000", "hrm"), ("router", "8080", "router")]
)
def test_targets_expose_healthcheck_and_serve(target: str, port: str, sub: str) -> None:
    stage = stages()[target]
    assert stage.values("EXPOSE") == [port]
    (hc,) = stage.values("HEALTHCHECK")
    assert f"http://127.0.0.1:{port}/readyz" in hc and "--start-period" in hc
    (cmd,) = stage.values("CMD")
    argv = shlex.split(cmd.strip("[]").replace('", "', " ").replace('"', ""))
    assert argv[:3] == ["abtest", "serve", sub] and argv[-2:] == ["--port", port]


def test_copied_sources_exist() -> None:
    for stage in stages().values():
        for value in stage.values("COPY"):
            parts = [p for p in value.split() if not p.startswith("--")]
            if "--from=" in value:
                continue
            for src in parts[:-1]:
                assert (REPO / src).exists(), f"COPY {src}: not in the repo"


def test_dockerignore_keeps_heavy_and_secret_paths_out() -> None:
    lines = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()}
    for path in (".git", ".venv", "models", "results", "compose/.env"):
        assert path in lines, f".dockerignore must exclude {path}"
    for needed in ("hrm", "backends", "router", "benchmarks", "compose", "pyproject.toml", "README.md"):
        assert needed not in lines, f"{needed} is needed in the build context"
