"""Rich console rendering of a run summary (the CLI prints this after a run)."""

from __future__ import annotations

from typing import Any

from benchmarks.outputs.tables import agreement_rows, fmt, metric_rows

__all__ = ["print_summary"]


def print_summary(console: Any, summary: dict[str, Any], run_dir: str) -> None:
    from rich.table import Table

    head, rows = metric_rows(summary)
    keep = [0, 1, 2, 3, 4, 5, 6, 8, 10, 11, 15]
    t = Table(title=f"abtest {summary['run']['name']}: latency and throughput")
    for i in keep:
        t.add_column(head[i], justify="left" if i < 2 else "right")
    for r in rows:
        t.add_row(*[r[i] for i in keep])
    console.print(t)
    v = Table(title="Verdicts (paired median E2E ratio, 95% bootstrap CI)")
    for c in ("level", "A", "B", "verdict"):
        v.add_column(c)
    for row in summary.get("verdicts", []):
        v.add_row(row["level"], row["a"], row["b"], row["verdict"])
    console.print(v)
    ag = summary.get("agreement") or {}
    if ag:
        head, rows = agreement_rows(ag)
        a = Table(title=f"Agreement vs {ag.get('reference')} (and noise floor)")
        for c in head:
            a.add_column(c)
        for r in rows:
            a.add_row(*r)
        console.print(a)
        acc = ag.get("task_accuracy", {})
        if acc:
            console.print("task accuracy: " + "; ".join(f"{k} {fmt(x['overall'])}" for k, x in acc.items()))
    if not summary["run"]["valid"]:
        console.print("[bold red]run INVALID: schedule lag p99 above the threshold[/]")
    console.print(f"results: {run_dir}")
