"""`abtest backends check|kinds` through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from benchmarks.cli import app
from tests.doubles.server import free_port


def test_kinds_lists_every_kind() -> None:
    result = CliRunner().invoke(app, ["backends", "kinds"])
    assert result.exit_code == 0
    for kind in ("hrm", "hf", "vllm", "tgi"):
        assert kind in result.output


def test_check_exits_nonzero_with_a_dead_url(tmp_path: Path, tgi_url: str, tiny_hrm: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "c.toml"
    config.write_text(f"""
[[backends]]
name = "tgi-up"
kind = "tgi"
url = "{tgi_url}"

[[backends]]
name = "hf-up"
kind = "hf"
model = "{tiny_hrm}"

[[backends]]
name = "vllm-dead"
kind = "vllm"
url = "{dead}"
retries = 0
[backends.timeouts]
connect = 1
total = 2
""")
    result = CliRunner().invoke(app, ["backends", "check", "--config", str(config)], terminal_width=200)
    assert result.exit_code == 1, result.output
    assert "down: vllm-dead" in result.output
    assert result.output.count(" up ") >= 2
    assert "max_new_tokens" in result.output  # tgi normalizations are listed
    ok = CliRunner().invoke(app, ["backends", "check", "--config", str(config), "-b", "tgi-up", "-b", "hf-up"],
                            terminal_width=200)
    assert ok.exit_code == 0, ok.output


def test_check_bad_config_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[backends]]\nname = "x"\nkind = "nope"\n')
    result = CliRunner().invoke(app, ["backends", "check", "--config", str(config)], terminal_width=200)
    assert result.exit_code == 2 and "unknown kind 'nope'" in result.output
