"""Agreement metrics, bootstrap statistics and verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.agreement import agreement_report, compare_outputs, pair_stats
from benchmarks.stats import bootstrap_ci, latency_verdicts, median_ratio, verdict_text


def g(text: str, ids: list[int] | None = None, fr: str = "eos", n: int | None = None, **kw: object) -> dict:
    return {
        "type": "generate",
        "text": text,
        "token_ids": ids,
        "finish_reason": fr,
        "completion_tokens": n if n is not None else (len(ids) if ids else None),
        "warmup": False,
        "error_class": None,
        **kw,
    }


def test_pair_stats_prefix_divergence_length_eos() -> None:
    s = pair_stats(g("abcdef", [1, 2, 3]), g("abcxyz", [1, 2, 9, 9], fr="length"))
    assert s["exact_text"] is False and s["exact_tokens"] is False
    assert s["prefix_frac"] == pytest.approx(3 / 6)
    assert s["first_divergence_char"] == 3 and s["first_divergence_token"] == 2
    assert s["length_equal"] is False and s["eos_agree"] is False
    same = pair_stats(g("ab", [1]), g("ab", [1]))
    assert same["exact_text"] and same["prefix_frac"] == 1.0 and same["first_divergence_char"] is None


def test_compare_outputs_rates_and_positions() -> None:
    ref = {"a": g("x y", [1, 2]), "b": g("p q", [3, 4]), "c": g("z", [5])}
    oth = {"a": g("x y", [1, 2]), "b": g("p r", [3, 7]), "d": g("w", [8])}
    rep = compare_outputs(ref, oth)
    assert rep["n_pairs"] == 2 and rep["exact_match_rate"] == 0.5
    assert rep["first_divergence_positions"] == [1] and rep["divergence_unit"] == "token"


def test_agreement_report_noise_floor_accuracy_ll_and_cross_scoring() -> None:
    def rec(t: str, rid: str, text: str, rep: int = 0) -> dict:
        return g(text, None, target=t, request_id=rid, level="c=1", repeat=rep)

    items = {
        "p1": {"id": "p1", "prompt": "add: 1 + 2 =", "task": "add", "reference": "3"},
        "p2": {"id": "p2", "prompt": "copy: a =", "task": "copy", "reference": "a"},
    }
    records = [
        rec("R", "p1", " 3"),
        rec("R", "p2", " a"),
        rec("X", "p1", " 3"),
        rec("X", "p2", " b"),
        rec("R", "p1", " 3", 1),
        rec("R", "p2", " a", 1),
        {"type": "loglikelihood", "target": "R", "request_id": "m1", "ll": [-1.0, -3.0, -2.0]},
        {"type": "loglikelihood", "target": "X", "request_id": "m1", "ll": [-1.5, -2.5, -2.0]},
        {"type": "loglikelihood", "target": "R", "request_id": "m2", "ll": [-4.0, -1.0]},
        {"type": "loglikelihood", "target": "X", "request_id": "m2", "ll": [-1.0, -4.0]},
        {"type": "cross_score", "target": "R", "source": "X", "request_id": "p1", "ll": [-2.0]},
        {"type": "cross_score", "target": "R", "source": "X", "request_id": "p2", "ll": [-4.0]},
    ]
    rep = agreement_report(records, "R", "c=1", items, {"m1": 0, "m2": 1}, seed=0)
    assert rep["vs_reference"]["X"]["exact_match_rate"] == 0.5
    assert rep["noise_floor"]["R"]["exact_match_rate"] == 1.0
    assert rep["task_accuracy"]["R"]["overall"] == 1.0 and rep["task_accuracy"]["X"]["by_task"]["copy"] == 0.0
    ll = rep["loglikelihood"]
    assert ll["R"]["mc_accuracy"] == 1.0 and ll["X"]["mc_accuracy"] == 0.5
    assert ll["X"]["argmax_agreement"] == 0.5
    assert ll["X"]["ll_mean_abs_delta"] == pytest.approx((0.5 + 0.5 + 0 + 3 + 3) / 5)
    assert rep["cross_scoring"]["R"]["X"] == pytest.approx(-3.0)


def test_bootstrap_is_seeded_and_covers_the_truth() -> None:
    rng = np.random.default_rng(0)
    a = rng.lognormal(0, 0.2, 200)
    pairs = np.column_stack([a, 2 * a])
    r1, r2 = bootstrap_ci(pairs, median_ratio, seed=1), bootstrap_ci(pairs, median_ratio, seed=1)
    assert r1 == r2
    point, lo, hi = r1
    assert point == pytest.approx(2.0) and lo <= 2.0 <= hi


def test_verdict_text() -> None:
    assert verdict_text("hrm", "hf", 2.3, 2.1, 2.5) == "hrm 2.30x faster than hf [2.10, 2.50]"
    assert verdict_text("hrm", "hf", 0.5, 0.4, 0.6).startswith("hf 2.00x faster than hrm")
    assert verdict_text("hrm", "hf", 1.0, 0.9, 1.1) == "no significant difference"


def test_latency_verdicts_pairs_prompts() -> None:
    recs = []
    for i in range(30):
        for t, scale in (("fast", 1.0), ("slow", 3.0)):
            recs.append(
                {
                    "type": "generate",
                    "warmup": False,
                    "error_class": None,
                    "target": t,
                    "level": "c=1",
                    "request_id": f"p{i}",
                    "t_sent": 0.0,
                    "t_end": scale * (1 + i % 5) / 10,
                }
            )
    (v,) = latency_verdicts(recs, seed=0)
    assert v["a"] == "fast" and v["ratio"] == pytest.approx(3.0)
    assert v["verdict"].startswith("fast 3.00x faster than slow")
