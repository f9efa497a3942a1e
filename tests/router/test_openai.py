"""The OpenAI Python SDK against /v1/completions (stream and not) and /v1/models."""

from __future__ import annotations

import openai

from tests.router.conftest import LiveRouter


def _client(live: LiveRouter) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.url + "/v1", api_key="unused", max_retries=0, timeout=10)


def test_sdk_completion_goes_through_the_split(live: LiveRouter) -> None:
    client = _client(live)
    raw = client.completions.with_raw_response.create(model="abtest", prompt="hello", max_tokens=5, user="user-7")
    resp = raw.parse()
    backend = raw.headers["x-backend"]
    assert resp.choices[0].text == f"{backend}:hello"
    assert resp.model == backend and resp.choices[0].finish_reason == "length"
    assert resp.usage is not None and resp.usage.total_tokens == resp.usage.prompt_tokens + 3
    for _ in range(3):  # sticky by `user`, same as the v1 API
        again = client.completions.with_raw_response.create(model="abtest", prompt="x", user="user-7")
        assert again.headers["x-backend"] == backend


def test_sdk_model_name_pins_backend_and_batch_prompts(live: LiveRouter) -> None:
    resp = _client(live).completions.create(model="b", prompt=["p1", "p2"], max_tokens=3, temperature=0)
    assert [c.text for c in resp.choices] == ["b:p1", "b:p2"]
    assert [c.index for c in resp.choices] == [0, 1]


def test_sdk_streaming(live: LiveRouter) -> None:
    stream = _client(live).completions.create(model="a", prompt="stream me please", max_tokens=8, stream=True,
                                              stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == "a:stream me please"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 3


def test_sdk_models_and_errors(live: LiveRouter) -> None:
    client = _client(live)
    ids = [m.id for m in client.models.list()]
    assert ids == ["abtest", "a", "b"]
    try:
        client.completions.create(model="abtest", prompt="x", temperature=5)
    except openai.BadRequestError as exc:
        assert "temperature" in str(exc)
    else:
        raise AssertionError("expected a 400")
