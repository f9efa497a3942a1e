"""End to end on the real sample models: in-process backends, and through a live router."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from benchmarks.cli import app


def _run(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output + repr(res.exception)
    return res


def _records(d: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (d / "requests.jsonl").read_text().splitlines()]


def test_same_seed_same_hash_and_same_greedy_outputs(
    tmp_path: Path, hrm_tiny: Path, llama_tiny: Path
) -> None:
    args = [
        "run",
        "--backend",
        f"hrm=hrm:{hrm_tiny}",
        "--backend",
        f"hf-hrm=hf:{hrm_tiny}",
        "--backend",
        f"llama=hf:{llama_tiny}",
        "--reference",
        "hf-hrm",
        "--n",
        "8",
        "--max-tokens",
        "12",
        "--warmup",
        "0",
        "--quiet",
        "--seed",
        "3",
    ]
    runs = []
    for k in ("a", "b"):
        _run([*args, "--results-dir", str(tmp_path / k)])
        (d,) = list((tmp_path / k).iterdir())
        man = json.loads((d / "manifest.json").read_text())
        outs = sorted(
            (r["target"], r["request_id"], r["repeat"], r["text"], tuple(r["token_ids"] or ()))
            for r in _records(d)
            if r["type"] == "generate"
        )
        runs.append((man["request_list_sha256"], outs, d))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == runs[1][1]
    ag = json.loads((runs[0][2] / "agreement.json").read_text())
    # our engine on hrm-tiny matches the HF reference implementation of the same checkpoint
    assert ag["vs_reference"]["hrm"]["exact_match_rate"] >= 0.875
    assert ag["noise_floor"]["hf-hrm"]["exact_match_rate"] == 1.0
    assert ag["loglikelihood"]["hrm"]["ll_mean_abs_delta"] < 1e-3
    assert set(ag["task_accuracy"]) == {"hrm", "hf-hrm", "llama"}
    s = json.loads((runs[0][2] / "summary.json").read_text())
    assert all(s["metrics"][t]["c=1"]["failed"] == 0 for t in ("hrm", "hf-hrm", "llama"))


def test_token_counts_fall_back_to_the_backend_tokenizer_and_mismatches_are_flagged(
    tmp_path: Path, hrm_tiny: Path
) -> None:
    import tests.benchmarks.fakes  # noqa: F401 - registers kind "fake"

    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'[[backends]]\nname = "tok"\nkind = "fake"\nno_counts = true\ntokenizer_id = "{hrm_tiny}"\n'
        '[[backends]]\nname = "off"\nkind = "fake"\ncount_offset = 1\n'
    )
    _run(
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
            "--no-cross-score",
            "--results-dir",
            str(tmp_path / "r"),
        ]
    )
    (d,) = list((tmp_path / "r").iterdir())
    m = json.loads((d / "summary.json").read_text())["metrics"]
    assert m["tok"]["c=1"]["token_count_sources"] == {"tokenizer": 3}
    assert m["tok"]["c=1"]["total_output_tokens"] > 0
    assert m["off"]["c=1"]["token_count_mismatches"] == 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serve(app_: Any) -> Iterator[str]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app_, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "router did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_run_through_a_live_router(tmp_path: Path, hrm_tiny: Path, llama_tiny: Path) -> None:
    from router.app import create_app
    from router.config import config_from_dict

    cfg = config_from_dict(
        {
            "backends": [
                {"name": "hrm", "kind": "hrm", "model": str(hrm_tiny)},
                {"name": "llama", "kind": "hf", "model": str(llama_tiny)},
            ],
            "router": {"seed": 1},
        }
    )
    with _serve(create_app(cfg)) as url:
        _run(
            [
                "run",
                "--via-router",
                url,
                "--router-backend",
                "hrm",
                "--router-backend",
                "llama",
                "--n",
                "6",
                "--max-tokens",
                "12",
                "--repeats",
                "1",
                "--warmup",
                "1",
                "--quiet",
                "--results-dir",
                str(tmp_path / "p"),
            ]
        )
        _run(
            [
                "run",
                "--via-router",
                url,
                "--n",
                "6",
                "--max-tokens",
                "12",
                "--repeats",
                "1",
                "--warmup",
                "0",
                "--quiet",
                "--no-cross-score",
                "--results-dir",
                str(tmp_path / "s"),
            ]
        )
        _run(
            [
                "run",
                "--via-router",
                url,
                "--router-backend",
                "hrm",
                "--router-stream",
                "--n",
                "6",
                "--max-tokens",
                "12",
                "--repeats",
                "1",
                "--warmup",
                "0",
                "--quiet",
                "--no-cross-score",
                "--results-dir",
                str(tmp_path / "sse"),
            ]
        )
    (d,) = list((tmp_path / "p").iterdir())
    recs = [r for r in _records(d) if r["type"] == "generate" and not r["warmup"]]
    assert {(r["target"], r["served_by"]) for r in recs} == {("router/hrm", "hrm"), ("router/llama", "llama")}
    assert all(r["error_class"] is None and r["completion_tokens"] for r in recs)
    s = json.loads((d / "summary.json").read_text())
    assert s["served_by"] == {"router/hrm": {"hrm": 6}, "router/llama": {"llama": 6}}
    assert s["metrics"]["router/hrm"]["c=1"]["request_throughput"] > 0
    ag = json.loads((d / "agreement.json").read_text())
    assert ag["reference"] == "router/hrm" and ag["vs_reference"]["router/llama"]["n_pairs"] == 6
    (d2,) = list((tmp_path / "s").iterdir())
    served = {r["served_by"] for r in _records(d2) if r["type"] == "generate"}
    assert served <= {"hrm", "llama"} and served
    (d3,) = list((tmp_path / "sse").iterdir())
    sse = {r["request_id"]: r for r in _records(d3) if r["type"] == "generate"}
    plain = {r["request_id"]: r for r in recs if r["target"] == "router/hrm"}
    assert all(r["streamed"] and r["error_class"] is None and r["served_by"] == "hrm" for r in sse.values())
    assert {k: r["text"] for k, r in sse.items()} == {k: r["text"] for k, r in plain.items()}  # greedy
    m3 = json.loads((d3 / "summary.json").read_text())["metrics"]["router/hrm"]["c=1"]
    assert m3["mean_ttft_ms"] is not None and m3["mean_ttft_ms"] <= m3["mean_e2el_ms"]
    s2 = json.loads((d2 / "summary.json").read_text())
    assert set(s2["metrics_by_served_backend"]) == {f"router@{b}" for b in served}
