"""Config loading: the example file, TOML/YAML, precedence CLI > env > file, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from router.config import load_router_config

REPO = Path(__file__).resolve().parents[2]

YAML = """
backends:
  - {name: a, kind: router_fake}
  - {name: b, kind: router_fake}
router:
  split: {a: 3, b: 1}
  max_queue: 10
"""


def test_example_config_loads() -> None:
    cfg = load_router_config(REPO / "examples" / "router.toml")
    assert cfg.weights() == {"hrm": 80.0, "hf": 20.0}
    assert cfg.router.fallback == ["hf"] and cfg.router.policy == "weighted"


def test_yaml_and_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.router.fakes  # noqa: F401  (registers "router_fake")

    p = tmp_path / "r.yaml"
    p.write_text(YAML)
    assert load_router_config(p).router.max_queue == 10
    monkeypatch.setenv("ABTEST_MAX_QUEUE", "20")
    monkeypatch.setenv("ABTEST_SPLIT", '{"a": 1, "b": 1}')
    cfg = load_router_config(p)
    assert cfg.router.max_queue == 20 and cfg.weights() == {"a": 1, "b": 1}
    assert load_router_config(p, cli={"max_queue": 30, "enable_cors": None}).router.max_queue == 30


def test_errors_name_the_field(tmp_path: Path) -> None:
    import tests.router.fakes  # noqa: F401

    p = tmp_path / "r.toml"
    p.write_text('[[backends]]\nname = "a"\nkind = "router_fake"\n[router]\nsplit = { a = 1, ghost = 1 }\n')
    with pytest.raises(ValidationError, match="router.split: unknown backend 'ghost'"):
        load_router_config(p)
    p.write_text('[[backends]]\nname = "a"\nkind = "router_fake"\n[router]\nmax_queue = -1\n')
    with pytest.raises(ValidationError, match="max_queue"):
        load_router_config(p)
    p.write_text('[[backends]]\nname = "a"\nkind = "router_fake"\n[router]\npolicy = "nope"\n')
    with pytest.raises(ValidationError, match="router.policy: unknown policy 'nope'; valid: round_robin, weighted"):
        load_router_config(p)
