"""Client mistakes give 4xx naming the field; never a 500."""

from __future__ import annotations

import pytest

from tests.router.conftest import LiveRouter
from tests.router.test_api import assert_routing_headers

CASES = [
    ({"prompts": []}, "prompts"),
    ({"prompts": [""]}, "prompts[0]"),
    ({"prompts": "hello"}, "prompts"),
    ({"prompts": [1, 2]}, "prompts[0]"),
    ({}, "prompts"),
    ({"prompts": ["x"], "temperature": 3}, "temperature"),
    ({"prompts": ["x"], "temperature": "hot"}, "temperature"),
    ({"prompts": ["x"], "top_p": 0}, "top_p"),
    ({"prompts": ["x"], "top_p": 1.5}, "top_p"),
    ({"prompts": ["x"], "max_tokens": 0}, "max_tokens"),
    ({"prompts": ["x"], "max_tokens": "many"}, "max_tokens"),
    ({"prompts": ["x"], "seed": -1}, "seed"),
    ({"prompts": ["x"], "stop": [""]}, "stop"),
    ({"prompts": ["x"], "bogus": 1}, "bogus"),
]


@pytest.mark.parametrize(("body", "field"), CASES)
def test_generate_bad_inputs(live: LiveRouter, body: dict, field: str) -> None:
    r = live.client.post("/generate", json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["field"] == field, err
    assert field.split("[")[0] in err["message"]
    assert_routing_headers(r)


def test_loglikelihood_mismatched_lengths(live: LiveRouter) -> None:
    r = live.client.post("/loglikelihood", json={"prompts": ["a", "b"], "continuations": ["c"]})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["field"] == "continuations" and "prompts has 2" in err["message"]
    r = live.client.post("/loglikelihood", json={"prompts": ["a"], "continuations": [""]})
    assert r.status_code == 400 and r.json()["error"]["field"] == "continuations[0]"


@pytest.mark.parametrize("raw", [b"{not json", b"", b"[1, 2", b"\xff\xfe"])
def test_invalid_json_is_400(live: LiveRouter, raw: bytes) -> None:
    r = live.client.post("/generate", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == "body"


def test_non_object_and_wrong_content_type(live: LiveRouter) -> None:
    r = live.client.post("/generate", json=[1, 2])
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"
    r = live.client.post("/generate", content=b"prompts=x", headers={"content-type": "text/plain"})
    assert r.status_code == 400


def test_unknown_path_and_method(live: LiveRouter) -> None:
    r = live.client.get("/nope")
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"
    assert_routing_headers(r)
    r = live.client.get("/generate")
    assert r.status_code == 405


def test_oversized_body_is_413(router_factory) -> None:
    with router_factory(split={"a": 1}, max_body_bytes=2048) as lr:
        r = lr.client.post("/generate", json={"prompts": ["x" * 5000]})
        assert r.status_code == 413 and r.json()["error"]["type"] == "payload_too_large"
        assert_routing_headers(r)

        def chunks():  # no Content-Length: caught while streaming in
            for _ in range(10):
                yield b"x" * 1024

        r = lr.client.post("/generate", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert lr.client.post("/generate", json={"prompts": ["ok"]}).status_code == 200


def test_openai_bad_inputs(live: LiveRouter) -> None:
    r = live.client.post("/v1/completions", json={"model": "abtest", "prompt": "", "max_tokens": 2})
    assert r.status_code == 400 and r.json()["error"]["field"] == "prompt"
    r = live.client.post("/v1/completions", json={"model": "abtest", "prompt": "x", "n": 3})
    assert r.status_code == 400 and r.json()["error"]["field"] == "n"
    r = live.client.post("/v1/completions", json={"prompt": "x"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "model"
