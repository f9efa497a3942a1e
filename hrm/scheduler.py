"""Continuous-batching scheduler (nano-vllm style; never imports torch).

`schedule()` returns either a prefill batch (newly admitted sequences, placed at cache
rows `row0 ..`) or a decode batch (all running sequences, rows `0 .. n-1`).
`postprocess()` records the sampled tokens and retires finished sequences, keeping the
running list -- and therefore the cache rows -- contiguous: the last row moves into each
hole, and the returned `moves` tell the runner which cache rows to copy.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from hrm.sequence import SeqStatus, Sequence

__all__ = ["Batch", "Scheduler", "StepResult"]


@dataclass
class Batch:
    seqs: list[Sequence]
    is_prefill: bool
    row0: int = 0


@dataclass
class StepResult:
    finished: list[Sequence] = field(default_factory=list)
    moves: list[tuple[int, int]] = field(default_factory=list)  # (src_row, dst_row)


class Scheduler:
    def __init__(self, max_batch_size: int, max_prefill_tokens: int = 8192):
        self.max_batch_size = max_batch_size
        self.max_prefill_tokens = max_prefill_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence) -> None:
        seq.status = SeqStatus.WAITING
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def can_admit(self) -> bool:
        return bool(self.waiting) and len(self.running) < self.max_batch_size

    def schedule(self) -> Batch:
        if self.can_admit():
            row0, longest = len(self.running), 0
            admitted: list[Sequence] = []
            while self.waiting and len(self.running) + len(admitted) < self.max_batch_size:
                nxt = self.waiting[0]
                longest_if = max(longest, nxt.prompt_len)
                if admitted and longest_if * (len(admitted) + 1) > self.max_prefill_tokens:
                    break
                admitted.append(self.waiting.popleft())
                longest = longest_if
            for seq in admitted:
                seq.status = SeqStatus.RUNNING
            self.running.extend(admitted)
            return Batch(seqs=admitted, is_prefill=True, row0=row0)
        return Batch(seqs=list(self.running), is_prefill=False, row0=0)

    def postprocess(self, batch: Batch, tokens: list[int], logprobs: list[float]) -> StepResult:
        now = time.perf_counter()
        done_rows = [
            batch.row0 + i
            for i, (seq, tok, lp) in enumerate(zip(batch.seqs, tokens, logprobs, strict=True))
            if seq.append(tok, lp, now)
        ]
        result = StepResult(finished=[self.running[r] for r in done_rows])
        if done_rows:
            keep = len(self.running) - len(done_rows)
            done = set(done_rows)
            holes = sorted(r for r in done if r < keep)
            movers = [r for r in range(keep, len(self.running)) if r not in done]
            for src, dst in zip(movers, holes, strict=True):
                self.running[dst] = self.running[src]
                result.moves.append((src, dst))
            del self.running[keep:]
        return result

    def abort(self, seq: Sequence) -> bool:
        """Drop a waiting sequence (a cancelled request). Running ones finish normally."""
        try:
            self.waiting.remove(seq)
        except ValueError:
            return False
        seq.status = SeqStatus.FINISHED
        return True
