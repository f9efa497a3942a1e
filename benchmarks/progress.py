"""Rich live progress: one bar per target with its running p50 latency and error count."""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from benchmarks.metrics import request_metrics
from benchmarks.records import RequestRecord

__all__ = ["LiveProgress"]


class LiveProgress:
    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("p50 {task.fields[p50]}  errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}
        self._lat: dict[str, list[float]] = {}
        self._err: dict[str, int] = {}

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def add_target(self, name: str, total: int) -> None:
        self._tasks[name] = self._progress.add_task(name, total=total, p50="-", errors=0)
        self._lat[name], self._err[name] = [], 0

    def on_record(self, rec: RequestRecord) -> None:
        if rec.warmup or rec.target not in self._tasks:
            return
        if rec.ok:
            self._lat[rec.target].append(request_metrics(rec.to_dict())["e2el"] * 1000.0)
        else:
            self._err[rec.target] += 1
        lat = self._lat[rec.target]
        p50 = f"{np.median(lat):.0f} ms" if lat else "-"
        self._progress.update(self._tasks[rec.target], advance=1, p50=p50, errors=self._err[rec.target])
