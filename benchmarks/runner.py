"""The executor: replays one fixed request list to every target at every load level.

Targets are interleaved in seeded blocks (ABBA or randomized) with repeats, never
all of A then all of B. Every finished request is appended to the sink at once;
keys already in the sink (a resumed run) are skipped.
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from benchmarks.load.base import LoadProfile, SendFn
from benchmarks.outputs.jsonl import RecordSink
from benchmarks.records import LoglikelihoodRecord, RequestItem, RequestRecord, record_key
from benchmarks.requests.plan import RequestList
from benchmarks.targets import Target, classify_error

_SCORE_BATCH = 16  # continuations per cross-scoring call

__all__ = ["NullProgress", "Progress", "Runner", "Schedule", "block_schedule"]


class Progress(Protocol):
    def add_target(self, name: str, total: int) -> None: ...
    def on_record(self, rec: RequestRecord) -> None: ...


class NullProgress:
    def add_target(self, name: str, total: int) -> None:
        pass

    def on_record(self, rec: RequestRecord) -> None:
        pass


@dataclass(frozen=True)
class Schedule:
    """Which target runs which block, in which order (fixed by the seed)."""

    segments: tuple[tuple[int, int, str], ...]  # (repeat, block, target) in run order

    @property
    def order_labels(self) -> list[str]:
        return [f"r{r}b{b}:{t}" for r, b, t in self.segments]


def block_schedule(
    targets: Sequence[str], n_items: int, block_size: int, repeats: int, order: str, seed: int
) -> Schedule:
    """ABBA: forward order on even blocks, reversed on odd; random: a seeded permutation per block."""
    if order not in ("abba", "random"):
        raise ValueError(f"--order: unknown {order!r}; valid: abba, random")
    n_blocks = max(1, -(-n_items // block_size))
    rng = random.Random(seed)
    segs: list[tuple[int, int, str]] = []
    k = 0
    for rep in range(repeats):
        for b in range(n_blocks):
            if order == "abba":
                seq = list(targets) if k % 2 == 0 else list(reversed(targets))
            else:
                seq = list(targets)
                rng.shuffle(seq)
            segs.extend((rep, b, t) for t in seq)
            k += 1
    return Schedule(tuple(segs))


@dataclass
class Runner:
    targets: dict[str, Target]
    levels: list[LoadProfile]
    request_list: RequestList
    sink: RecordSink
    schedule: Schedule
    block_size: int
    done: set[tuple[str, ...]] = field(default_factory=set)
    progress: Progress = field(default_factory=NullProgress)
    cross_score: bool = True
    reference: str | None = None

    def _blocks(self) -> list[list[int]]:
        n = len(self.request_list.items)
        return [list(range(s, min(n, s + self.block_size))) for s in range(0, max(n, 1), self.block_size)]

    async def _send_one(
        self,
        target: Target,
        item: RequestItem,
        t_sched: float,
        level: str,
        repeat: int,
        block: int,
        warmup: bool,
    ) -> None:
        rec = RequestRecord(
            type="generate",
            target=target.name,
            level=level,
            repeat=repeat,
            request_id=item.id,
            block=block,
            warmup=warmup,
            t_scheduled=t_sched,
        )
        await target.generate(item, rec)
        d = rec.to_dict()
        self.sink.write(d)
        self.done.add(record_key(d))
        self.progress.on_record(rec)

    def _sender(self, target: Target, level: str, repeat: int, block: int, warmup: bool) -> SendFn:
        async def send(item: RequestItem, t_sched: float) -> None:
            await self._send_one(target, item, t_sched, level, repeat, block, warmup)

        return send

    async def run(self) -> None:
        gc.freeze()  # long-lived setup objects leave the GC's view: fewer, shorter pauses mid-schedule
        for name, t in self.targets.items():
            self.progress.add_target(
                name,
                len(self.request_list.items)
                * len(self.levels)
                * (1 + max(r for r, _, _ in self.schedule.segments)),
            )
            await t.start()
        try:
            await self._warmup()
            for level in self.levels:
                await self._run_level(level)
            await self._score()
        finally:
            for t in self.targets.values():
                await t.close()
            gc.unfreeze()

    async def _warmup(self) -> None:
        warm = self.request_list.warmup
        if not warm:
            return
        for name, t in self.targets.items():
            todo = [w for w in warm if ("generate", name, "warmup", "0", w.id) not in self.done]
            lvl = self.levels[0]
            await lvl.run(todo, lvl.offsets(len(todo)), self._sender(t, "warmup", 0, -1, True))

    async def _run_level(self, level: LoadProfile) -> None:
        items = self.request_list.items
        offsets = level.offsets(len(items))
        blocks = self._blocks()
        for rep, b, name in self.schedule.segments:
            t = self.targets[name]
            idx = [
                i
                for i in blocks[b]
                if ("generate", name, level.label, str(rep), items[i].id) not in self.done
            ]
            if not idx:
                continue
            seg_off = None if offsets is None else [offsets[i] - offsets[idx[0]] for i in idx]
            await level.run([items[i] for i in idx], seg_off, self._sender(t, level.label, rep, b, False))

    async def _score(self) -> None:
        """Log-likelihood of multiple-choice items, then cross-scoring of each target's outputs."""
        scorers = [t for t in self.targets.values() if t.supports_loglikelihood and t.start_error is None]
        for t in scorers:
            for item in self.request_list.scoring:
                key = ("loglikelihood", t.name, "0", item.id, "None")
                if key in self.done:
                    continue
                rec = LoglikelihoodRecord(
                    type="loglikelihood",
                    target=t.name,
                    request_id=item.id,
                    repeat=0,
                    continuations=list(item.choices),
                )
                await self._ll(t, rec, [item.prompt] * len(item.choices), list(item.choices))
        if not self.cross_score or not self.levels:
            return
        outputs = self._first_outputs()
        prompts = {i.id: i.prompt for i in self.request_list.items}
        for t in scorers:
            for source, outs in outputs.items():
                todo = [
                    (rid, text)
                    for rid, text in outs.items()
                    if ("cross_score", t.name, "0", rid, source) not in self.done
                ]
                for k in range(0, len(todo), _SCORE_BATCH):
                    chunk = todo[k : k + _SCORE_BATCH]
                    recs = [
                        LoglikelihoodRecord(
                            type="cross_score",
                            target=t.name,
                            request_id=rid,
                            repeat=0,
                            continuations=[text],
                            source=source,
                        )
                        for rid, text in chunk
                    ]
                    await self._ll_batch(t, recs, [prompts[rid] for rid, _ in chunk], [x for _, x in chunk])

    def _first_outputs(self) -> dict[str, dict[str, str]]:
        """Each target's successful repeat-0 outputs at the first level, read back from the sink."""
        from benchmarks.outputs.jsonl import read_records

        label = self.levels[0].label
        self.sink.flush()
        out: dict[str, dict[str, str]] = {}
        for d in read_records(self.sink.path):
            if (
                d.get("type") == "generate"
                and d["level"] == label
                and d["repeat"] == 0
                and d.get("error_class") is None
                and d.get("text")
            ):
                out.setdefault(d["target"], {})[d["request_id"]] = d["text"]
        return out

    async def _ll(self, t: Target, rec: LoglikelihoodRecord, prompts: list[str], conts: list[str]) -> None:
        try:
            rec.ll = await t.loglikelihood(prompts, conts)
        except Exception as e:  # noqa: BLE001 - recorded
            rec.error_class, _ = classify_error(e)
            rec.error = f"{type(e).__name__}: {e}"[:500]
        self._write_ll(rec)

    async def _ll_batch(
        self, t: Target, recs: list[LoglikelihoodRecord], prompts: list[str], conts: list[str]
    ) -> None:
        """One scoring call for many records (one continuation each)."""
        try:
            lls = await t.loglikelihood(prompts, conts)
            for rec, ll in zip(recs, lls, strict=True):
                rec.ll = [ll]
        except Exception as e:  # noqa: BLE001 - recorded on every record of the batch
            for rec in recs:
                rec.error_class, _ = classify_error(e)
                rec.error = f"{type(e).__name__}: {e}"[:500]
        for rec in recs:
            self._write_ll(rec)

    def _write_ll(self, rec: LoglikelihoodRecord) -> None:
        d = rec.to_dict()
        self.sink.write(d)
        self.done.add(record_key(d))

    def run_sync(self) -> None:
        asyncio.run(self.run())
