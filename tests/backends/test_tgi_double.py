"""The strict TGI double (spec-validated, TGI's validation errors) and the tgi adapter on it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from backends.base import create_backend
from backends.errors import BackendRejected
from backends.types import SamplingParams
from tests.doubles.tgi_spec import TgiSpec

GREEDY = SamplingParams(max_tokens=5, temperature=0.0)


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"temperature": 0.0}, "`temperature` must be strictly positive"),
        ({"top_p": 1.0}, "`top_p` must be > 0.0 and < 1.0"),
        ({"max_new_tokens": 0}, "`max_new_tokens` must be strictly positive"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "`stop` supports up to 4 stop sequences. Given: 5"),
        ({"top_p": 1.5}, "`top_p` must be > 0.0 and < 1.0"),
        ({"seed": 0}, "less than or equal to the minimum"),  # only the spec forbids this
        ({"max_new_tokens": "5"}, "is not of type"),
        ({"details": "yes"}, "is not of type"),
        ({"bogus": 1}, "unknown field `bogus`"),
    ],
)
def test_double_rejects_invalid_parameters(tgi_url: str, parameters: dict[str, Any], message: str) -> None:
    r = httpx.post(f"{tgi_url}/generate", json={"inputs": "hello", "parameters": parameters})
    assert r.status_code == 422
    body = r.json()
    assert body["error_type"] == "validation"
    assert any(m in body["error"] for m in message.split("|")), body


def test_double_rejects_empty_inputs_and_missing_inputs(tgi_url: str) -> None:
    r = httpx.post(f"{tgi_url}/generate", json={"inputs": ""})
    assert r.status_code == 422 and r.json()["error"] == "`inputs` cannot be empty"
    r = httpx.post(f"{tgi_url}/generate", json={"parameters": {}})
    assert r.status_code == 422 and "'inputs' is a required property" in r.json()["error"]


def test_double_responses_match_the_spec(tgi_url: str) -> None:
    spec = TgiSpec.load()
    assert spec.errors("Info", httpx.get(f"{tgi_url}/info").json()) == []
    params = {"max_new_tokens": 3, "details": True, "decoder_input_details": True}
    r = httpx.post(f"{tgi_url}/generate", json={"inputs": "The quick", "parameters": params})
    assert r.status_code == 200 and spec.errors("GenerateResponse", r.json()) == []
    assert r.json()["details"]["prefill"][0]["logprob"] is None
    compat = httpx.post(f"{tgi_url}/", json={"inputs": "The quick", "parameters": params})
    assert isinstance(compat.json(), list) and spec.errors("[GenerateResponse]", compat.json()) == []
    tokens = httpx.post(f"{tgi_url}/tokenize", json={"inputs": "The quick"}).json()
    assert spec.errors("[SimpleToken]", tokens) == [] and "".join(t["text"] for t in tokens) == "The quick"
    stream_params = {"max_new_tokens": 3, "details": True}
    with httpx.stream("POST", f"{tgi_url}/generate_stream", json={"inputs": "The", "parameters": stream_params}) as s:
        events = [json.loads(line[5:]) for line in s.iter_lines() if line.startswith("data:")]
    assert len(events) == 3 and all(spec.errors("StreamResponse", e) == [] for e in events)
    assert events[-1]["details"]["generated_tokens"] == 3 and events[0]["details"] is None


def test_spec_validation_can_fail() -> None:
    spec = TgiSpec.load()
    assert spec.errors("GenerateResponse", {"details": None}) != []
    assert spec.errors("StreamResponse", {"index": -1, "token": {"id": 1}}) != []


async def test_adapter_generate_keeps_order_and_reports_usage(tgi_url: str, tgi_app: Any) -> None:
    backend = create_backend({"name": "tgi", "kind": "tgi", "url": tgi_url, "max_concurrency": 2})
    await backend.start()
    prompts = ["The quick brown", "Q: 2+2 =", "Paris is", "copy: hello ->"]
    out = await backend.generate(prompts, GREEDY)
    singles = [(await backend.generate([p], GREEDY))[0] for p in prompts]
    assert [c.text for c in out] == [c.text for c in singles]
    for c in out:
        assert c.prompt_tokens and c.prompt_tokens > 1 and c.completion_tokens == 5
        assert c.finish_reason == "length" and c.latency_s and c.latency_s > 0
        assert c.token_logprobs is not None and len(c.token_logprobs) == 5
    sent = [b for path, b in tgi_app.state.requests if path == "/generate"][-1]["parameters"]
    assert sent["do_sample"] is False and "temperature" not in sent and "top_p" not in sent
    await backend.close()


async def test_adapter_applies_extra_stops_client_side(tgi_url: str) -> None:
    backend = create_backend({"name": "tgi", "kind": "tgi", "url": tgi_url})
    await backend.start()
    base = (await backend.generate(["The quick brown"], SamplingParams(max_tokens=8, temperature=0.0)))[0]
    stop_char = base.text[3]
    stops = ("QQQ1", "QQQ2", "QQQ3", "QQQ4", stop_char)
    out = (await backend.generate(["The quick brown"], SamplingParams(max_tokens=8, temperature=0.0, stop=stops)))[0]
    assert out.text == base.text[: base.text.find(stop_char)]
    assert out.finish_reason == "stop"
    assert any("at most 4 stop sequences" in a for a in out.approximations)
    events = [e async for e in backend.stream("The quick brown", SamplingParams(max_tokens=8, temperature=0.0,
                                                                                 stop=stops))]
    assert "".join(e.text for e in events) == out.text
    assert events[-1].final is not None and events[-1].final.finish_reason == "stop"
    await backend.close()


async def test_adapter_stream_matches_generate(tgi_url: str) -> None:
    backend = create_backend({"name": "tgi", "kind": "tgi", "url": tgi_url})
    await backend.start()
    whole = (await backend.generate(["Paris is"], GREEDY))[0]
    events = [e async for e in backend.stream("Paris is", GREEDY)]
    final = events[-1].final
    assert final is not None and final.text == whole.text == "".join(e.text for e in events)
    assert final.completion_tokens == 5 and final.prompt_tokens == whole.prompt_tokens
    assert final.ttft_s is not None and final.latency_s is not None and final.ttft_s <= final.latency_s
    await backend.close()


async def test_adapter_surfaces_tgi_validation_as_rejected(tgi_url: str) -> None:
    backend = create_backend({"name": "tgi", "kind": "tgi", "url": tgi_url})
    await backend.start()
    with pytest.raises(BackendRejected, match="must be <= ") as info:
        await backend.generate(["hello"], SamplingParams(max_tokens=10_000, temperature=0.0))
    assert info.value.status == 422
    with pytest.raises(BackendRejected, match="must be <= "):
        [e async for e in backend.stream("hello", SamplingParams(max_tokens=10_000, temperature=0.0))]
    await backend.close()


def test_double_refuses_decoder_input_details_when_streaming(tgi_url: str) -> None:
    body = {"inputs": "hello", "parameters": {"decoder_input_details": True}}
    r = httpx.post(f"{tgi_url}/generate_stream", json=body)
    assert r.status_code == 422 and "not supported when streaming" in r.text


async def test_fan_out_is_bounded_and_ordered() -> None:
    import asyncio as aio

    from tests.doubles import serve

    state = {"now": 0, "peak": 0}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = json.loads((await receive())["body"] or b"{}")
        if scope["path"] == "/info":
            doc: Any = {"model_id": "m", "max_input_tokens": 10, "max_stop_sequences": 4}
        else:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            await aio.sleep(0.05)
            state["now"] -= 1
            doc = {"generated_text": body["inputs"].upper(), "details": {
                "finish_reason": "length", "generated_tokens": 1, "prefill": [], "tokens": []}}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(doc).encode()})

    with serve(app) as url:
        backend = create_backend({"name": "t", "kind": "tgi", "url": url, "max_concurrency": 3})
        await backend.start()
        prompts = [f"p{i}" for i in range(10)]
        out = await backend.generate(prompts, GREEDY)
        await backend.close()
    assert [c.text for c in out] == [p.upper() for p in prompts]
    assert state["peak"] == 3
