"""Sample models and their data: tokenizer, task generators, build safety, trained models."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from benchmarks.samples import tasks
from benchmarks.samples.prepare import MODEL_NAMES, _build_lock, _install, is_complete, read_metadata

# Conservative floors, well under the held-out accuracy measured at seed 0 (n=50 per task):
# hrm-tiny copy 1.00, reverse 0.98, sort 0.88 (add 0.32); llama-tiny 1.00, 0.94, 0.94 (add 1.00).
MIN_ACCURACY = {
    "llama-tiny": {"copy": 0.8, "reverse": 0.7, "sort": 0.7},
    "hrm-tiny": {"copy": 0.7, "reverse": 0.7, "sort": 0.6},
}

# --- task generators -------------------------------------------------------------------


def test_task_examples_are_deterministic_per_seed() -> None:
    a = tasks.task_examples(40, seed=7)
    assert a == tasks.task_examples(40, seed=7)
    assert a != tasks.task_examples(40, seed=8)
    assert tasks.free_text_prompts(10, 3) == tasks.free_text_prompts(10, 3)
    assert tasks.free_text_prompts(10, 3) != tasks.free_text_prompts(10, 4)


def test_task_examples_cycle_tasks_and_answers_are_right() -> None:
    examples = tasks.task_examples(8, seed=1)
    assert [ex.task for ex in examples] == list(tasks.TASKS) * 2
    for ex in examples:
        items = ex.prompt.split(":", 1)[1].rstrip("=").split()
        expected = {
            "add": lambda xs: str(int(xs[0]) + int(xs[2])),
            "copy": lambda xs: " ".join(xs),
            "reverse": lambda xs: " ".join(reversed(xs)),
            "sort": lambda xs: " ".join(sorted(xs)),
        }[ex.task](items)
        assert ex.reference == expected, ex


def test_train_and_heldout_prompts_are_disjoint() -> None:
    train = {ex.prompt for ex in tasks.task_examples(2000, seed=0, split="train")}
    heldout = {ex.prompt for ex in tasks.task_examples(400, seed=0, split="heldout")}
    heldout_other_seed = {ex.prompt for ex in tasks.task_examples(400, seed=99)}
    assert train and heldout
    assert not train & heldout
    assert not train & heldout_other_seed
    assert all(tasks.is_heldout(p) for p in heldout)


def test_unknown_task_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown task 'mul'"):
        tasks.task_examples(3, seed=0, tasks=["copy", "mul"])


def test_score_rule() -> None:
    ex = tasks.TaskExample("copy", "copy: a b =", "a b")
    assert tasks.score(ex, " a b")
    assert tasks.score(ex, "a b\nmore text")
    assert not tasks.score(ex, " a b c")
    assert not tasks.score(ex, "")


# --- tokenizer -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchmarks.samples.data import tokenizer_corpus
    from benchmarks.samples.tokenizer import save_tokenizer, train_tokenizer

    out = tmp_path_factory.mktemp("tok")
    save_tokenizer(train_tokenizer(tokenizer_corpus(0)), out)
    return out


def test_tokenizer_round_trip_bos_and_digits(tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    for text in [
        "add: 3 + 5 =",
        "reverse: k d m a = a m d k",
        "the cat sees a red ball.",
        "héllo wörld ✓ 1234",
    ]:
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id and tok.eos_token_id not in ids
        assert tok.decode(ids, skip_special_tokens=True) == text
    pieces = tok.convert_ids_to_tokens(tok("12345", add_special_tokens=False)["input_ids"])
    assert pieces == ["1", "2", "3", "4", "5"]


def test_tokenizer_is_deterministic(tokenizer_dir: Path) -> None:
    from benchmarks.samples.data import tokenizer_corpus
    from benchmarks.samples.tokenizer import train_tokenizer

    again = train_tokenizer(tokenizer_corpus(0))
    saved = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    assert json.loads(again.backend_tokenizer.to_str()) == saved


def test_training_rows_have_answer_only_labels(tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    from benchmarks.samples.data import IGNORE, DataConfig, build_training_data

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    data = build_training_data(tok, DataConfig(examples_per_task=5, free_text=0, seed=0))
    for i in range(len(data)):
        n = int(data.lengths[i])
        ids, labels = data.input_ids[i].tolist(), data.labels[i].tolist()
        assert ids[0] == tok.bos_token_id and ids[n - 1] == tok.eos_token_id
        assert all(t == tok.pad_token_id for t in ids[n:]) and all(t == IGNORE for t in labels[n:])
        answer = [t for t in labels[:n] if t != IGNORE]
        text = tok.decode(ids[:n], skip_special_tokens=True)
        assert answer[-1] == tok.eos_token_id
        assert text.endswith(tok.decode(answer, skip_special_tokens=True))
        assert labels[0] == IGNORE and "=" not in tok.decode(answer)


def test_training_is_deterministic_per_seed(tokenizer_dir: Path) -> None:
    import dataclasses

    import torch
    from transformers import AutoTokenizer

    from benchmarks.samples.data import DataConfig, build_training_data
    from benchmarks.samples.train import default_specs, train_model

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    data = build_training_data(tok, DataConfig(examples_per_task=20, free_text=10, seed=0))
    spec = dataclasses.replace(default_specs()["hrm-tiny"], steps=3, batch_size=8, warmup=1)
    first, second = (train_model(spec, tok, data, seed=5).state_dict() for _ in range(2))
    other = train_model(spec, tok, data, seed=6).state_dict()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_unknown_model_kind_is_a_clear_error(tokenizer_dir: Path) -> None:
    import dataclasses

    from transformers import AutoTokenizer

    from benchmarks.samples.train import build_model, default_specs

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    spec = dataclasses.replace(default_specs()["llama-tiny"], kind="gpt9")
    with pytest.raises(ValueError, match="unknown model kind 'gpt9'.*hrm_text"):
        build_model(spec, tok, seed=0)


# --- build safety ----------------------------------------------------------------------


def test_incomplete_dir_is_not_a_model(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert not is_complete(tmp_path / "m")


def test_install_replaces_with_renames(tmp_path: Path) -> None:
    final, tmp = tmp_path / "m", tmp_path / ".tmp-m"
    final.mkdir()
    (final / "old").write_text("old")
    tmp.mkdir()
    (tmp / "new").write_text("new")
    _install(tmp, final)
    assert (final / "new").read_text() == "new" and not (final / "old").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def _hold_lock(root: str, seconds: float) -> None:
    with _build_lock(Path(root)):
        time.sleep(seconds)


def test_build_lock_is_exclusive_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_hold_lock, args=(str(tmp_path), 1.5))
    proc.start()
    deadline = time.monotonic() + 20
    while not (tmp_path / ".build.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    with _build_lock(tmp_path):
        waited = time.monotonic() - t0
    proc.join(10)
    assert waited > 0.5


# --- the trained sample models ---------------------------------------------------------


def test_sample_models_are_complete(sample_models: dict[str, Path]) -> None:
    assert set(sample_models) == set(MODEL_NAMES)
    for path in sample_models.values():
        assert is_complete(path), path


def test_hrm_config_format(hrm_tiny: Path) -> None:
    cfg = json.loads((hrm_tiny / "config.json").read_text())
    assert cfg["model_type"] == "hrm_text"
    assert cfg["prefix_lm"] is False
    assert cfg["eos_token_id"] == 2 and cfg["pad_token_id"] == 0
    gen = json.loads((hrm_tiny / "generation_config.json").read_text())
    assert gen["eos_token_id"] == 2 and gen["pad_token_id"] == 0


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_models_load_with_auto_classes(sample_models: dict[str, Path], name: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = sample_models[name]
    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path))
    expected = {"hrm-tiny": "HrmTextForCausalLM", "llama-tiny": "LlamaForCausalLM"}[name]
    assert type(model).__name__ == expected
    enc = tok(["copy: a b c ="], return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits
    assert logits.shape == (1, enc["input_ids"].shape[1], len(tok))
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_heldout_accuracy_beats_floor(sample_models: dict[str, Path], name: str) -> None:
    from benchmarks.samples.evaluation import evaluate

    acc = evaluate(sample_models[name], n=50, tasks=list(MIN_ACCURACY[name]))
    for task, floor in MIN_ACCURACY[name].items():
        assert acc[task] >= floor, (name, task, acc)
    assert read_metadata(sample_models[name])["heldout_accuracy"]["copy"] == pytest.approx(acc["copy"])


def test_models_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from benchmarks.samples.prepare import models_dir

    monkeypatch.setenv("ABTEST_MODELS_DIR", str(tmp_path / "elsewhere"))
    assert models_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("ABTEST_MODELS_DIR")
    monkeypatch.chdir(tmp_path)
    assert models_dir() == tmp_path / "models"


def test_ensure_models_does_not_rebuild_present_models(sample_models: dict[str, Path]) -> None:
    from benchmarks.samples.prepare import ensure_models

    root = sample_models["hrm-tiny"].parent
    before = {n: (p / "model.safetensors").stat().st_mtime_ns for n, p in sample_models.items()}
    t0 = time.monotonic()
    again = ensure_models(root, progress=False)
    assert time.monotonic() - t0 < 1.0
    assert again == sample_models
    assert {n: (p / "model.safetensors").stat().st_mtime_ns for n, p in again.items()} == before


def test_cli_models_list_and_eval(sample_models: dict[str, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from benchmarks.cli import app

    root = str(sample_models["hrm-tiny"].parent)
    runner = CliRunner()
    listed = runner.invoke(app, ["models", "list", "--models-dir", root])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count("ready") == 2
    evaluated = runner.invoke(app, ["models", "eval", "--models-dir", root, "--n", "8"])
    assert evaluated.exit_code == 0, evaluated.output
    assert "hrm-tiny" in evaluated.output and "reverse" in evaluated.output
    missing = runner.invoke(app, ["models", "eval", "--models-dir", str(tmp_path)])
    assert missing.exit_code == 1 and "abtest models prepare" in " ".join(missing.output.split())


def test_interrupted_build_leaves_no_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from benchmarks.samples import prepare, train

    def tiny_training(spec, tokenizer, data, seed=0, progress=None):  # type: ignore[no-untyped-def]
        return train.build_model(spec, tokenizer, seed)

    def crash_while_saving(model, tokenizer, directory):  # type: ignore[no-untyped-def]
        (directory / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "train_model", tiny_training)
    monkeypatch.setattr(train, "save_model", crash_while_saving)
    (tmp_path / ".tmp-hrm-tiny-stale").mkdir()  # left by a killed build
    with pytest.raises(KeyboardInterrupt):
        prepare.ensure_models(tmp_path, progress=False)
    assert not (tmp_path / "hrm-tiny").exists() and not (tmp_path / "llama-tiny").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".build.lock"]
