"""Shadow traffic: mirror a sample of requests to a shadow backend, after the primary has
answered, as detached tasks. The pair of outputs goes to a JSONL log with an agreement
flag. A shadow never delays, alters or fails the primary: it runs after the primary's
result is in hand, errors are caught and logged, and over the concurrency cap it is dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from backends.base import Backend
from backends.types import SamplingParams
from router.metrics import RouterMetrics
from router.table import RoutingTable

__all__ = ["ShadowRunner", "completions_agree", "ll_agree"]

log = logging.getLogger("abtest.router.shadow")


def completions_agree(a: Sequence[str], b: Sequence[str]) -> bool:
    return list(a) == list(b)


def ll_agree(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-3) for x, y in zip(a, b))


class ShadowRunner:
    def __init__(self, metrics: RouterMetrics, log_prompts: bool, seed: int | None) -> None:
        self.metrics = metrics
        self.log_prompts = log_prompts
        self._rng = random.Random(seed)
        self._tasks: set[asyncio.Task[None]] = set()
        self.running = 0

    def maybe_generate(self, table: RoutingTable, request_id: str, primary: str, prompts: list[str],
                       params: SamplingParams, primary_out: list[str]) -> bool:
        if table.settings.shadow is None:
            return False
        async def call(b: Backend) -> list[str]:
            return [c.text for c in await b.generate(prompts, params)]

        record = {"endpoint": "generate", "params": asdict(params)}
        return self._submit(table, request_id, primary, prompts, record, primary_out, call, completions_agree)

    def maybe_loglikelihood(self, table: RoutingTable, request_id: str, primary: str, prompts: list[str],
                            continuations: list[str], primary_out: list[float]) -> bool:
        if table.settings.shadow is None:
            return False
        async def call(b: Backend) -> list[float]:
            return [r.ll for r in await b.loglikelihood(prompts, continuations)]

        record: dict[str, Any] = {"endpoint": "loglikelihood"}
        if self.log_prompts:
            record["continuations"] = continuations
        return self._submit(table, request_id, primary, prompts, record, primary_out, call, ll_agree)

    def _submit(self, table: RoutingTable, request_id: str, primary: str, prompts: list[str],
                record: dict[str, Any], primary_out: Any, call: Callable[[Backend], Awaitable[Any]],
                agree: Callable[[Any, Any], bool]) -> bool:
        cfg = table.settings.shadow
        handle = table.shadow
        if cfg is None or handle is None or handle.name == primary:
            return False
        if cfg.sample_rate < 1.0 and self._rng.random() >= cfg.sample_rate:
            return False
        busy = handle.inflight + handle.waiting >= handle.max_inflight  # never queue behind primaries
        if self.running >= cfg.max_concurrency or busy or not handle.available():
            self.metrics.shadow.labels(handle.name, "dropped").inc()
            return False
        record.update(request_id=request_id, primary=primary, shadow=handle.name, primary_output=primary_out)
        if self.log_prompts:
            record["prompts"] = prompts
        self.running += 1
        task = asyncio.get_running_loop().create_task(
            self._run(handle.name, handle.lease, call, agree, record, cfg.log_path, table.settings.request_timeout_s))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(self, name: str, lease: Callable[[], Any], call: Callable[[Backend], Awaitable[Any]],
                   agree: Callable[[Any, Any], bool], record: dict[str, Any], path: Path, timeout: float) -> None:
        t0 = time.perf_counter()
        try:
            async with lease() as backend:
                async with asyncio.timeout(timeout):
                    out = await call(backend)
            record.update(shadow_output=out, agreement=agree(record["primary_output"], out), error=None)
        except Exception as exc:  # noqa: BLE001 (never propagates: the primary is long gone)
            record.update(shadow_output=None, agreement=None, error=f"{type(exc).__name__}: {exc}")
        finally:
            self.running -= 1
        record["shadow_latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        record["ts"] = time.time()
        outcome = "error" if record["error"] else ("agree" if record["agreement"] else "disagree")
        self.metrics.shadow.labels(name, outcome).inc()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record, default=str) + "\n")
        except OSError:
            log.exception("cannot write shadow log %s", path)

    async def drain(self, timeout_s: float) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
