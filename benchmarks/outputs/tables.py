"""Rows shared by the Markdown and HTML reports (so both state the same numbers)."""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "METRIC_COLUMNS",
    "agreement_rows",
    "cross_scoring_rows",
    "fmt",
    "loglikelihood_rows",
    "metric_rows",
    "task_accuracy_rows",
    "verdict_rows",
]

METRIC_COLUMNS = (
    ("completed", "ok"),
    ("failed", "err"),
    ("median_e2el_ms", "E2E p50 ms"),
    ("p99_e2el_ms", "E2E p99 ms"),
    ("mean_ttft_ms", "TTFT mean ms"),
    ("p99_ttft_ms", "TTFT p99 ms"),
    ("mean_tpot_ms", "TPOT mean ms"),
    ("mean_itl_ms", "ITL mean ms"),
    ("request_throughput", "req/s"),
    ("output_throughput", "out tok/s"),
    ("total_token_throughput", "tot tok/s"),
    ("request_goodput", "goodput req/s"),
    ("p99_schedule_lag_ms", "lag p99 ms"),
    ("valid", "valid"),
)


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={vv}" for k, vv in v.items()) or "-"
    return str(v)


def metric_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["target", "level", *[label for _, label in METRIC_COLUMNS], "errors"]
    rows = []
    for t, levels in summary["metrics"].items():
        for lvl, m in levels.items():
            rows.append([t, lvl, *[fmt(m.get(k)) for k, _ in METRIC_COLUMNS], fmt(m.get("errors_by_class"))])
    return head, rows


def verdict_rows(verdicts: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = ["level", "metric", "A", "B", "pairs", "median(B)/median(A)", "95% CI", "verdict"]
    rows = [
        [
            v["level"],
            v.get("metric", "e2el"),
            v["a"],
            v["b"],
            str(v["n_pairs"]),
            fmt(v["ratio"]),
            f"[{fmt(v['ci_lo'])}, {fmt(v['ci_hi'])}]",
            v["verdict"],
        ]
        for v in verdicts
    ]
    return head, rows


def agreement_rows(agreement: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = [
        "target",
        "vs",
        "pairs",
        "exact text",
        "exact 95% CI",
        "exact tokens",
        "prefix frac",
        "length agree",
        "EOS agree",
    ]
    rows = []
    ref = agreement.get("reference", "")
    for section, vs in (("vs_reference", ref), ("noise_floor", "self r0/r1")):
        for t, a in agreement.get(section, {}).items():
            ci = a.get("exact_match_ci") or [None, None]
            rows.append(
                [
                    t,
                    vs,
                    str(a["n_pairs"]),
                    fmt(a["exact_match_rate"]),
                    f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci[0] is not None else "-",
                    fmt(a["token_exact_match_rate"]),
                    fmt(a["mean_common_prefix_frac"]),
                    fmt(a["length_agreement_rate"]),
                    fmt(a["eos_agreement_rate"]),
                ]
            )
    for t, levels in agreement.get("cross_level", {}).items():
        for lvl, a in levels.items():
            rows.append(
                [
                    t,
                    f"self {agreement.get('level')} vs {lvl}",
                    str(a["n_pairs"]),
                    fmt(a["exact_match_rate"]),
                    "-",
                    fmt(a["token_exact_match_rate"]),
                    "-",
                    "-",
                    "-",
                ]
            )
    return head, rows


def task_accuracy_rows(accuracy: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = [[t, fmt(a["overall"]), str(a["n"]), fmt(a["by_task"])] for t, a in accuracy.items()]
    return ["target", "overall", "n", "by task"], rows


def loglikelihood_rows(ll: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["target", "items", "MC accuracy", "mean |Δll| vs ref", "Spearman", "argmax agree"]
    rows = [
        [
            t,
            str(e["n_items"]),
            fmt(e.get("mc_accuracy")),
            fmt(e.get("ll_mean_abs_delta")),
            fmt(e.get("ll_spearman")),
            fmt(e.get("argmax_agreement")),
        ]
        for t, e in ll.items()
    ]
    return head, rows


def cross_scoring_rows(cross: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """One row per scorer, one column per source whose outputs it scored."""
    sources = sorted({src for v in cross.values() for src in v})
    return ["scorer", *sources], [[t, *[fmt(v.get(src)) for src in sources]] for t, v in cross.items()]
