"""The in-process kinds (hrm engine, transformers) on the shared sample model: streaming,
stops, errors and info."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.base import Backend, create_backend
from backends.errors import BackendRejected, BackendUnavailable
from backends.types import SamplingParams
from benchmarks.samples.tasks import task_examples


@pytest.fixture(params=["hrm", "hf"])
async def backend(request: pytest.FixtureRequest, hrm_tiny: Path) -> AsyncIterator[Backend]:
    b = create_backend({"name": request.param, "kind": request.param, "model": str(hrm_tiny), "device": "cpu"})
    await b.start()
    yield b
    await b.close()


async def test_info_reports_capabilities(backend: Backend) -> None:
    info = await backend.info()
    caps = info.capabilities
    assert caps.loglikelihood and caps.streaming and caps.batch_prompts and caps.token_logprobs
    assert caps.max_context and caps.max_context >= 256
    assert await backend.health()


async def test_stream_matches_generate(backend: Backend) -> None:
    prompt = task_examples(1, seed=5)[0].prompt
    params = SamplingParams(max_tokens=10, temperature=0.0)
    whole = (await backend.generate([prompt], params))[0]
    events = [e async for e in backend.stream(prompt, params)]
    final = events[-1].final
    assert final is not None and all(e.final is None for e in events[:-1])
    assert "".join(e.text for e in events) == final.text == whole.text
    assert final.completion_tokens == whole.completion_tokens and final.finish_reason == whole.finish_reason
    assert final.ttft_s is not None and final.latency_s is not None and 0 <= final.ttft_s <= final.latency_s


async def test_stop_string_cuts_text(backend: Backend) -> None:
    prompt = "reverse: a b c d e f ="
    base = (await backend.generate([prompt], SamplingParams(max_tokens=12, temperature=0.0)))[0]
    assert len(base.text) > 3
    stop = base.text[2]
    cut = (await backend.generate([prompt], SamplingParams(max_tokens=12, temperature=0.0, stop=(stop,))))[0]
    assert cut.text == base.text[: base.text.find(stop)] and cut.finish_reason == "stop"
    events = [e async for e in backend.stream(prompt, SamplingParams(max_tokens=12, temperature=0.0, stop=(stop,)))]
    assert "".join(e.text for e in events) == cut.text


async def test_seeded_sampling_is_reproducible(backend: Backend) -> None:
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=7)
    a = await backend.generate(["the bird"], params)
    b = await backend.generate(["the bird"], params)
    assert a[0].text == b[0].text


async def test_not_started_and_bad_model(tmp_path: Path) -> None:
    for kind in ("hrm", "hf"):
        b = create_backend({"name": kind, "kind": kind, "model": str(tmp_path / "missing")})
        with pytest.raises(BackendUnavailable, match="not started"):
            await b.generate(["x"], SamplingParams())
        with pytest.raises(BackendUnavailable, match="cannot load"):
            await b.start()


async def test_hrm_invalid_request_is_rejected_and_cap_is_reported(hrm_tiny: Path) -> None:
    b = create_backend({"name": "hrm", "kind": "hrm", "model": str(hrm_tiny), "device": "cpu",
                        "max_tokens_cap": 4})
    await b.start()
    try:
        with pytest.raises(BackendRejected) as info:
            await b.generate(["x"], SamplingParams(temperature=3.0))
        assert info.value.field == "temperature" and "temperature" in info.value.message
        (c,) = await b.generate(["the bird"], SamplingParams(max_tokens=50, temperature=0.0, ignore_eos=True))
        assert c.completion_tokens == 4 and any("max_tokens" in a for a in c.approximations)
    finally:
        await b.close()


async def test_hf_prompt_too_long_names_the_field(hrm_tiny: Path) -> None:
    b = create_backend({"name": "hf", "kind": "hf", "model": str(hrm_tiny), "device": "cpu"})
    await b.start()
    with pytest.raises(BackendRejected, match="context window") as info:
        await b.generate(["ok", "a b c d " * 200], SamplingParams(max_tokens=8))
    assert info.value.field == "prompts[1]"
    await b.close()


async def test_stream_closed_early_leaves_backend_usable(backend: Backend) -> None:
    params = SamplingParams(max_tokens=30, temperature=0.0, ignore_eos=True)
    events = backend.stream("the bird", params)
    async for _ in events:
        break
    await events.aclose()  # type: ignore[attr-defined]
    (after,) = await backend.generate(["the bird"], SamplingParams(max_tokens=3, temperature=0.0, ignore_eos=True))
    assert after.completion_tokens == 3
