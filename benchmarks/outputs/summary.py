"""summary.json, summary.csv (pandas) and agreement.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.manifest import write_json_atomic

__all__ = ["summary_rows", "write_summary"]


def summary_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per (target, level) with every scalar metric."""
    rows: list[dict[str, Any]] = []
    for target, levels in summary["metrics"].items():
        for level, m in levels.items():
            row: dict[str, Any] = {"target": target, "level": level}
            for k, v in m.items():
                if isinstance(v, dict):
                    row.update({f"{k}.{kk}": vv for kk, vv in v.items()})
                else:
                    row[k] = v
            rows.append(row)
    return rows


def write_summary(run_dir: Path, summary: dict[str, Any]) -> None:
    import pandas as pd

    write_json_atomic(run_dir / "summary.json", {k: v for k, v in summary.items() if k != "agreement"})
    write_json_atomic(run_dir / "agreement.json", summary.get("agreement", {}))
    pd.DataFrame(summary_rows(summary)).to_csv(run_dir / "summary.csv", index=False)
