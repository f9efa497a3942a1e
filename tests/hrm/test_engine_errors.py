"""Bad inputs raise InvalidRequestError naming the field; caps are applied silently."""

from __future__ import annotations

import pytest

from hrm.errors import InvalidRequestError
from hrm.params import SamplingParams


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (SamplingParams(temperature=-0.1), "temperature"),
        (SamplingParams(temperature=2.5), "temperature"),
        (SamplingParams(top_p=0.0), "top_p"),
        (SamplingParams(top_p=1.5), "top_p"),
        (SamplingParams(max_tokens=0), "max_tokens"),
        (SamplingParams(seed=-1), "seed"),
        (SamplingParams(stop=("",)), "stop"),
    ],
)
def test_bad_params(engine, params, field):
    with pytest.raises(InvalidRequestError) as e:
        engine.generate(["hello"], params)
    assert e.value.field == field
    assert field in str(e.value)


def test_bad_prompts(engine):
    with pytest.raises(InvalidRequestError) as e:
        engine.generate([], SamplingParams())
    assert e.value.field == "prompts"
    with pytest.raises(InvalidRequestError) as e:
        engine.generate(["ok", ""], SamplingParams())
    assert e.value.field == "prompts[1]"
    too_long = "hello world " * (engine.max_context)
    with pytest.raises(InvalidRequestError) as e:
        engine.generate(["ok", "fine", too_long], SamplingParams())
    assert e.value.field == "prompts[2]"
    assert "context window" in e.value.message
    with pytest.raises(InvalidRequestError) as e:
        engine.generate(["a", "b"], [SamplingParams()])
    assert e.value.field == "params"
    assert not engine.scheduler.has_work()  # nothing was admitted


def test_max_tokens_capped_by_engine_cap_and_context(tiny_causal):
    from hrm.engine import HrmEngine

    eng = HrmEngine.from_pretrained(tiny_causal, device="cpu", max_tokens_cap=7, context_window=32)
    out = eng.generate(["hello"], SamplingParams(max_tokens=1000, temperature=0.0, ignore_eos=True))[0]
    assert len(out.token_ids) == 7 and out.finish_reason == "length"
    eng.max_tokens_cap = 1000
    prompt = "hello world hello world"
    plen = len(eng.tokenizer(prompt)["input_ids"])
    out = eng.generate([prompt], SamplingParams(max_tokens=1000, temperature=0.0, ignore_eos=True))[0]
    assert len(out.token_ids) == 32 - plen  # stops at the context window
    assert out.prompt_tokens == plen


def test_prompt_tokens_include_bos(engine):
    out = engine.generate(["hello"], SamplingParams(max_tokens=1, temperature=0.0))[0]
    ids = engine.tokenizer("hello")["input_ids"]
    assert ids[0] == engine.tokenizer.bos_token_id
    assert out.prompt_tokens == len(ids)
