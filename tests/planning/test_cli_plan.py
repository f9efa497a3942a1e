"""`abtest plan` through the real Typer app: output, exit codes, --write-env, config input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import app
from benchmarks.planning.envfile import update_env_file
from tests.planning.archs import HRM_TEXT_SAVED, LLAMA3_8B, LLAMA3_70B


def model_dir(root: Path, name: str, cfg: dict) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["plan", *args])
    return result.exit_code, result.output


def test_plan_prints_parallelism_and_flags(tmp_path: Path) -> None:
    code, out = invoke("--model", str(model_dir(tmp_path, "llama3-70b", LLAMA3_70B)), "--gpus", "A100-40:4")
    assert code == 0, out
    assert "TP=4 DP=1 EP=1" in out and "--tensor-parallel-size 4" in out and "assumptions:" in out
    code, out = invoke(
        "--model", str(tmp_path / "llama3-70b" / "config.json"), "--gpus", "H100:4", "--engine", "tgi"
    )
    assert code == 0 and "--num-shard 2" in out and "--max-total-tokens 8192" in out


def test_model_that_does_not_fit_exits_non_zero_with_advice(tmp_path: Path) -> None:
    code, out = invoke("--model", str(model_dir(tmp_path, "big", LLAMA3_70B)), "--gpus", "L4:1")
    assert code == 2 and "does not fit on L4:1" in out and "--gpus" in out


@pytest.mark.parametrize(("args", "needle"), [
    (["--gpus", "Z80:2"], "unknown GPU 'Z80'"),
    (["--gpus", "H100:1", "--engine", "sglang"], "--engine 'sglang'"),
    (["--gpus", "H100:1", "--dtype", "int3"], "--dtype 'int3'"),
])  # fmt: skip
def test_bad_options_name_the_option(tmp_path: Path, args: list[str], needle: str) -> None:
    code, out = invoke("--model", str(model_dir(tmp_path, "m", LLAMA3_8B)), *args)
    assert code == 2 and needle in out


def test_missing_model_path_is_a_clear_error(tmp_path: Path) -> None:
    code, out = invoke("--model", str(tmp_path / "nope"), "--gpus", "H100:1")
    assert code == 2 and "no such file or directory" in out


def test_write_env_updates_compose_env_in_place(tmp_path: Path) -> None:
    compose = tmp_path / "compose"
    compose.mkdir()
    env = compose / ".env"
    env.write_text('# keep me\nHF_TOKEN=\nVLLM_ARGS="--gpu-memory-utilization 0.40"\nVLLM_GPU_COUNT=1\n')
    llama = model_dir(tmp_path / "models", "llama3-8b", LLAMA3_8B)
    code, out = invoke("--model", str(llama), "--gpus", "H100:2", "--write-env", str(env))
    assert code == 0, out
    text = env.read_text()
    assert text.startswith("# keep me\nHF_TOKEN=\n")
    assert 'VLLM_ARGS="--tensor-parallel-size 1 --data-parallel-size 2 --max-model-len 8192' in text
    assert "VLLM_GPU_COUNT=2" in text and "VLLM_MODEL=/models/llama3-8b" in text  # ../models is mounted
    assert text.count("VLLM_ARGS=") == 1


def test_env_file_quoting_round_trips(tmp_path: Path) -> None:
    from tests.compose.composefile import read_env_file

    env = tmp_path / ".env"
    update_env_file(env, {"A": "--x 1 --y", "B": "plain", "C": ""})
    assert read_env_file(env) == {"A": "--x 1 --y", "B": "plain", "C": ""}


def test_plan_from_abtest_config_uses_backend_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model_dir(tmp_path / "models", "hrm-big", {**HRM_TEXT_SAVED, "hidden_size": 4096, "head_dim": 128})
    cfg = tmp_path / "abtest.toml"
    cfg.write_text('[[backends]]\nname = "h"\nkind = "tgi"\nurl = "http://x:80"\nmodel = "/models/hrm-big"\n')
    monkeypatch.setenv("ABTEST_MODELS_DIR", str(tmp_path / "models"))
    code, out = invoke("--model", str(cfg), "--gpus", "L4:1")
    assert code == 0, out
    assert "== backend h (tgi) ==" in out and "--num-shard 1" in out and "hrm_text" in out
    empty = tmp_path / "empty.toml"
    empty.write_text(
        '[[backends]]\nname = "v"\nkind = "vllm"\nurl = "http://x:8000"\nmodel = "served-name"\n'
    )
    code, out = invoke("--model", str(empty), "--gpus", "L4:1")
    assert code == 2 and "pass --model DIR" in out


def test_plan_reads_the_real_sample_model(hrm_tiny: Path) -> None:
    code, out = invoke("--model", str(hrm_tiny), "--gpus", "T4:1")
    assert code == 0 and "[safetensors-header]" in out and "TP=1" in out
