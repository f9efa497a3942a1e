"""`abtest run/report/compare/prompts` end to end on the fake backend (fast)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.benchmarks.fakes  # noqa: F401 - registers kind "fake"
from benchmarks.cli import app

REPO = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, args)
    return res.exit_code, res.output + (str(res.exception) if res.exit_code not in (0, 2) else "")


def _only_run_dir(root: Path) -> Path:
    (d,) = list(root.iterdir())
    return d


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "requests.jsonl").read_text().splitlines()]


def test_two_backend_run_writes_every_output(tmp_path: Path) -> None:
    code, out = _run(
        [
            "run",
            "--backend",
            "a=fake:x",
            "--backend",
            "b=fake:x",
            "--n",
            "12",
            "--concurrency",
            "1,3",
            "--warmup",
            "1",
            "--block-size",
            "4",
            "--quiet",
            "--results-dir",
            str(tmp_path),
            "--name",
            "ab",
            "--slo",
            "ttft=1000,e2el=5000",
        ]
    )
    assert code == 0, out
    d = _only_run_dir(tmp_path)
    assert d.name.endswith("-ab")
    for f in (
        "manifest.json",
        "requests.jsonl",
        "summary.json",
        "summary.csv",
        "agreement.json",
        "report.md",
        "report.html",
        "request_list.json",
    ):
        assert (d / f).is_file(), f
    man = json.loads((d / "manifest.json").read_text())
    assert man["status"] == "complete" and len(man["request_list_sha256"]) == 64
    assert {"git_sha", "versions", "hardware", "command", "seed"} <= set(man)
    summary = json.loads((d / "summary.json").read_text())
    m = summary["metrics"]["a"]["c=3"]
    for key in (
        "mean_ttft_ms",
        "p99_tpot_ms",
        "median_e2el_ms",
        "mean_itl_ms",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "request_goodput",
    ):
        assert m[key] is not None and m[key] > 0, key
    assert m["completed"] == 24  # 12 prompts x 2 repeats
    recs = [r for r in _records(d) if r["type"] == "generate"]
    assert len(recs) == 2 * (12 * 2 * 2 + 1)  # targets x (n x levels x repeats + warmup)
    # interleaved: the order of targets in the file switches back and forth within a level
    seq = [r["target"] for r in recs if r["level"] == "c=1" and r["repeat"] == 0]
    assert seq == ["a"] * 4 + ["b"] * 8 + ["a"] * 8 + ["b"] * 4  # ABBA blocks of 4
    ag = json.loads((d / "agreement.json").read_text())
    assert ag["vs_reference"]["b"]["exact_match_rate"] == 1.0 and ag["noise_floor"]["a"]["n_pairs"] == 12
    assert ag["cross_level"]["a"]["c=3"] == {
        "n_pairs": 12,
        "exact_match_rate": 1.0,
        "token_exact_match_rate": 1.0,
    }
    assert "first divergence" in (d / "report.html").read_text().lower()
    assert "mean_ttft_ms" in (d / "summary.csv").read_text().splitlines()[0]


def test_same_seed_same_hash_and_outputs(tmp_path: Path) -> None:
    outs = []
    for k in range(2):
        code, out = _run(
            [
                "run",
                "--backend",
                "a=fake:x",
                "--n",
                "6",
                "--repeats",
                "1",
                "--warmup",
                "0",
                "--quiet",
                "--results-dir",
                str(tmp_path / str(k)),
                "--seed",
                "7",
            ]
        )
        assert code == 0, out
        d = _only_run_dir(tmp_path / str(k))
        outs.append(
            (
                json.loads((d / "manifest.json").read_text())["request_list_sha256"],
                sorted((r["request_id"], r["text"]) for r in _records(d) if r["type"] == "generate"),
            )
        )
    assert outs[0] == outs[1]


def test_disagreeing_backend_and_error_classes(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[[backends]]\nname = "ref"\nkind = "fake"\n'
        '[[backends]]\nname = "other"\nkind = "fake"\nvariant = "v2"\nfail_every = 4\n'
    )
    code, out = _run(
        [
            "run",
            "--config",
            str(cfg),
            "--n",
            "16",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--results-dir",
            str(tmp_path / "r"),
        ]
    )
    assert code == 0, out
    d = _only_run_dir(tmp_path / "r")
    s = json.loads((d / "summary.json").read_text())
    assert s["metrics"]["other"]["c=1"]["errors_by_class"] == {"http_503": 4}
    ag = json.loads((d / "agreement.json").read_text())["vs_reference"]["other"]
    assert 0.0 < ag["exact_match_rate"] < 1.0 and ag["first_divergence_positions"]
    man = json.loads((d / "manifest.json").read_text())
    assert man["config"]["text"] == cfg.read_text() and len(man["config"]["sha256"]) == 64


def test_every_error_class_is_recorded(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[[backends]]\nname = "slow"\nkind = "fake"\nttft_ms = 500\n'
        '[[backends]]\nname = "empty"\nkind = "fake"\ntokens = 0\n'
        '[[backends]]\nname = "cut"\nkind = "fake"\nbreak_stream = true\n'
        '[[backends]]\nname = "nofinal"\nkind = "fake"\nno_final = true\n'
        '[[backends]]\nname = "picky"\nkind = "fake"\nreject_word = " "\nstreaming = false\n'
    )
    code, out = _run(
        [
            "run",
            "--config",
            str(cfg),
            "--n",
            "3",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--timeout",
            "0.1",
            "--no-cross-score",
            "--prompts",
            "free",
            "--results-dir",
            str(tmp_path / "r"),
        ]
    )
    assert code == 0, out
    m = json.loads((_only_run_dir(tmp_path / "r") / "summary.json").read_text())["metrics"]
    assert m["slow"]["c=1"]["errors_by_class"] == {"timeout": 3}
    assert m["empty"]["c=1"]["errors_by_class"] == {"empty_output": 3}
    assert m["cut"]["c=1"]["errors_by_class"] == {"stream_error": 3}
    assert m["nofinal"]["c=1"]["errors_by_class"] == {"truncated_output": 3}
    assert m["picky"]["c=1"]["errors_by_class"] == {"http_400": 3}  # non-streaming path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_url_is_recorded_and_others_still_run(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"
    code, out = _run(
        [
            "run",
            "--backend",
            "ok=fake:x",
            "--backend",
            f"dead=vllm:{dead}",
            "--n",
            "4",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--results-dir",
            str(tmp_path),
            "--no-cross-score",
        ]
    )
    assert code == 0, out
    s = json.loads((_only_run_dir(tmp_path) / "summary.json").read_text())
    assert s["metrics"]["ok"]["c=1"]["completed"] == 4
    assert s["metrics"]["dead"]["c=1"]["completed"] == 0
    assert s["metrics"]["dead"]["c=1"]["errors_by_class"] == {"connect_error": 4}


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--backend", "a=nope:x"], "unknown backend kind 'nope'"),
        (["--backend", "a-fake-x"], "NAME=KIND:URL_OR_PATH"),
        (["--backend", "a=fake:x", "--concurrency", "2", "--rate", "5"], "conflict"),
        (["--backend", "a=fake:x", "--via-router", "http://x"], "conflicts"),
        (["--backend", "a=fake:x", "--n", "4", "--duration", "3", "--rate", "2"], "conflict"),
        (["--backend", "a=fake:x", "--duration", "3"], "--duration needs --rate"),
        (["--backend", "a=fake:x", "--reference", "zz"], "--reference 'zz' is not a target"),
        (["--backend", "a=fake:x", "--slo", "ttft=fast"], "--slo"),
        (["--backend", "a=fake:x", "--backend", "a=fake:y"], "unique"),
        (["--backend", "a=fake:x", "--order", "zigzag"], "order"),
        (
            ["--backend", "a=fake:x", "--max-tokens", "0"],
            "--max-tokens: Input should be greater than or equal to 1",
        ),
        (["--backend", "a=fake:x", "--top-p", "2"], "--top-p: Input should be less than or equal to 1"),
        (["--backend", "a=fake:x", "--prompts", "nope"], "unknown prompt set 'nope'"),
    ],
)
def test_bad_input_clear_error_no_run_dir(tmp_path: Path, args: list[str], needle: str) -> None:
    code, out = _run(["run", *args, "--quiet", "--results-dir", str(tmp_path / "r")])
    assert code == 2 and needle in out, out
    assert not (tmp_path / "r").exists()


def test_malformed_prompt_file_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    code, out = _run(
        [
            "run",
            "--backend",
            "a=fake:x",
            "--prompts-file",
            str(p),
            "--quiet",
            "--results-dir",
            str(tmp_path / "r"),
        ]
    )
    assert code == 2 and "p.jsonl:2:" in out.replace("\n", "") and not (tmp_path / "r").exists()


def test_prompt_file_run_with_choices_and_open_loop(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(
        '{"prompt": "hello"}\n{"prompt": "world", "reference": "x"}\n'
        '{"prompt": "pick", "choices": [" a", " b"], "answer": 0}\n'
    )
    code, out = _run(
        [
            "run",
            "--backend",
            "a=fake:x",
            "--backend",
            "b=fake:x",
            "--prompts-file",
            str(p),
            "--n",
            "6",
            "--rate",
            "100",
            "--quiet",
            "--results-dir",
            str(tmp_path / "r"),
        ]
    )
    assert code == 0, out
    d = _only_run_dir(tmp_path / "r")
    s = json.loads((d / "summary.json").read_text())
    m = s["metrics"]["a"]["r=100/poisson"]
    assert m["completed"] == 12 and m["p99_schedule_lag_ms"] is not None and s["run"]["valid"]
    ll = [r for r in _records(d) if r["type"] == "loglikelihood"]
    assert {r["target"] for r in ll} == {"a", "b"} and all(len(r["ll"]) == 2 for r in ll)


def test_report_and_compare_and_prompts(tmp_path: Path) -> None:
    for k in ("x", "y"):
        code, out = _run(
            [
                "run",
                "--backend",
                "a=fake:x",
                "--n",
                "8",
                "--warmup",
                "0",
                "--quiet",
                "--results-dir",
                str(tmp_path / k),
            ]
        )
        assert code == 0, out
    da, db = _only_run_dir(tmp_path / "x"), _only_run_dir(tmp_path / "y")
    (da / "report.html").unlink()
    code, out = _run(["report", str(da)])
    assert code == 0 and (da / "report.html").is_file(), out
    code, out = _run(["compare", str(da), str(db), "--out", str(tmp_path / "cmp.json")])
    assert code == 0, out
    cmp = json.loads((tmp_path / "cmp.json").read_text())
    assert cmp["paired"] is True and cmp["rows"][0]["target"] == "a"
    code, out = _run(["report", str(tmp_path)])
    assert code == 2 and "not a run directory" in out
    code, out = _run(["prompts", "--set", "tasks", "--n", "3", "--seed", "1"])
    assert code == 0 and len(out.strip().splitlines()) == 3 and json.loads(out.splitlines()[0])["reference"]


def _spawn(args: list[str], env_extra: dict[str, str]) -> subprocess.Popen[bytes]:
    code = "import tests.benchmarks.fakes; from benchmarks.cli import app; app()"
    env = {**os.environ, **env_extra}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_records(path: Path, n: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(proc.stdout.read().decode() if proc.stdout else "exited")
        time.sleep(0.05)
    raise AssertionError("no records appeared")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_kill(tmp_path: Path, sig: signal.Signals) -> None:
    args = [
        "run",
        "--backend",
        "a=fake:x",
        "--backend",
        "b=fake:x",
        "--n",
        "16",
        "--warmup",
        "0",
        "--quiet",
        "--results-dir",
        str(tmp_path),
    ]
    slow = ["--config", str(tmp_path / "slow.toml")]
    (tmp_path / "slow.toml").write_text(
        '[[backends]]\nname = "s"\nkind = "fake"\ndelay_ms = 20\n'
        'max_tokens_cap = 64\napi_key_env = "NOT_A_SECRET"\n'
    )
    proc = _spawn(args + slow, {})
    time.sleep(0.2)
    d = None
    t0 = time.time()
    while d is None and time.time() - t0 < 30:
        dirs = [x for x in tmp_path.iterdir() if x.is_dir()]
        d = dirs[0] if dirs else None
        time.sleep(0.05)
    assert d is not None
    _wait_records(d / "requests.jsonl", 10, proc)
    proc.send_signal(sig)
    rc = proc.wait(timeout=20)
    assert rc == (130 if sig == signal.SIGINT else -9)
    before = len((d / "requests.jsonl").read_text().splitlines())
    assert 10 <= before < 3 * 16 * 2
    if sig == signal.SIGINT:
        assert json.loads((d / "manifest.json").read_text())["status"] == "interrupted"
    code, out = _run(["run", "--resume", str(d), "--quiet"])
    assert code == 0, out
    recs = [r for r in _records(d) if r["type"] == "generate"]
    keys = [(r["target"], r["level"], r["repeat"], r["request_id"]) for r in recs]
    assert len(keys) == len(set(keys)) == 3 * 16 * 2
    assert json.loads((d / "manifest.json").read_text())["status"] == "complete"
    code, out = _run(["run", "--resume", str(d), "--backend", "z=fake:x"])
    assert code == 2 and "--resume conflicts" in out


def test_duration_with_gamma_arrivals_sets_n(tmp_path: Path) -> None:
    code, out = _run(
        [
            "run",
            "--backend",
            "a=fake:x",
            "--rate",
            "40",
            "--arrival",
            "gamma",
            "--burstiness",
            "0.5",
            "--duration",
            "0.25",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--results-dir",
            str(tmp_path),
        ]
    )
    assert code == 0, out
    d = _only_run_dir(tmp_path)
    man = json.loads((d / "manifest.json").read_text())
    assert man["levels"] == ["r=40/gamma(0.5)"]
    recs = [r for r in _records(d) if r["type"] == "generate"]
    assert len(recs) == 10  # ceil(40 req/s x 0.25 s)
    sends = sorted(r["t_scheduled"] for r in recs)
    assert sends[-1] - sends[0] > 0.05  # spread over a schedule, not sent at once


def test_resume_refuses_a_tampered_request_list(tmp_path: Path) -> None:
    code, out = _run(
        [
            "run",
            "--backend",
            "a=fake:x",
            "--n",
            "4",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--results-dir",
            str(tmp_path),
        ]
    )
    assert code == 0, out
    d = _only_run_dir(tmp_path)
    rl = json.loads((d / "request_list.json").read_text())
    rl["items"][0]["prompt"] = "something else"
    (d / "request_list.json").write_text(json.dumps(rl))
    code, out = _run(["run", "--resume", str(d), "--quiet"])
    assert code == 2 and "does not match the manifest hash" in out
    code, out = _run(["run", "--resume", str(tmp_path / "nope"), "--quiet"])
    assert code == 2 and "not a run directory" in out
