"""report.html: self-contained (inline CSS and SVG, no scripts, no network)."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.metrics import request_metrics
from benchmarks.outputs.svg import bar_chart, color_map, line_chart
from benchmarks.outputs.tables import (
    agreement_rows,
    cross_scoring_rows,
    loglikelihood_rows,
    metric_rows,
    task_accuracy_rows,
    verdict_rows,
)

__all__ = ["render_html", "write_html"]

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;
margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,td:nth-child(2){text-align:left}.bad{color:#b00;font-weight:bold}
.plots{display:flex;flex-wrap:wrap;gap:1em}code{background:#f6f6f6}"""


def _table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _cdf_plot(records: list[dict[str, Any]], level: str, colors: dict[str, str]) -> str:
    series: dict[str, tuple[list[float], list[float]]] = {}
    by_t: dict[str, list[float]] = {}
    for r in records:
        if (
            r.get("type") == "generate"
            and not r.get("warmup")
            and r["level"] == level
            and r.get("error_class") is None
        ):
            by_t.setdefault(r["target"], []).append(request_metrics(r)["e2el"] * 1000.0)
    for t, vals in sorted(by_t.items()):
        xs = sorted(vals)
        series[t] = (xs, [(i + 1) / len(xs) for i in range(len(xs))])
    return line_chart(
        series,
        title=f"E2E latency CDF ({level})",
        xlabel="latency ms",
        ylabel="fraction",
        step=True,
        colors=colors,
    )


def _level_x(label: str) -> float | None:
    m = re.match(r"[cr]=([0-9.]+)", label)
    return float(m.group(1)) if m else None


def _throughput_plot(summary: dict[str, Any], colors: dict[str, str]) -> str:
    series: dict[str, tuple[list[float], list[float]]] = {}
    for t, levels in summary["metrics"].items():
        pts = sorted(
            (x, m["output_throughput"])
            for lvl, m in levels.items()
            if (x := _level_x(lvl)) is not None and m.get("output_throughput") == m.get("output_throughput")
        )
        if pts:
            series[t] = ([p[0] for p in pts], [p[1] for p in pts])
    levels = summary["run"]["levels"]
    xlabel = "request rate (req/s)" if levels and levels[0].startswith("r=") else "concurrency"
    return line_chart(
        series,
        title="Output throughput vs load",
        xlabel=xlabel,
        ylabel="output tok/s",
        markers=True,
        colors=colors,
    )


def _divergence_plot(agreement: dict[str, Any], colors: dict[str, str]) -> str:
    vs = agreement.get("vs_reference", {})
    positions = {t: a["first_divergence_positions"] for t, a in vs.items()}
    allpos = [p for v in positions.values() for p in v]
    if not allpos:
        return "<p><em>First divergence: every compared output matched the reference.</em></p>"
    edges = np.histogram_bin_edges(allpos, bins=min(12, max(1, len(set(allpos)))))
    labels = [f"{edges[i]:.0f}-{edges[i + 1]:.0f}" for i in range(len(edges) - 1)]
    series = {t: [int(c) for c in np.histogram(v, bins=edges)[0]] for t, v in positions.items()}
    unit = next((a["divergence_unit"] for a in vs.values() if a["first_divergence_positions"]), "char")
    return bar_chart(
        series,
        labels,
        title=f"First divergence from {agreement.get('reference')}",
        xlabel=f"{unit} position",
        ylabel="prompts",
        colors=colors,
    )


def render_html(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    run = summary["run"]
    ag = summary.get("agreement") or {}
    valid = "yes" if run["valid"] else '<span class="bad">NO (schedule lag above threshold)</span>'
    parts = [
        (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>abtest {escape(str(run['name']))}"
            f"</title><style>{_CSS}</style></head><body>"
        ),
        f"<h1>abtest run <code>{escape(str(run['name']))}</code></h1>",
        (
            f"<p>status {escape(str(run['status']))}; valid: {valid}; seed {run['seed']}; "
            f"request list sha256 <code>{escape(str(run['request_list_sha256']))}</code>; "
            f"reference {escape(str(run['reference']))}</p>"
        ),
        "<h2>Latency and throughput</h2>",
        _table(*metric_rows(summary)),
        "<h2>Verdicts</h2>",
        _table(*verdict_rows(summary.get("verdicts", []) + summary.get("ttft_verdicts", []))),
    ]
    parts.append("<h2>Plots</h2><div class='plots'>")
    colors = color_map(list(run["targets"]) + sorted(set(summary["metrics"]) - set(run["targets"])))
    parts += [_cdf_plot(records, lvl, colors) for lvl in run["levels"][:3]]
    parts.append(_throughput_plot(summary, colors))
    if ag:
        parts.append(_divergence_plot(ag, colors))
    parts.append("</div>")
    if ag:
        parts += ["<h2>Agreement</h2>", _table(*agreement_rows(ag))]
        acc = ag.get("task_accuracy", {})
        if acc:
            parts += ["<h2>Task accuracy</h2>", _table(*task_accuracy_rows(acc))]
        ll = ag.get("loglikelihood", {})
        if ll:
            parts += ["<h2>Log-likelihood (multiple choice)</h2>", _table(*loglikelihood_rows(ll))]
    cs = ag.get("cross_scoring", {}) if ag else {}
    if cs:
        parts += [
            "<h2>Cross-scoring (mean log-likelihood of the source's outputs under the scorer)</h2>",
            _table(*cross_scoring_rows(cs)),
        ]
    parts.append("<h2>Definitions</h2><ul>")
    parts += [f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in summary["definitions"].items()]
    parts.append("</ul></body></html>")
    return "\n".join(parts)


def write_html(run_dir: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> None:
    (run_dir / "report.html").write_text(render_html(summary, records), encoding="utf-8")
