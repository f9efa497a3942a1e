"""Turn a run directory's raw records into the summary (metrics, verdicts, agreement)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchmarks.agreement import agreement_report
from benchmarks.manifest import read_manifest
from benchmarks.metrics import DEFINITIONS, metrics_by_target
from benchmarks.outputs.jsonl import read_records
from benchmarks.stats import latency_verdicts

__all__ = ["analyze", "load_run"]


def load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """(manifest, request list dict, records) of a run directory."""
    manifest = read_manifest(run_dir)
    rl_path = run_dir / "request_list.json"
    request_list = json.loads(rl_path.read_text(encoding="utf-8")) if rl_path.exists() else {"items": []}
    return manifest, request_list, read_records(run_dir / "requests.jsonl")


def analyze(run_dir: Path) -> dict[str, Any]:
    manifest, rl, records = load_run(run_dir)
    settings = manifest.get("settings", {})
    targets = [t["name"] for t in manifest.get("targets", [])]
    levels = manifest.get("levels", [])
    reference = settings.get("reference") or (targets[0] if targets else None)
    metrics = metrics_by_target(records, settings.get("slo_ms") or None, settings.get("max_lag_ms", 25.0))
    items = {i["id"]: i for i in rl.get("items", [])}
    answers = {i["id"]: i.get("answer") for i in rl.get("scoring", [])}
    agreement = (
        agreement_report(records, reference, levels[0], items, answers, seed=settings.get("seed", 0))
        if reference and levels
        else {}
    )
    served: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        if r.get("type") == "generate" and r.get("served_by") and not r.get("warmup"):
            served[r["target"]][r["served_by"]] += 1
    by_served = metrics_by_target(
        [
            {**r, "target": f"{r['target']}@{r['served_by']}"}
            for r in records
            if r.get("type") == "generate" and r.get("served_by")
        ],
        settings.get("slo_ms") or None,
        settings.get("max_lag_ms", 25.0),
    )
    valid = all(m.get("valid", True) for lv in metrics.values() for m in lv.values())
    return {
        "run": {
            "name": settings.get("name"),
            "dir": str(run_dir),
            "status": manifest.get("status"),
            "request_list_sha256": manifest.get("request_list_sha256"),
            "schedule_sha256": manifest.get("schedule_sha256"),
            "seed": settings.get("seed"),
            "reference": reference,
            "targets": targets,
            "levels": levels,
            "num_records": len(records),
            "valid": valid,
            "git_sha": manifest.get("git_sha"),
            "slo_ms": settings.get("slo_ms") or {},
            "max_lag_ms": settings.get("max_lag_ms", 25.0),
        },
        "definitions": DEFINITIONS,
        "metrics": metrics,
        "verdicts": latency_verdicts(records, seed=settings.get("seed", 0)),
        "ttft_verdicts": latency_verdicts(records, seed=settings.get("seed", 0), metric="ttft"),
        "agreement": agreement,
        "served_by": {t: dict(c) for t, c in served.items()},
        "metrics_by_served_backend": by_served,
    }
