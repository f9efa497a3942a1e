"""The strict vLLM double and the vllm adapter on it (generate, stream, echo scoring)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from backends.base import create_backend
from backends.errors import BackendRejected
from backends.types import SamplingParams
from tests.doubles import start_vllm_double

GREEDY = SamplingParams(max_tokens=6, temperature=0.0)


def test_double_is_strict(vllm_url: str) -> None:
    r = httpx.post(f"{vllm_url}/v1/completions", json={"model": "hrm-tiny", "prompt": "hi", "bogus": 1})
    assert r.status_code == 400 and r.json()["error"]["param"] == "bogus"
    r = httpx.post(f"{vllm_url}/v1/completions", json={"model": "other", "prompt": "hi"})
    assert r.status_code == 404 and "does not exist" in r.json()["error"]["message"]
    r = httpx.post(f"{vllm_url}/v1/completions", json={"model": "hrm-tiny", "prompt": "hi", "top_p": 0})
    assert r.status_code == 400 and r.json()["error"]["param"] == "top_p"


def test_double_echo_returns_prompt_logprobs(vllm_url: str) -> None:
    body = {"model": "hrm-tiny", "prompt": "The quick", "max_tokens": 1, "echo": True, "logprobs": 1,
            "temperature": 0}
    choice = httpx.post(f"{vllm_url}/v1/completions", json=body).json()["choices"][0]
    lp = choice["logprobs"]
    assert choice["text"].startswith("The quick")
    assert lp["token_logprobs"][0] is None and all(x < 0 for x in lp["token_logprobs"][1:])
    assert lp["text_offset"] == sorted(lp["text_offset"])


async def test_adapter_probes_capabilities(vllm_url: str) -> None:
    backend = create_backend({"name": "v", "kind": "vllm", "url": vllm_url})
    await backend.start()
    info = await backend.info()
    assert info.model == "hrm-tiny" and info.kind == "vllm"
    assert info.capabilities.loglikelihood and info.capabilities.token_logprobs and info.capabilities.streaming
    assert info.capabilities.max_context == 256
    assert await backend.health()
    await backend.close()


async def test_adapter_generate_sends_normalized_body(vllm_url: str, vllm_app: Any) -> None:
    backend = create_backend({"name": "v", "kind": "vllm", "url": vllm_url, "model": "hrm-tiny"})
    await backend.start()
    out = await backend.generate(["The quick brown", "Paris is"], SamplingParams(max_tokens=6, temperature=0.0,
                                                                                  seed=0))
    sent = vllm_app.state.requests[-1]
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 6 and sent["seed"] == 0 and sent["logprobs"] == 1
    for c in out:
        assert c.completion_tokens == 6 and c.finish_reason == "length" and c.prompt_tokens
        assert c.token_logprobs is not None and len(c.token_logprobs) == 6
    await backend.close()


async def test_adapter_stop_and_stream(vllm_url: str) -> None:
    backend = create_backend({"name": "v", "kind": "vllm", "url": vllm_url, "model": "hrm-tiny"})
    await backend.start()
    base = (await backend.generate(["The quick brown"], GREEDY))[0]
    stop = base.text[2:4]
    cut = (await backend.generate(["The quick brown"], SamplingParams(max_tokens=6, temperature=0.0,
                                                                       stop=(stop,))))[0]
    assert cut.text == base.text[: base.text.find(stop)] and cut.finish_reason == "stop"
    events = [e async for e in backend.stream("The quick brown", GREEDY)]
    final = events[-1].final
    assert final is not None and "".join(e.text for e in events) == base.text == final.text
    assert final.prompt_tokens == base.prompt_tokens and final.completion_tokens == 6
    assert final.finish_reason == "length" and final.ttft_s is not None
    await backend.close()


async def test_text_offset_and_token_id_scoring_agree(vllm_url: str, tiny_hrm: Any) -> None:
    text = create_backend({"name": "v", "kind": "vllm", "url": vllm_url})
    ids = create_backend({"name": "v2", "kind": "vllm", "url": vllm_url, "tokenizer": str(tiny_hrm)})
    await text.start()
    await ids.start()
    prompts, conts = ["The quick brown ", "Paris is the", "copy: hello ->"], ["fox", " capital", " hello"]
    a, b = await text.loglikelihood(prompts, conts), await ids.loglikelihood(prompts, conts)
    for x, y in zip(a, b):
        assert x.ll == pytest.approx(y.ll, abs=1e-5) and x.token_logprobs == pytest.approx(y.token_logprobs)
        assert x.is_greedy is not None
    await text.close()
    await ids.close()


async def test_prefix_lm_scoring_is_flagged(vllm_url: str) -> None:
    backend = create_backend({"name": "v", "kind": "vllm", "url": vllm_url, "prefix_lm": True})
    await backend.start()
    (r,) = await backend.loglikelihood(["The quick"], [" brown"])
    assert any("prefix-LM" in a for a in r.approximations)
    await backend.close()


async def test_validation_error_is_rejected_with_message(vllm_url: str) -> None:
    backend = create_backend({"name": "v", "kind": "vllm", "url": vllm_url})
    await backend.start()
    with pytest.raises(BackendRejected, match="maximum context length") as info:
        await backend.generate(["hi"], SamplingParams(max_tokens=5000, temperature=0.0))
    assert info.value.status == 400 and info.value.field == "max_tokens"
    await backend.close()


async def test_echo_without_bos_still_aligns(tiny_hrm: Any, vllm_url: str) -> None:
    """llama.cpp leaves BOS out of the echo: both boundary methods must still pick the same tokens."""
    prompts, conts = ["The quick brown", "Paris is the"], [" fox", " capital"]
    ref = create_backend({"name": "ref", "kind": "vllm", "url": vllm_url})
    await ref.start()
    expected = await ref.loglikelihood(prompts, conts)
    await ref.close()
    with start_vllm_double(tiny_hrm, served_name="hrm-tiny", echo_drops_bos=True) as url:
        body = {"model": "hrm-tiny", "prompt": "The", "max_tokens": 1, "echo": True, "logprobs": 1}
        async with httpx.AsyncClient() as client:
            echoed = (await client.post(f"{url}/v1/completions", json=body)).json()
        assert echoed["choices"][0]["logprobs"]["tokens"][0] != "<s>"
        for extra in ({}, {"tokenizer": str(tiny_hrm)}):
            backend = create_backend({"name": "cpp", "kind": "vllm", "url": url, **extra})
            await backend.start()
            got = await backend.loglikelihood(prompts, conts)
            await backend.close()
            assert [g.ll for g in got] == pytest.approx([e.ll for e in expected], abs=1e-5), extra
