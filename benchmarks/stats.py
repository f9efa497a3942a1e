"""Paired statistics: seeded bootstrap 95% CIs over prompts, and verdicts."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

import numpy as np

from benchmarks.metrics import request_metrics

__all__ = ["bootstrap_ci", "latency_verdicts", "median_ratio", "rate_ci", "verdict_text"]


def bootstrap_ci(
    values: np.ndarray, stat: Any, *, seed: int, n_boot: int = 2000, alpha: float = 0.05
) -> tuple[float, float, float]:
    """(point, lo, hi) of stat over rows of `values` (rows = prompts, resampled jointly for pairing)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    point = float(stat(values))
    if n < 2:
        return point, float("nan"), float("nan")
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.array([stat(values[i]) for i in idx], dtype=float)
    lo, hi = np.nanpercentile(boots, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return point, float(lo), float(hi)


def median_ratio(pairs: np.ndarray) -> float:
    """median(B latency) / median(A latency) on columns (A, B): > 1 means A is faster."""
    return float(np.median(pairs[:, 1]) / np.median(pairs[:, 0]))


def rate_ci(flags: list[bool], *, seed: int) -> tuple[float, float, float]:
    arr = np.asarray(flags, dtype=float).reshape(-1, 1)
    if arr.size == 0:
        return float("nan"), float("nan"), float("nan")
    return bootstrap_ci(arr, lambda v: float(v.mean()), seed=seed)


def verdict_text(a: str, b: str, ratio: float, lo: float, hi: float) -> str:
    if np.isnan(lo) or np.isnan(hi):
        return "not enough data"
    if lo > 1.0:
        return f"{a} {ratio:.2f}x faster than {b} [{lo:.2f}, {hi:.2f}]"
    if hi < 1.0:
        return f"{b} {1 / ratio:.2f}x faster than {a} [{1 / hi:.2f}, {1 / lo:.2f}]"
    return "no significant difference"


def _per_prompt_latency(
    records: list[dict[str, Any]], metric: str
) -> dict[tuple[str, str], dict[str, float]]:
    """{(target, level): {request_id: mean over repeats of the metric (s)}} for successful requests."""
    acc: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get("type") != "generate" or r.get("warmup") or r.get("error_class") is not None:
            continue
        v = request_metrics(r)[metric]
        if v is None:
            continue
        acc[(r["target"], r["level"])][r["request_id"]].append(v)
    return {k: {rid: float(np.mean(v)) for rid, v in d.items()} for k, d in acc.items()}


def latency_verdicts(
    records: list[dict[str, Any]], *, seed: int, metric: str = "e2el"
) -> list[dict[str, Any]]:
    """For each level and each pair of targets: paired median-latency ratio with a bootstrap CI."""
    per = _per_prompt_latency(records, metric)
    levels = sorted({lvl for _, lvl in per})
    targets = sorted({t for t, _ in per})
    out: list[dict[str, Any]] = []
    for lvl in levels:
        for a, b in combinations(targets, 2):
            da, db = per.get((a, lvl), {}), per.get((b, lvl), {})
            common = sorted(set(da) & set(db))
            row: dict[str, Any] = {"level": lvl, "a": a, "b": b, "metric": metric, "n_pairs": len(common)}
            if len(common) >= 2:
                pairs = np.array([[da[r], db[r]] for r in common])
                ratio, lo, hi = bootstrap_ci(pairs, median_ratio, seed=seed)
                row.update(ratio=ratio, ci_lo=lo, ci_hi=hi, verdict=verdict_text(a, b, ratio, lo, hi))
            else:
                row.update(ratio=None, ci_lo=None, ci_hi=None, verdict="not enough data")
            out.append(row)
    return out
