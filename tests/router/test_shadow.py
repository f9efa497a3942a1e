"""Shadow traffic: paired JSONL log with agreement; never delays, alters or fails the primary."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.router.conftest import live_router

SPECS = [{"name": "a", "kind": "router_fake"}, {"name": "b", "kind": "router_fake", "reply": "{prompt}"},
         {"name": "s", "kind": "router_fake", "reply": "{prompt}"}]


def _wait_lines(path: Path, n: int, timeout: float = 5.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = [json.loads(x) for x in path.read_text().splitlines()]
            if len(lines) >= n:
                return lines
        time.sleep(0.02)
    raise AssertionError(f"expected {n} shadow records in {path}")


def test_shadow_pairs_outputs_with_agreement(tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    with live_router(SPECS, split={"a": 1, "b": 1}, shadow={"backend": "s", "log_path": str(log)}) as lr:
        r1 = lr.client.post("/generate", json={"prompts": ["hello"], "temperature": 0}, headers={"X-Backend": "a"})
        r2 = lr.client.post("/generate", json={"prompts": ["hello"]}, headers={"X-Backend": "b"})
        r3 = lr.client.post("/loglikelihood", json={"prompts": ["x"], "continuations": ["yz"]},
                            headers={"X-Backend": "a"})
        recs = {rec["request_id"]: rec for rec in _wait_lines(log, 3)}
        a_rec, b_rec = recs[r1.headers["x-request-id"]], recs[r2.headers["x-request-id"]]
        assert a_rec["primary"] == "a" and a_rec["shadow"] == "s"
        assert a_rec["primary_output"] == ["a:hello"] and a_rec["shadow_output"] == ["hello"]
        assert a_rec["agreement"] is False and b_rec["agreement"] is True
        assert a_rec["params"]["temperature"] == 0.0
        assert "prompts" not in a_rec  # prompts only when log_prompts is on
        ll = recs[r3.headers["x-request-id"]]
        assert ll["endpoint"] == "loglikelihood" and ll["agreement"] is True
        assert lr.backend("s").prompts == ["hello", "hello", "x"]  # same prompts
        m = lr.client.get("/metrics").text
        assert 'abtest_router_shadow_total{backend="s",outcome="agree"} 2.0' in m
        assert 'abtest_router_shadow_total{backend="s",outcome="disagree"} 1.0' in m


def test_slow_or_failing_shadow_leaves_primary_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    with live_router(SPECS, split={"a": 1}, shadow={"backend": "s", "log_path": str(log),
                                                      "max_concurrency": 2}) as lr:
        def timed() -> tuple[float, list[str]]:
            t0 = time.perf_counter()
            r = lr.client.post("/generate", json={"prompts": ["p"]})
            assert r.status_code == 200 and r.headers["x-backend"] == "a"
            return time.perf_counter() - t0, r.json()["completions"]

        base = sorted(timed()[0] for _ in range(10))[5]
        s = lr.backend("s")
        s.latency_s = 1.0  # slow shadow
        slow = [timed() for _ in range(10)]
        assert all(out == ["a:p"] for _, out in slow)
        assert sorted(t for t, _ in slow)[5] < base + 0.05  # median: not delayed by the 1 s shadow
        assert max(t for t, _ in slow) < 0.5
        m = lr.client.get("/metrics").text
        assert 'outcome="dropped"' in m  # over the concurrency cap while slow
        runner = lr.app.state.router.shadow
        deadline = time.monotonic() + 10
        while runner.running and time.monotonic() < deadline:  # let the slow shadows finish
            time.sleep(0.05)
        s.latency_s, s.fail = 0.0, "crash"  # failing shadow
        for _ in range(5):
            assert timed()[1] == ["a:p"]
            deadline = time.monotonic() + 5
            while runner.running and time.monotonic() < deadline:  # one at a time: none dropped
                time.sleep(0.01)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            recs = [json.loads(x) for x in log.read_text().splitlines()]
            if sum(1 for r in recs if r["error"] and "adapter bug" in r["error"]) >= 5:
                break
            time.sleep(0.05)
        assert sum(1 for r in recs if r["error"] and "adapter bug" in r["error"]) >= 5


def test_sample_rate_zero_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    with live_router(SPECS, split={"a": 1}, shadow={"backend": "s", "log_path": str(log),
                                                      "sample_rate": 0.0}) as lr:
        for _ in range(5):
            lr.client.post("/generate", json={"prompts": ["p"]})
        time.sleep(0.1)
        assert lr.backend("s").calls == 0 and not log.exists()


def test_streamed_requests_are_shadowed_with_the_streamed_text(tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    with live_router(SPECS, split={"a": 1}, shadow={"backend": "s", "log_path": str(log)}) as lr:
        r1 = lr.client.post("/generate_stream", json={"prompts": ["hi"], "temperature": 0})
        r2 = lr.client.post("/v1/completions", json={"model": "a", "prompt": "yo", "stream": True})
        assert r1.status_code == 200 and "event: done" in r1.text
        assert r2.status_code == 200 and "[DONE]" in r2.text
        recs = {rec["request_id"]: rec for rec in _wait_lines(log, 2)}
        v1, oai = recs[r1.headers["x-request-id"]], recs[r2.headers["x-request-id"]]
        assert v1["primary"] == "a" and v1["primary_output"] == ["a:hi"] and v1["shadow_output"] == ["hi"]
        assert oai["primary_output"] == ["a:yo"] and oai["agreement"] is False
        assert sorted(lr.backend("s").prompts) == ["hi", "yo"]
