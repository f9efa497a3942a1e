"""Prompt sets, prompt files (errors name file and line) and the hashed request list."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.records import Params
from benchmarks.requests import PromptFileError, build_request_list, load_prompt_file
from benchmarks.requests.builtin import builtin_prompts


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_jsonl_with_references_and_choices(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "p.jsonl",
        '{"prompt": "a", "reference": "b"}\n\n{"prompt": "q", "continuations": [" x", " y"], "answer": 1}\n',
    )
    rows = load_prompt_file(p)
    assert rows[0].prompt == "a" and rows[0].reference == "b"
    assert rows[1].choices == (" x", " y") and rows[1].answer == 1


@pytest.mark.parametrize(
    "line,needle",
    [
        ('{"prompt": ""}', "'prompt' must be a non-empty string"),
        ('{"prompt": "x", "choices": []}', "'choices' must be a non-empty list"),
        ('{"prompt": "x", "choices": ["a"], "answer": 3}', "'answer' must be an index"),
        ('{"prompt": "x", "colour": 1}', "unknown field"),
        ('{"prompt": "x"', "invalid JSON"),
        ('["x"]', "JSON object"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, needle: str) -> None:
    p = _write(tmp_path, "bad.jsonl", '{"prompt": "ok"}\n' + line + "\n")
    with pytest.raises(PromptFileError) as e:
        load_prompt_file(p)
    assert f"{p}:2:" in str(e.value) and needle in str(e.value)


def test_csv_prompts_and_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, "p.csv", 'prompt,reference,choices,answer\nhi,there,,\nq,,"[""a"",""b""]",0\n')
    rows = load_prompt_file(p)
    assert rows[0].reference == "there" and rows[1].choices == ("a", "b") and rows[1].answer == 0
    bad = _write(tmp_path, "bad.csv", "prompt,reference\nok,x\n,y\n")
    with pytest.raises(PromptFileError, match=r"bad.csv:3: field 'prompt'"):
        load_prompt_file(bad)
    nohead = _write(tmp_path, "nohead.csv", "text\nhello\n")
    with pytest.raises(PromptFileError, match="'prompt' column"):
        load_prompt_file(nohead)


def test_missing_and_unsupported_files(tmp_path: Path) -> None:
    with pytest.raises(PromptFileError, match="file not found"):
        load_prompt_file(tmp_path / "nope.jsonl")
    with pytest.raises(PromptFileError, match="unsupported extension"):
        load_prompt_file(_write(tmp_path, "p.txt", "x"))


def test_builtin_default_set_is_seeded() -> None:
    a, b, c = (
        builtin_prompts("default", 12, 0),
        builtin_prompts("default", 12, 0),
        builtin_prompts("default", 12, 1),
    )
    assert a == b and a != c
    assert sum(1 for r in a if r.choices) == 3  # n/4 multiple-choice items
    assert all(r.reference for r in a if r.task not in ("free",))
    mc = next(r for r in a if r.choices)
    assert mc.answer is not None and mc.choices[mc.answer] == " " + mc.reference
    with pytest.raises(ValueError, match="valid sets"):
        builtin_prompts("nope", 3, 0)


def test_request_list_hash_is_stable_and_sensitive() -> None:
    raws = builtin_prompts("default", 8, 3)
    rl1 = build_request_list(raws, Params(max_tokens=16), seed=3, warmup=2)
    rl2 = build_request_list(builtin_prompts("default", 8, 3), Params(max_tokens=16), seed=3, warmup=2)
    assert rl1.sha256 == rl2.sha256 and len(rl1.sha256) == 64
    assert build_request_list(raws, Params(max_tokens=17), seed=3, warmup=2).sha256 != rl1.sha256
    assert build_request_list(raws, Params(max_tokens=16), seed=4, warmup=2).sha256 != rl1.sha256
    assert [i.params.seed for i in rl1.items][:3] == [3, 4, 5]
    assert len(rl1.warmup) == 2 and all(w.id.startswith("warmup-") for w in rl1.warmup)
    assert len(rl1.scoring) == 2 and not any(i.choices for i in rl1.items)
