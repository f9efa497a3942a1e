"""Incremental detokenization, stop strings and EOS."""

from __future__ import annotations

from hrm.params import SamplingParams
from hrm.stops import Detokenizer, StopChecker, final_text


def test_detokenizer_never_emits_half_a_character(engine):
    tok = engine.tokenizer
    text = "héllo ✓ 日本語 ok"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    # Byte-level BPE: some of these tokens are single bytes of multi-byte characters.
    assert any("\ufffd" in tok.decode([i]) for i in ids)
    det = Detokenizer(tok, tok("x")["input_ids"])
    pieces = [det.push(i) for i in ids]
    assert all("\ufffd" not in p for p in pieces)
    assert "".join(pieces) == text


def test_final_text_drops_trailing_incomplete_char(engine):
    tok = engine.tokenizer
    ids = tok("ok ✓", add_special_tokens=False)["input_ids"]
    assert final_text(tok, ids) == "ok ✓"
    # Cut inside the 3-byte check mark: the partial character is dropped.
    cut = next(n for n in range(len(ids), 0, -1) if "\ufffd" in tok.decode(ids[:n]))
    assert final_text(tok, ids[:cut]) == "ok "


def test_stop_checker_earliest_match_and_holdback():
    sc = StopChecker(("world", "lo w", "xyz"))
    text = "hello world"
    assert sc.find(text, 0) == 3  # "lo w" starts before "world"
    assert sc.find("abc", 0) == -1
    assert sc.holdback("hello wor") == 3  # "wor" may become "world"
    assert sc.holdback("hello") == 2  # "lo" may become "lo w"
    assert sc.holdback("abc") == 0


def _first_text(engine, prompt: str, n: int = 24) -> str:
    return engine.generate([prompt], SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True))[0].text


def test_stop_string_truncates_at_earliest_match(engine):
    full = _first_text(engine, "hello world")
    assert len(full) > 6
    stop = full[3:5]
    out = engine.generate(
        ["hello world"], SamplingParams(max_tokens=24, temperature=0.0, stop=(stop, "\x00zz"))
    )[0]
    assert out.finish_reason == "stop"
    assert out.text == full[: full.index(stop)]
    assert stop not in out.text
    # Stopped early: fewer tokens than the unconstrained run.
    assert len(out.token_ids) < 24


def test_stop_string_not_matched_runs_to_length(engine):
    out = engine.generate(["hello"], SamplingParams(max_tokens=5, temperature=0.0, stop=("\x00never",)))[0]
    assert out.finish_reason == "length"
    assert len(out.token_ids) == 5


def test_eos_finishes_and_is_not_in_text(sample_engine):
    from benchmarks.samples.tasks import task_examples

    eng = sample_engine
    prompts = [ex.prompt for ex in task_examples(4, seed=1)]
    outs = eng.generate(prompts, SamplingParams(max_tokens=64, temperature=0.0))
    eos = [o for o in outs if o.finish_reason == "eos"]
    assert eos, [o.text for o in outs]
    for o in eos:
        assert o.token_ids[-1] == eng.tokenizer.eos_token_id
        assert eng.tokenizer.eos_token not in o.text
    ignored = eng.generate(prompts[:1], SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True))[0]
    assert ignored.finish_reason == "length" and len(ignored.token_ids) == 40
