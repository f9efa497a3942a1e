"""report.html is self-contained and renders in headless Chromium with no console errors.

CI must install Chromium (Debian/Ubuntu: `apt-get install -y chromium`); without it the
browser test is skipped with that reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.benchmarks.fakes  # noqa: F401 - registers kind "fake"
from benchmarks.cli import app

CHROMIUM = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    cfg = root / "c.toml"
    cfg.write_text(
        '[[backends]]\nname = "ref"\nkind = "fake"\n'
        '[[backends]]\nname = "other"\nkind = "fake"\nvariant = "v"\n'
    )
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--config",
            str(cfg),
            "--n",
            "12",
            "--concurrency",
            "1,2",
            "--quiet",
            "--results-dir",
            str(root / "r"),
            "--name",
            "html <&> test",
        ],
    )
    assert res.exit_code == 0, res.output
    (d,) = list((root / "r").iterdir())
    return d / "report.html"


def _chromium(url: str) -> tuple[str, str]:
    assert CHROMIUM is not None
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            url,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
    )
    return proc.stdout, proc.stderr


def _console_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert html.count("<svg") >= 4  # 2 CDFs, throughput vs concurrency, divergence histogram
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing fetched from the network
    assert "<script" not in html
    assert "html &lt;&amp;&gt; test" in html  # the run name is escaped


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium_without_console_errors(report: Path, tmp_path: Path) -> None:
    # Negative control: the same check does see console errors in a broken page.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    _, err = _chromium(bad.as_uri())
    assert any("boom" in ln for ln in _console_lines(err))

    dom, err = _chromium(report.as_uri())
    assert _console_lines(err) == []
    assert dom.count("<svg") >= 4 and "Latency and throughput" in dom and "First divergence" in dom
