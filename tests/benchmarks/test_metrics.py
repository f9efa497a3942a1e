"""One test per metric definition, on synthetic timestamps."""

from __future__ import annotations

import math

import pytest

from benchmarks.metrics import aggregate, metrics_by_target, request_metrics


def rec(
    t_sched: float,
    t_sent: float,
    t_first: float | None,
    t_end: float,
    n_out: int,
    *,
    n_in: int = 4,
    chunks: list[float] | None = None,
    err: str | None = None,
    block: int = 0,
    repeat: int = 0,
    target: str = "a",
    level: str = "c=1",
) -> dict:
    return {
        "type": "generate",
        "target": target,
        "level": level,
        "repeat": repeat,
        "request_id": f"{t_sent}",
        "block": block,
        "warmup": False,
        "t_scheduled": t_sched,
        "t_sent": t_sent,
        "t_first_token": t_first,
        "t_end": t_end,
        "chunk_times": chunks or [],
        "completion_tokens": n_out,
        "prompt_tokens": n_in,
        "error_class": err,
        "token_count_source": "server",
    }


def test_e2el_is_end_minus_send() -> None:
    m = aggregate([rec(0.0, 0.5, 0.6, 1.5, 5), rec(1.0, 1.0, 1.1, 3.0, 5)])
    assert m["mean_e2el_ms"] == pytest.approx(1500.0)
    assert m["median_e2el_ms"] == pytest.approx(1500.0)
    assert m["p99_e2el_ms"] == pytest.approx(1000 + 1000 * 0.99)


def test_e2el_from_schedule_and_schedule_lag() -> None:
    m = aggregate([rec(0.0, 0.010, 0.02, 0.1, 2), rec(1.0, 1.0, 1.02, 1.1, 2)], max_lag_ms=5.0)
    assert m["mean_e2el_from_schedule_ms"] == pytest.approx(100.0)
    assert m["p50_schedule_lag_ms"] == pytest.approx(5.0)
    assert m["valid"] is False  # lag p99 ~9.9 ms > 5 ms
    assert aggregate([rec(0.0, 0.001, 0.02, 0.1, 2)], max_lag_ms=5.0)["valid"] is True


def test_ttft_is_first_token_minus_send() -> None:
    m = aggregate([rec(0, 0.0, 0.25, 1.0, 4), rec(0, 0.0, 0.75, 1.0, 4)])
    assert m["mean_ttft_ms"] == pytest.approx(500.0)
    assert m["std_ttft_ms"] == pytest.approx(250.0)


def test_tpot_excludes_first_token_and_single_token_requests() -> None:
    # (1.0 - 0.2) / (5 - 1) = 0.2 s; a 1-token request has no TPOT.
    m = aggregate([rec(0, 0.0, 0.2, 1.0, 5), rec(0, 0.0, 0.3, 0.3, 1)])
    assert m["mean_tpot_ms"] == pytest.approx(200.0)
    assert request_metrics(rec(0, 0.0, 0.3, 0.3, 1))["tpot"] is None


def test_itl_is_gap_between_chunks() -> None:
    m = aggregate([rec(0, 0.0, 0.1, 0.6, 3, chunks=[0.1, 0.2, 0.5])])
    assert m["mean_itl_ms"] == pytest.approx(200.0)
    assert m["median_itl_ms"] == pytest.approx(200.0)
    assert m["p99_itl_ms"] == pytest.approx(100 + 200 * 0.99)


def test_throughputs_over_duration_of_interleaved_segments() -> None:
    # two segments (blocks) of 1 s each: duration 2 s, not the 10 s wall span.
    rs = [rec(0.0, 0.0, 0.1, 1.0, 10, n_in=5, block=0), rec(9.0, 9.0, 9.1, 10.0, 30, n_in=5, block=1)]
    m = aggregate(rs)
    assert m["duration"] == pytest.approx(2.0)
    assert m["request_throughput"] == pytest.approx(1.0)
    assert m["output_throughput"] == pytest.approx(20.0)
    assert m["total_token_throughput"] == pytest.approx(25.0)


def test_goodput_counts_requests_meeting_every_slo() -> None:
    rs = [rec(0, 0.0, 0.1, 0.5, 4), rec(0, 0.0, 0.4, 0.5, 4), rec(0, 0.0, 0.1, 2.0, 4)]
    m = aggregate(rs, slo_ms={"ttft": 200.0, "e2el": 1000.0})
    assert m["goodput_fraction"] == pytest.approx(1 / 3)
    assert m["request_goodput"] == pytest.approx(1 / m["duration"])


def test_errors_excluded_from_latency_and_counted_by_class() -> None:
    rs = [
        rec(0, 0.0, 0.1, 0.5, 4),
        rec(0, 0.0, None, 9.0, 0, err="timeout"),
        rec(0, 0.0, None, 0.01, 0, err="http_503"),
        rec(0, 0.0, None, 0.01, 0, err="http_503"),
    ]
    m = aggregate(rs)
    assert m["completed"] == 1 and m["failed"] == 3
    assert m["errors_by_class"] == {"timeout": 1, "http_503": 2}
    assert m["mean_e2el_ms"] == pytest.approx(500.0)


def test_empty_groups_give_none_not_crash() -> None:
    m = aggregate([rec(0, 0.0, None, 1.0, 0, err="connect_error")])
    assert m["mean_ttft_ms"] is None and m["completed"] == 0
    assert m["request_throughput"] == 0.0


def test_metrics_by_target_skips_warmup_and_groups_by_level() -> None:
    rs = [
        rec(0, 0.0, 0.1, 1.0, 2, level="c=1"),
        rec(0, 0.0, 0.1, 2.0, 2, level="c=4"),
        {**rec(0, 0.0, 0.1, 50.0, 2), "warmup": True},
    ]
    out = metrics_by_target(rs)
    assert set(out["a"]) == {"c=1", "c=4"}
    assert out["a"]["c=1"]["mean_e2el_ms"] == pytest.approx(1000.0)
    assert not math.isnan(out["a"]["c=4"]["request_throughput"])
