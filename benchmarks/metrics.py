"""Every latency/throughput metric, derived in one place from the raw record timestamps.

Definitions follow vLLM's `benchmark_serving` (same key names in summary.json):
- e2el: end-to-end latency, response complete minus request sent.
- ttft: time to first token, first non-empty chunk minus sent (streaming), or the
  backend-reported TTFT for non-streaming calls.
- tpot: time per output token excluding the first, (e2el - ttft) / (output_tokens - 1),
  for requests with more than one output token.
- itl: inter-token latency, gaps between consecutive streamed chunks (streaming only).
- duration: sum over interleaved segments of (last end - first scheduled send).
- request_throughput = completed / duration; output_throughput = output tokens / duration;
  total_token_throughput = (input + output tokens) / duration.
- request_goodput: completed requests meeting every --slo bound, per second.
- schedule lag: actual send minus scheduled send (0 by construction in a closed loop);
  e2el_from_schedule = end minus scheduled send (open-loop latency incl. queueing in the client).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import Any

import numpy as np

__all__ = ["DEFINITIONS", "PERCENTILES", "aggregate", "metrics_by_target", "request_metrics"]

PERCENTILES = (50, 90, 95, 99)

DEFINITIONS = {
    "e2el": "end-to-end latency: response complete minus request sent",
    "ttft": "time to first token: first non-empty streamed chunk minus request sent",
    "tpot": "time per output token excluding the first: (e2el - ttft) / (output_tokens - 1)",
    "itl": "inter-token latency: gap between consecutive streamed chunks",
    "request_throughput": "completed requests / duration",
    "output_throughput": "output tokens / duration",
    "total_token_throughput": "(input + output tokens) / duration",
    "request_goodput": "completed requests meeting every SLO / duration",
    "schedule_lag": "actual send time minus scheduled send time",
    "e2el_from_schedule": "response complete minus scheduled send time",
    "duration": "sum over interleaved segments of last end minus first scheduled send",
}


def request_metrics(r: dict[str, Any]) -> dict[str, Any]:
    """Per-request derived values in seconds (None where undefined)."""
    e2el = r["t_end"] - r["t_sent"]
    ttft = None if r.get("t_first_token") is None else r["t_first_token"] - r["t_sent"]
    n_out = r.get("completion_tokens")
    tpot = None
    if ttft is not None and n_out is not None and n_out > 1:
        tpot = (e2el - ttft) / (n_out - 1)
    ct = r.get("chunk_times") or []
    itl = [b - a for a, b in itertools.pairwise(ct)]
    return {
        "e2el": e2el,
        "ttft": ttft,
        "tpot": tpot,
        "itl": itl,
        "lag": r["t_sent"] - r.get("t_scheduled", r["t_sent"]),
        "e2el_from_schedule": r["t_end"] - r.get("t_scheduled", r["t_sent"]),
        "output_tokens": n_out or 0,
        "input_tokens": r.get("prompt_tokens") or 0,
    }


def _dist(name: str, values_s: list[float], out: dict[str, Any]) -> None:
    arr = np.asarray(values_s, dtype=float) * 1000.0
    if arr.size == 0:
        for k in ("mean", "median", "std"):
            out[f"{k}_{name}_ms"] = None
        for p in PERCENTILES:
            out[f"p{p}_{name}_ms"] = None
        return
    out[f"mean_{name}_ms"] = float(arr.mean())
    out[f"median_{name}_ms"] = float(np.median(arr))
    out[f"std_{name}_ms"] = float(arr.std())
    for p in PERCENTILES:
        out[f"p{p}_{name}_ms"] = float(np.percentile(arr, p))


def _duration(records: list[dict[str, Any]]) -> float:
    segs: dict[tuple[Any, ...], tuple[float, float]] = {}
    for r in records:
        key = (r["repeat"], r["block"])
        lo, hi = segs.get(key, (r["t_scheduled"], r["t_end"]))
        segs[key] = (min(lo, r["t_scheduled"], r["t_sent"]), max(hi, r["t_end"]))
    return float(sum(hi - lo for lo, hi in segs.values()))


def aggregate(
    records: list[dict[str, Any]], slo_ms: dict[str, float] | None = None, max_lag_ms: float = 25.0
) -> dict[str, Any]:
    """Summary metrics of one (target, level) group of measured generate records."""
    ok = [r for r in records if r.get("error_class") is None]
    per = [request_metrics(r) for r in ok]
    lags = [request_metrics(r)["lag"] for r in records]
    duration = _duration(records)
    out: dict[str, Any] = {
        "num_requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "duration": duration,
        "total_input_tokens": int(sum(m["input_tokens"] for m in per)),
        "total_output_tokens": int(sum(m["output_tokens"] for m in per)),
    }
    d = duration if duration > 0 else float("nan")
    out["request_throughput"] = len(ok) / d
    out["output_throughput"] = out["total_output_tokens"] / d
    out["total_token_throughput"] = (out["total_input_tokens"] + out["total_output_tokens"]) / d
    for name in ("ttft", "tpot", "e2el", "e2el_from_schedule"):
        _dist(name, [m[name] for m in per if m[name] is not None], out)
    _dist("itl", [x for m in per for x in m["itl"]], out)
    _dist("schedule_lag", lags, out)
    if slo_ms:
        good = sum(
            1 for m in per if all(m.get(k) is not None and m[k] * 1000.0 <= v for k, v in slo_ms.items())
        )
        out["request_goodput"] = good / d
        out["goodput_fraction"] = good / len(records) if records else 0.0
    out["errors_by_class"] = dict(Counter(r["error_class"] for r in records if r.get("error_class")))
    out["token_count_mismatches"] = sum(1 for r in records if r.get("token_count_mismatch"))
    out["token_count_sources"] = dict(Counter(r.get("token_count_source") or "none" for r in ok))
    p99_lag = out["p99_schedule_lag_ms"]
    out["max_lag_ms"] = max_lag_ms
    out["valid"] = p99_lag is None or p99_lag <= max_lag_ms
    return out


def metrics_by_target(
    records: list[dict[str, Any]], slo_ms: dict[str, float] | None = None, max_lag_ms: float = 25.0
) -> dict[str, dict[str, dict[str, Any]]]:
    """{target: {level: metrics}} over measured (non-warmup) generate records."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("type") == "generate" and not r.get("warmup"):
            groups[(r["target"], r["level"])].append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (t, lvl), recs in groups.items():
        out.setdefault(t, {})[lvl] = aggregate(recs, slo_ms, max_lag_ms)
    return out
