"""report.md: the summary tables, verdicts, agreement and every metric definition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.outputs.tables import (
    agreement_rows,
    cross_scoring_rows,
    fmt,
    loglikelihood_rows,
    metric_rows,
    task_accuracy_rows,
    verdict_rows,
)

__all__ = ["render_markdown", "write_markdown"]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def render_markdown(summary: dict[str, Any]) -> str:
    run = summary["run"]
    lines = [
        f"# abtest run `{run['name']}`",
        "",
        f"- status: {run['status']}; valid: {fmt(run['valid'])} (schedule lag p99 <= {run['max_lag_ms']} ms)",
        f"- request list sha256: `{run['request_list_sha256']}`; seed {run['seed']}; git `{run['git_sha']}`",
        (
            f"- targets: {', '.join(run['targets'])}; reference: {run['reference']}; "
            f"levels: {', '.join(run['levels'])}"
        ),
        "",
    ]
    lines += ["## Latency and throughput", ""]
    lines += _table(*metric_rows(summary))
    lines += ["", "## Verdicts (paired per-prompt median latency ratio, seeded bootstrap 95% CI)", ""]
    lines += _table(*verdict_rows(summary.get("verdicts", []) + summary.get("ttft_verdicts", [])))
    ag = summary.get("agreement") or {}
    if ag:
        lines += ["", f"## Agreement (level {ag.get('level')}, repeat 0)", ""]
        lines += _table(*agreement_rows(ag))
        acc = ag.get("task_accuracy", {})
        if acc:
            lines += ["", "## Task accuracy against references", ""]
            lines += _table(*task_accuracy_rows(acc))
        ll = ag.get("loglikelihood", {})
        if ll:
            lines += ["", "## Log-likelihood (multiple choice)", ""]
            lines += _table(*loglikelihood_rows(ll))
        cs = ag.get("cross_scoring", {})
        if cs:
            lines += ["", "## Cross-scoring (mean log-likelihood of source's outputs under scorer)", ""]
            lines += _table(*cross_scoring_rows(cs))
    if summary.get("served_by"):
        lines += ["", "## Served by (router X-Backend)", ""]
        lines += _table(["target", "served by"], [[t, fmt(c)] for t, c in summary["served_by"].items()])
    lines += ["", "## Definitions", ""]
    lines += [f"- **{k}**: {v}" for k, v in summary["definitions"].items()]
    return "\n".join(lines) + "\n"


def write_markdown(run_dir: Path, summary: dict[str, Any]) -> None:
    (run_dir / "report.md").write_text(render_markdown(summary), encoding="utf-8")
