"""Every `abtest ...` command in compose, the Dockerfile and deploy/k8s parses under the
real CLI (options exist, values have the right types), without running it."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.compose.composefile import COMPOSE_DIR, REPO, load_compose, read_env_file
from tests.compose.dockerfile import stages
from tests.compose.test_k8s import by_kind


def commands() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, svc in load_compose(read_env_file(COMPOSE_DIR / ".env.example"))["services"].items():
        argv = shlex.split(svc["command"])
        if argv[0] == "abtest":
            out[f"compose:{name}"] = argv
    for target in ("hrm-serve", "router"):
        (cmd,) = stages()[target].values("CMD")
        out[f"dockerfile:{target}"] = shlex.split(cmd.strip("[]").replace('", "', " ").replace('"', ""))
    for kind in ("Deployment", "Job"):
        for name, doc in by_kind(kind).items():
            (container,) = doc["spec"]["template"]["spec"]["containers"]
            out[f"k8s:{name}"] = list(container["command"])
    return out


def map_paths(argv: list[str]) -> list[str]:
    """Container config paths -> the repo's files (options with exists=True check them)."""
    mapping = {
        "/app/compose/": str(COMPOSE_DIR) + "/",
        "compose/": str(COMPOSE_DIR) + "/",
        "/etc/abtest/abtest.toml": str(COMPOSE_DIR / "abtest.toml"),
    }
    out = []
    for arg in argv:
        for prefix, repl in mapping.items():
            if arg.startswith(prefix):
                arg = repl + arg.removeprefix(prefix)
                break
        out.append(arg)
    return out


def invoke_help(args: list[str]) -> tuple[int, str]:
    """Parse `args` with the real CLI, then stop at `--help` (eager): unknown commands and
    options fail (exit 2) while nothing is run."""
    from typer.testing import CliRunner

    from benchmarks.cli import app

    result = CliRunner().invoke(app, [*args, "--help"])
    return result.exit_code, result.output


@pytest.mark.parametrize(("where", "argv"), sorted(commands().items()))
def test_command_parses_under_the_cli(where: str, argv: list[str]) -> None:
    assert argv[0] == "abtest", where
    code, out = invoke_help(map_paths(argv[1:]))
    assert code == 0, f"{where}: {shlex.join(argv)}\n{out}"
    assert "Usage: abtest " + " ".join(a for a in argv[1:3] if not a.startswith("-")) in " ".join(out.split())


def test_bad_option_is_caught_by_the_parse_check() -> None:
    code, out = invoke_help(["serve", "hrm", "--modle-path", "x"])
    assert code == 2 and "No such option" in out
    code, out = invoke_help(["serve", "hrmm"])
    assert code == 2


def test_relative_paths_resolve_from_app_dir() -> None:
    assert (REPO / "compose" / "abtest.toml").is_file() and Path("compose/abtest.toml").parts[0] == "compose"
