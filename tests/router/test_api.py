"""The v1 contract through a live router: shapes, routing headers, pinning, streams."""

from __future__ import annotations

import json

import httpx

from tests.router.conftest import LiveRouter

ROUTING_HEADERS = ("x-request-id", "x-backend", "x-arm", "x-router-overhead-ms", "server-timing")


def assert_routing_headers(r: httpx.Response) -> None:
    for h in ROUTING_HEADERS:
        assert h in r.headers, f"{h} missing on {r.status_code} {r.request.url.path}"
    assert float(r.headers["x-router-overhead-ms"]) >= 0
    assert "router;dur=" in r.headers["server-timing"]


def test_generate_shape_and_headers(live: LiveRouter) -> None:
    r = live.client.post("/generate", json={"prompts": ["hi there", "yo"], "max_tokens": 4},
                         headers={"X-Request-ID": "req-123"})
    assert r.status_code == 200, r.text
    body = r.json()
    backend = r.headers["x-backend"]
    assert backend in ("a", "b")
    assert body["completions"] == [f"{backend}:hi there", f"{backend}:yo"]
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}
    assert body["backend"] == backend and body["request_id"] == "req-123"
    assert r.headers["x-request-id"] == "req-123"
    assert r.headers["x-arm"] == backend
    assert "x-fallback-from" not in r.headers
    assert_routing_headers(r)


def test_params_reach_backend_and_max_tokens_is_capped(router_factory) -> None:
    with router_factory(split={"a": 1}, max_tokens_cap=50) as lr:
        r = lr.client.post("/generate", json={"prompts": ["x"], "max_tokens": 500, "temperature": 0.0,
                                              "top_p": 0.5, "seed": 3, "stop": ["\n"]})
        assert r.status_code == 200, r.text
        p = lr.backend("a").params[-1]
        assert (p.max_tokens, p.temperature, p.top_p, p.seed, p.stop) == (50, 0.0, 0.5, 3, ("\n",))
        assert any("max_tokens capped at 50" in a for a in r.json()["approximations"])


def test_loglikelihood(live: LiveRouter) -> None:
    r = live.client.post("/loglikelihood", json={"prompts": ["a", "b"], "continuations": [" xy", " z"]})
    assert r.status_code == 200, r.text
    assert r.json()["ll"] == [-3.0, -2.0]
    assert_routing_headers(r)


def test_pinning_by_header_and_body(live: LiveRouter) -> None:
    for _ in range(5):
        r = live.client.post("/generate", json={"prompts": ["p"]}, headers={"X-Backend": "b"})
        assert r.headers["x-backend"] == "b" and r.headers["x-arm"] == "pinned"
        r = live.client.post("/generate", json={"prompts": ["p"], "backend": "a"})
        assert r.headers["x-backend"] == "a"


def test_pinning_unknown_backend_is_400_naming_the_field(live: LiveRouter) -> None:
    r = live.client.post("/generate", json={"prompts": ["p"], "backend": "nope"})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["field"] == "backend" and "nope" in err["message"]
    r = live.client.post("/generate", json={"prompts": ["p"]}, headers={"X-Backend": "nope"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "X-Backend"
    assert_routing_headers(r)


def parse_sse(text: str) -> list[tuple[str | None, str]]:
    events = []
    for block in text.strip().split("\n\n"):
        event, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        events.append((event, "\n".join(data)))
    return events


def test_generate_stream(live: LiveRouter) -> None:
    with live.client.stream("POST", "/generate_stream", json={"prompts": ["hello world"]},
                            headers={"X-User-Id": "u1"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert_routing_headers(r)
        text = "".join(r.iter_text())
    events = parse_sse(text)
    assert all(e == "token" for e, _ in events[:-1]) and events[-1][0] == "done"
    done = json.loads(events[-1][1])
    backend = r.headers["x-backend"]
    joined = "".join(json.loads(d)["text"] for e, d in events[:-1])
    assert joined == done["text"] == f"{backend}:hello world"
    assert done["backend"] == backend and done["usage"]["total_tokens"] > 0
    assert done["request_id"] == r.headers["x-request-id"]


def test_stream_rejects_many_prompts(live: LiveRouter) -> None:
    r = live.client.post("/generate_stream", json={"prompts": ["a", "b"]})
    assert r.status_code == 400 and r.json()["error"]["field"] == "prompts"


def test_stream_failure_after_first_byte_is_an_error_event(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"]) as lr:
        lr.backend("a").fail_mid_stream = True
        with lr.client.stream("POST", "/generate_stream", json={"prompts": ["one two three four"]}) as r:
            assert r.status_code == 200 and r.headers["x-backend"] == "a"
            events = parse_sse("".join(r.iter_text()))
        assert events[0][0] == "token" and events[-1][0] == "error"
        assert "mid-stream" in json.loads(events[-1][1])["error"]["message"]
        assert lr.backend("b").calls == 0  # no retry once bytes went out


def test_health_ready_metrics(live: LiveRouter) -> None:
    assert live.client.get("/healthz").json() == {"status": "ok"}
    r = live.client.get("/readyz")
    assert r.status_code == 200 and r.json()["status"] == "ready"
    live.client.post("/generate", json={"prompts": ["p"]})
    m = live.client.get("/metrics").text
    assert "abtest_router_requests_total{" in m and 'endpoint="/generate"' in m
    assert "abtest_router_overhead_seconds_bucket" in m
    assert "abtest_router_tokens_total" in m and "abtest_router_backend_healthy" in m


def test_readyz_503_when_no_healthy_backend(router_factory) -> None:
    with router_factory(split={"a": 1}, health_interval_s=0.05) as lr:
        lr.backend("a").healthy = False
        import time

        deadline = time.monotonic() + 3
        while lr.client.get("/readyz").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        r = lr.client.get("/readyz")
        assert r.status_code == 503 and r.json()["error"]["type"] == "not_ready"
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code == 503
        assert_routing_headers(r)


def test_our_own_bug_is_a_500_with_headers(router_factory) -> None:
    with router_factory(split={"a": 1}) as lr:
        lr.backend("a").junk = True
        r = lr.client.post("/generate", json={"prompts": ["p"]}, headers={"X-Request-ID": "bug-1"})
        assert r.status_code == 500 and r.json()["error"]["type"] == "internal_error"
        assert r.headers["x-request-id"] == "bug-1" and r.headers["x-backend"] == "a"
        assert_routing_headers(r)


def test_access_log_is_json_and_prompts_only_when_enabled(router_factory, caplog) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="abtest.router.access")
    for log_prompts in (False, True):
        caplog.clear()
        with router_factory(split={"a": 1}, log_prompts=log_prompts) as lr:
            lr.client.post("/generate", json={"prompts": ["secret prompt"]}, headers={"X-Request-ID": "log-1"})
        lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "abtest.router.access"]
        line = next(x for x in lines if x["request_id"] == "log-1")
        assert line["status"] == 200 and line["backend"] == "a" and line["path"] == "/generate"
        assert line["total_ms"] >= line["overhead_ms"] >= 0
        assert ("prompts" in line) is log_prompts
        if log_prompts:
            assert line["prompts"] == ["secret prompt"]
