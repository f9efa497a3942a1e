"""Output agreement between targets, against a reference, and quality against task references.

Pairs compare the same prompt's repeat-0 output at the first load level. Greedy runs
replay identical requests, so a target's outputs should also match across load levels
(`cross_level`: a batch-invariance check) and across repeats (`noise_floor`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

__all__ = ["EOS_REASONS", "agreement_report", "compare_outputs", "pair_stats", "task_score"]

EOS_REASONS = ("eos", "stop")


def _common_prefix(a: list[Any] | str, b: list[Any] | str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def pair_stats(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per-prompt agreement between two generate records."""
    ta, tb = a.get("text") or "", b.get("text") or ""
    cp = _common_prefix(ta, tb)
    ids_a, ids_b = a.get("token_ids"), b.get("token_ids")
    tok_exact = tok_div = None
    if ids_a is not None and ids_b is not None:
        tok_exact = ids_a == ids_b
        tok_div = None if tok_exact else _common_prefix(ids_a, ids_b)
    la, lb = a.get("completion_tokens"), b.get("completion_tokens")
    return {
        "exact_text": ta == tb,
        "exact_tokens": tok_exact,
        "prefix_frac": 1.0 if ta == tb else cp / max(len(ta), len(tb)),
        "first_divergence_char": None if ta == tb else cp,
        "first_divergence_token": tok_div,
        "length_equal": la is not None and la == lb,
        "eos_agree": (a.get("finish_reason") in EOS_REASONS) == (b.get("finish_reason") in EOS_REASONS),
    }


def _rate(values: list[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def compare_outputs(ref: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Aggregate agreement over prompts present (and successful) in both {request_id: record} maps."""
    common = sorted(set(ref) & set(other))
    per = {rid: pair_stats(ref[rid], other[rid]) for rid in common}
    ps = list(per.values())
    div = [
        p["first_divergence_token"] if p["first_divergence_token"] is not None else p["first_divergence_char"]
        for p in ps
        if not p["exact_text"]
    ]
    return {
        "n_pairs": len(common),
        "exact_match_rate": _rate([p["exact_text"] for p in ps]),
        "token_exact_match_rate": _rate([p["exact_tokens"] for p in ps]),
        "mean_common_prefix_frac": _rate([p["prefix_frac"] for p in ps]),
        "length_agreement_rate": _rate([p["length_equal"] for p in ps]),
        "eos_agreement_rate": _rate([p["eos_agree"] for p in ps]),
        "first_divergence_positions": sorted(int(x) for x in div if x is not None),
        "divergence_unit": "token" if any(p["first_divergence_token"] is not None for p in ps) else "char",
        "per_prompt": per,
    }


def task_score(task: str | None, prompt: str, output: str, reference: str) -> float:
    """`benchmarks.samples.tasks.score` (first line, stripped, exact match against the reference)."""
    from benchmarks.samples.tasks import TaskExample, score

    return float(score(TaskExample(task or "", prompt, reference), output))


def _outputs(records: list[dict[str, Any]], level: str, repeat: int) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        if (
            r.get("type") == "generate"
            and not r.get("warmup")
            and r["level"] == level
            and r["repeat"] == repeat
            and r.get("error_class") is None
        ):
            out[r["target"]][r["request_id"]] = r
    return out


def _ll_agreement(
    records: list[dict[str, Any]], reference: str, answers: dict[str, int | None]
) -> dict[str, Any]:
    from scipy.stats import spearmanr

    by_t: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for r in records:
        if r.get("type") == "loglikelihood" and r.get("error_class") is None and r.get("ll"):
            by_t[r["target"]][r["request_id"]] = r["ll"]
    out: dict[str, Any] = {}
    ref = by_t.get(reference, {})
    for t, lls in by_t.items():
        entry: dict[str, Any] = {"n_items": len(lls)}
        scored = [rid for rid in lls if answers.get(rid) is not None]
        if scored:
            entry["mc_accuracy"] = float(
                np.mean([int(np.argmax(lls[rid])) == answers[rid] for rid in scored])
            )
        common = sorted(set(lls) & set(ref))
        if t != reference and common:
            a = np.concatenate([ref[rid] for rid in common])
            b = np.concatenate([lls[rid] for rid in common])
            entry["ll_mean_abs_delta"] = float(np.mean(np.abs(a - b)))
            rho = spearmanr(a, b).statistic if len(a) > 1 else float("nan")
            entry["ll_spearman"] = None if np.isnan(rho) else float(rho)
            entry["argmax_agreement"] = float(
                np.mean([np.argmax(ref[r]) == np.argmax(lls[r]) for r in common])
            )
        out[t] = entry
    return out


def _cross_scores(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """{scorer: {source: mean ll of source's outputs under scorer}}."""
    acc: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        if r.get("type") == "cross_score" and r.get("error_class") is None and r.get("ll"):
            acc[(r["target"], r["source"])].append(float(r["ll"][0]))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (scorer, source), v in acc.items():
        out[scorer][source] = float(np.mean(v))
    return dict(out)


def agreement_report(
    records: list[dict[str, Any]],
    reference: str,
    level: str,
    items: dict[str, dict[str, Any]],
    answers: dict[str, int | None],
    seed: int = 0,
) -> dict[str, Any]:
    """Everything for agreement.json. `items` maps request id to its RequestItem dict."""
    outs = _outputs(records, level, 0)
    outs1 = _outputs(records, level, 1)
    from benchmarks.stats import rate_ci

    vs_ref: dict[str, Any] = {}
    for t, o in outs.items():
        if t != reference and reference in outs:
            rep = compare_outputs(outs[reference], o)
            per = rep.pop("per_prompt")
            _, lo, hi = rate_ci([p["exact_text"] for p in per.values()], seed=seed)
            rep["exact_match_ci"] = [lo, hi]
            vs_ref[t] = rep
    noise: dict[str, Any] = {}
    for t in outs1:
        rep = compare_outputs(outs.get(t, {}), outs1[t])
        per = rep.pop("per_prompt")
        _, lo, hi = rate_ci([p["exact_text"] for p in per.values()], seed=seed)
        rep["exact_match_ci"] = [lo, hi]
        noise[t] = rep
    accuracy: dict[str, Any] = {}
    for t, o in outs.items():
        per_task: dict[str, list[float]] = defaultdict(list)
        for rid, r in o.items():
            it = items.get(rid)
            if it and it.get("reference") is not None:
                per_task[it.get("task") or "all"].append(
                    task_score(it.get("task"), it["prompt"], r.get("text") or "", it["reference"])
                )
        if per_task:
            flat = [x for v in per_task.values() for x in v]
            accuracy[t] = {
                "overall": float(np.mean(flat)),
                "n": len(flat),
                "by_task": {k: float(np.mean(v)) for k, v in sorted(per_task.items())},
            }
    cross_level: dict[str, dict[str, Any]] = {}
    for lvl in sorted(
        {r["level"] for r in records if r.get("type") == "generate" and not r.get("warmup")} - {level}
    ):
        other = _outputs(records, lvl, 0)
        for t, o in other.items():
            if t in outs:
                rep = compare_outputs(outs[t], o)
                rep.pop("per_prompt")
                cross_level.setdefault(t, {})[lvl] = {
                    k: rep[k] for k in ("n_pairs", "exact_match_rate", "token_exact_match_rate")
                }
    finish = {t: dict(Counter(r.get("finish_reason") or "none" for r in o.values())) for t, o in outs.items()}
    return {
        "reference": reference,
        "level": level,
        "vs_reference": vs_ref,
        "noise_floor": noise,
        "cross_level": cross_level,
        "task_accuracy": accuracy,
        "loglikelihood": _ll_agreement(records, reference, answers),
        "cross_scoring": _cross_scores(records),
        "finish_reasons": finish,
    }
