"""The same model behind every adapter: log-likelihood parity (|Δll| <= 1e-3) across
hf, the vLLM double, the TGI double and the in-process HRM engine, and greedy agreement
of hrm and hf, on the shared trained sample model `hrm-tiny`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.base import Backend, create_backend
from backends.types import SamplingParams
from benchmarks.samples.tasks import free_text_prompts, task_examples
from tests.doubles import start_tgi_double, start_vllm_double


@pytest.fixture(scope="module")
def doubles(hrm_tiny: Path) -> Iterator[dict[str, str]]:
    with start_vllm_double(hrm_tiny, served_name="hrm-tiny") as v, start_tgi_double(hrm_tiny) as t:
        yield {"vllm": v, "tgi": t}


@pytest.fixture
async def adapters(hrm_tiny: Path, doubles: dict[str, str]) -> AsyncIterator[dict[str, Backend]]:
    specs: list[dict[str, Any]] = [
        {"name": "hf", "kind": "hf", "model": str(hrm_tiny), "device": "cpu"},
        {"name": "hrm", "kind": "hrm", "model": str(hrm_tiny), "device": "cpu"},
        {"name": "vllm", "kind": "vllm", "url": doubles["vllm"], "model": "hrm-tiny"},
        {"name": "vllm-ids", "kind": "vllm", "url": doubles["vllm"], "model": "hrm-tiny", "tokenizer": str(hrm_tiny)},
        {"name": "tgi", "kind": "tgi", "url": doubles["tgi"]},
    ]
    built = {s["name"]: create_backend(s) for s in specs}
    for b in built.values():
        await b.start()
    yield built
    for b in built.values():
        await b.close()


def _pairs() -> tuple[list[str], list[str]]:
    examples = task_examples(8, seed=1)
    prompts = [e.prompt for e in examples] + ["the bird remembers ", "a dog"]
    conts = [" " + e.reference for e in examples] + ["the tree", " carries the ball"]
    return prompts, conts


async def test_loglikelihood_parity_across_adapters(adapters: dict[str, Backend]) -> None:
    prompts, conts = _pairs()
    results = {name: await b.loglikelihood(prompts, conts) for name, b in adapters.items()}
    ref = results["hf"]
    for name, got in results.items():
        assert len(got) == len(prompts)
        for i, (r, g) in enumerate(zip(ref, got)):
            assert abs(r.ll - g.ll) <= 1e-3, f"{name} pair {i}: {g.ll} vs hf {r.ll}"
            assert g.token_logprobs is not None and len(g.token_logprobs) == len(r.token_logprobs or [])
            if g.is_greedy is not None:
                assert g.is_greedy == r.is_greedy, f"{name} pair {i}: is_greedy differs"
    assert any(r.is_greedy for r in ref), "the trained model should greedily produce some references"
    assert all(r.ll < 0 for r in ref)


async def test_greedy_hrm_and_hf_agree_exactly(adapters: dict[str, Backend]) -> None:
    prompts = [e.prompt for e in task_examples(8, seed=2)] + free_text_prompts(4, seed=2)
    params = SamplingParams(max_tokens=12, temperature=0.0)
    hf = await adapters["hf"].generate(prompts, params)
    hrm = await adapters["hrm"].generate(prompts, params)
    for a, b in zip(hf, hrm):
        assert (a.text, a.finish_reason) == (b.text, b.finish_reason)
        assert a.prompt_tokens == b.prompt_tokens


async def test_greedy_remote_doubles_agree_with_hf(adapters: dict[str, Backend]) -> None:
    prompts = [e.prompt for e in task_examples(4, seed=3)]
    params = SamplingParams(max_tokens=10, temperature=0.0)
    hf = [c.text for c in await adapters["hf"].generate(prompts, params)]
    for name in ("vllm", "tgi"):
        assert [c.text for c in await adapters[name].generate(prompts, params)] == hf, name
