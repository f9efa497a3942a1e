"""`abtest compare RUN_A RUN_B`: per target and level, deltas of summary metrics and a
bootstrap CI of the median E2E latency ratio (paired by request id when both runs
replayed the same request list, else resampled independently)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.analysis import load_run
from benchmarks.metrics import metrics_by_target, request_metrics
from benchmarks.stats import bootstrap_ci, verdict_text

__all__ = ["COMPARED_METRICS", "compare_runs"]

COMPARED_METRICS = (
    "median_e2el_ms",
    "p99_e2el_ms",
    "mean_ttft_ms",
    "mean_tpot_ms",
    "request_throughput",
    "output_throughput",
    "failed",
)


def _latencies(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in records:
        if r.get("type") == "generate" and not r.get("warmup") and r.get("error_class") is None:
            out.setdefault((r["target"], r["level"]), {}).setdefault(r["request_id"], []).append(
                request_metrics(r)["e2el"]
            )
    return {k: {rid: float(np.mean(v)) for rid, v in d.items()} for k, d in out.items()}


def _unpaired_ratio(
    a: np.ndarray, b: np.ndarray, seed: int, n_boot: int = 2000
) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    point = float(np.median(b) / np.median(a))
    ra = np.median(rng.choice(a, size=(n_boot, a.size)), axis=1)
    rb = np.median(rng.choice(b, size=(n_boot, b.size)), axis=1)
    lo, hi = np.percentile(rb / ra, [2.5, 97.5])
    return point, float(lo), float(hi)


def compare_runs(run_a: Path, run_b: Path, seed: int = 0) -> dict[str, Any]:
    man_a, _, rec_a = load_run(run_a)
    man_b, _, rec_b = load_run(run_b)
    paired = man_a.get("request_list_sha256") == man_b.get("request_list_sha256")
    ma, mb = metrics_by_target(rec_a), metrics_by_target(rec_b)
    la, lb = _latencies(rec_a), _latencies(rec_b)
    rows: list[dict[str, Any]] = []
    for t in sorted(set(ma) & set(mb)):
        for lvl in sorted(set(ma[t]) & set(mb[t])):
            row: dict[str, Any] = {"target": t, "level": lvl}
            for k in COMPARED_METRICS:
                va, vb = ma[t][lvl].get(k), mb[t][lvl].get(k)
                row[k] = {"a": va, "b": vb, "delta": None if va is None or vb is None else vb - va}
            da, db = la.get((t, lvl), {}), lb.get((t, lvl), {})
            common = sorted(set(da) & set(db))
            if paired and len(common) >= 2:
                pairs = np.array([[db[r], da[r]] for r in common])  # ratio = A/B latency: > 1 means B faster
                ratio, lo, hi = bootstrap_ci(
                    pairs, lambda v: float(np.median(v[:, 1]) / np.median(v[:, 0])), seed=seed
                )
            elif len(da) >= 2 and len(db) >= 2:
                ratio, lo, hi = _unpaired_ratio(
                    np.array(list(db.values())), np.array(list(da.values())), seed
                )
            else:
                ratio = lo = hi = float("nan")
            row.update(
                latency_ratio_a_over_b=ratio,
                ci=[lo, hi],
                verdict=verdict_text("run B", "run A", ratio, lo, hi),
            )
            rows.append(row)
    return {"run_a": str(run_a), "run_b": str(run_b), "paired": paired, "rows": rows}
