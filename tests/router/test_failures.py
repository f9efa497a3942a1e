"""Fallback (unavailable only, never 4xx), retries, circuit breaker, overload -> 429."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from router.breaker import CircuitBreaker
from tests.router.test_api import assert_routing_headers


def test_fallback_on_unavailable_sets_header(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=0) as lr:
        lr.backend("a").fail = "unavailable"
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code == 200, r.text
        assert r.headers["x-backend"] == "b" and r.headers["x-fallback-from"] == "a"
        assert r.headers["x-arm"] == "a"
        assert r.json()["completions"] == ["b:p"]
        assert_routing_headers(r)
        assert 'abtest_router_fallbacks_total{from_backend="a",to_backend="b"} 1.0' in lr.client.get("/metrics").text


def test_fallback_on_timeout_and_adapter_crash(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=0) as lr:
        for failure in ("timeout", "crash", "overloaded"):
            lr.backend("a").fail = failure
            r = lr.client.post("/loglikelihood", json={"prompts": ["p"], "continuations": ["c"]})
            assert r.status_code == 200 and r.headers["x-backend"] == "b", failure


def test_no_fallback_on_4xx(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"]) as lr:
        lr.backend("a").fail = "reject"
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code == 400
        assert r.json()["error"]["field"] == "prompts[0]"
        assert lr.backend("b").calls == 0
        assert lr.backend("a").calls == 1  # no retry either
        assert r.headers["x-backend"] == "a"


def test_retry_same_backend_before_fallback(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=1) as lr:
        a = lr.backend("a")
        a.fail, a.fail_times = "unavailable", 1  # first call fails, the retry succeeds
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code == 200 and r.headers["x-backend"] == "a"
        assert "x-fallback-from" not in r.headers and a.calls == 2


def test_all_down_gives_502_or_504_with_headers(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=0) as lr:
        lr.backend("a").fail = "unavailable"
        lr.backend("b").fail = "timeout"
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code in (502, 504)
        assert r.json()["error"]["type"].startswith("backend")
        assert_routing_headers(r)


def test_stream_falls_back_before_first_byte(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=0) as lr:
        lr.backend("a").fail = "unavailable"
        with lr.client.stream("POST", "/generate_stream", json={"prompts": ["x y"]}) as r:
            assert r.status_code == 200
            assert r.headers["x-backend"] == "b" and r.headers["x-fallback-from"] == "a"
            assert "b:x y" in "".join(r.iter_text())


def test_circuit_breaker_opens_and_skips_backend(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], retries=0, breaker_failures=3,
                        breaker_cooldown_s=60) as lr:
        a = lr.backend("a")
        a.fail = "unavailable"
        for _ in range(3):
            assert lr.client.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "b"
        assert a.calls == 3
        for _ in range(5):  # open: a is not even tried
            assert lr.client.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "b"
        assert a.calls == 3
        assert 'abtest_router_breaker_open{backend="a"} 1.0' in lr.client.get("/metrics").text


def test_breaker_half_open_after_cooldown() -> None:
    now = [0.0]
    cb = CircuitBreaker(2, 10.0, clock=lambda: now[0])
    cb.record_failure()
    assert cb.allow()
    cb.record_failure()
    assert not cb.allow() and cb.state == "open"
    now[0] = 10.0
    assert cb.allow() and cb.state == "half_open"
    cb.record_failure()  # failed trial: open again for a full cooldown
    assert not cb.allow()
    now[0] = 20.0
    cb.record_success()
    assert cb.state == "closed" and cb.consecutive_failures == 0


def test_unhealthy_backend_is_skipped(router_factory) -> None:
    with router_factory(split={"a": 1}, fallback=["b"], health_interval_s=0.05) as lr:
        lr.backend("a").healthy = False
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            r = lr.client.post("/generate", json={"prompts": ["p"]})
            if r.headers["x-backend"] == "b":
                break
            time.sleep(0.05)
        assert r.headers["x-backend"] == "b" and r.headers["x-fallback-from"] == "a"
        calls = lr.backend("a").calls
        for _ in range(5):
            assert lr.client.post("/generate", json={"prompts": ["p"]}).headers["x-backend"] == "b"
        assert lr.backend("a").calls == calls  # unhealthy: not tried at all


def test_overload_gives_429_with_retry_after(router_factory) -> None:
    with router_factory(split={"a": 1}, max_queue=4, max_inflight_per_backend=2) as lr:
        lr.backend("a").latency_s = 0.5

        def call(_: int) -> httpx.Response:
            with httpx.Client(base_url=lr.url, timeout=10) as c:
                return c.post("/generate", json={"prompts": ["p"]})

        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(call, range(12)))
        codes = sorted(r.status_code for r in results)
        assert codes.count(200) >= 4 and codes.count(429) >= 1, codes
        assert set(codes) <= {200, 429}
        rejected = next(r for r in results if r.status_code == 429)
        assert rejected.headers["retry-after"] == "1"
        assert rejected.json()["error"]["type"] == "overloaded"
        assert_routing_headers(rejected)


def test_per_backend_inflight_limit() -> None:
    """At most max_inflight_per_backend calls run at once; the rest wait their turn."""
    from router.table import build_table
    from tests.router.fakes import FakeFactory, make_config

    async def main() -> int:
        factory = FakeFactory()
        table = await build_table(make_config(split={"a": 1}, max_inflight_per_backend=3), factory)
        h = table.handles["a"]
        peak = 0

        async def one() -> None:
            nonlocal peak
            async with h.lease():
                peak = max(peak, h.inflight)
                await asyncio.sleep(0.02)

        await asyncio.gather(*(one() for _ in range(10)))
        return peak

    assert asyncio.run(main()) == 3
