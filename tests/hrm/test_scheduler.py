"""The scheduler (no torch): admission bounded by max_batch_size, contiguous rows on retire."""

from __future__ import annotations

import ast
from pathlib import Path

from hrm.params import SamplingParams
from hrm.scheduler import Scheduler
from hrm.sequence import SeqStatus, Sequence


class _Tok:
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(97 + i % 26) for i in ids)


def _seq(i: int, max_tokens: int = 3, plen: int = 2) -> Sequence:
    return Sequence(
        seq_id=i,
        prompt_ids=[1] * plen,
        params=SamplingParams(max_tokens=max_tokens),
        max_tokens=max_tokens,
        seed=i,
        eos_ids=frozenset({2}),
        tokenizer=_Tok(),
    )


def test_scheduler_module_never_imports_torch():
    for mod in ("scheduler.py", "sequence.py", "stops.py"):
        tree = ast.parse((Path(__file__).parents[2] / "hrm" / mod).read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any(n.split(".")[0] == "torch" for n in names), mod


def test_admission_is_bounded_and_rows_stay_contiguous():
    s = Scheduler(max_batch_size=3)
    seqs = [_seq(i, max_tokens=2 + i) for i in range(5)]
    for q in seqs:
        s.add(q)
    b = s.schedule()
    assert b.is_prefill and b.row0 == 0 and [q.seq_id for q in b.seqs] == [0, 1, 2]
    assert all(q.status is SeqStatus.RUNNING for q in b.seqs) and len(s.waiting) == 2
    s.postprocess(b, [5, 5, 5], [-1.0] * 3)
    b = s.schedule()
    assert not b.is_prefill and len(b.seqs) == 3  # batch full: decode
    r = s.postprocess(b, [5, 5, 5], [-1.0] * 3)  # seq 0 reaches max_tokens=2
    assert [q.seq_id for q in r.finished] == [0]
    assert r.moves == [(2, 0)]  # last row fills the hole
    assert [q.seq_id for q in s.running] == [2, 1]
    b = s.schedule()
    assert b.is_prefill and b.row0 == 2 and [q.seq_id for q in b.seqs] == [3]


def test_eos_and_multiple_finishes_compact_correctly():
    s = Scheduler(max_batch_size=4)
    for i in range(4):
        s.add(_seq(i, max_tokens=10))
    b = s.schedule()
    r = s.postprocess(b, [2, 5, 2, 5], [0.0] * 4)  # rows 0 and 2 hit EOS
    assert sorted(q.seq_id for q in r.finished) == [0, 2]
    assert all(q.finish_reason == "eos" for q in r.finished)
    assert r.moves == [(3, 0)]
    assert [q.seq_id for q in s.running] == [3, 1]


def test_prefill_token_budget_splits_admission():
    s = Scheduler(max_batch_size=8, max_prefill_tokens=10)
    for i in range(4):
        s.add(_seq(i, plen=4))
    assert len(s.schedule().seqs) == 2  # 2 x 4 tokens fit, a third would make 12
    assert len(s.schedule().seqs) == 2


def test_abort_waiting_and_cancel_running():
    s = Scheduler(max_batch_size=1)
    a, b = _seq(0, max_tokens=5), _seq(1)
    s.add(a)
    s.add(b)
    assert s.abort(b) and not s.abort(b)
    batch = s.schedule()
    a.cancelled = True
    r = s.postprocess(batch, [5], [0.0])
    assert r.finished == [a] and not s.has_work()
