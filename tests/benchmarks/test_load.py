"""Load profiles (closed loop, seeded open-loop schedules) and block interleaving."""

from __future__ import annotations

import asyncio
import itertools
import time

import numpy as np
import pytest

from benchmarks.load import parse_levels
from benchmarks.load.openloop import gamma_offsets
from benchmarks.records import Params, RequestItem
from benchmarks.runner import block_schedule


def _items(n: int) -> list[RequestItem]:
    return [RequestItem(id=f"p{i}", prompt=f"x{i}", params=Params()) for i in range(n)]


def test_parse_levels_and_conflicts() -> None:
    assert [lv.label for lv in parse_levels("1,4,16", None, "poisson", 0)] == ["c=1", "c=4", "c=16"]
    assert [lv.label for lv in parse_levels(None, "5,10", "gamma", 0, 0.5)] == [
        "r=5/gamma(0.5)",
        "r=10/gamma(0.5)",
    ]
    with pytest.raises(ValueError, match="conflict"):
        parse_levels("4", "5", "poisson", 0)
    with pytest.raises(ValueError, match="not a number"):
        parse_levels("four", None, "poisson", 0)
    with pytest.raises(ValueError, match="--arrival"):
        parse_levels(None, "5", "uniform", 0)
    with pytest.raises(ValueError, match="whole numbers"):
        parse_levels("1.5", None, "poisson", 0)


def test_poisson_and_gamma_schedules_are_seeded_with_the_right_mean() -> None:
    a, b = gamma_offsets(4000, 50.0, 1.0, seed=1), gamma_offsets(4000, 50.0, 1.0, seed=1)
    assert a == b and a[0] == 0.0 and all(x <= y for x, y in itertools.pairwise(a))
    gaps = np.diff(a)
    assert np.mean(gaps) == pytest.approx(1 / 50, rel=0.05)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, rel=0.1)  # exponential: CV 1
    bursty = np.diff(gamma_offsets(4000, 50.0, 0.25, seed=1))
    assert np.std(bursty) / np.mean(bursty) == pytest.approx(2.0, rel=0.15)  # CV = 1/sqrt(shape)
    assert gamma_offsets(10, 50.0, 1.0, seed=2) != a[:10]


async def test_closed_loop_never_exceeds_concurrency() -> None:
    lv = parse_levels("3", None, "poisson", 0)[0]
    live, peak, sent = 0, 0, []

    async def send(item: RequestItem, t_sched: float) -> None:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        sent.append(item.id)
        await asyncio.sleep(0.005)
        live -= 1

    await lv.run(_items(10), lv.offsets(10), send)
    assert peak == 3 and sorted(sent) == sorted(f"p{i}" for i in range(10))


async def test_open_loop_sends_on_an_absolute_schedule() -> None:
    lv = parse_levels(None, "200", "poisson", 0)[0]
    offs = lv.offsets(40)
    lags: list[float] = []
    t0 = time.perf_counter()

    async def send(item: RequestItem, t_sched: float) -> None:
        lags.append(time.perf_counter() - t_sched)
        await asyncio.sleep(0.05)  # slow responses must not delay later sends (open loop)

    await lv.run(_items(40), offs, send)
    elapsed = time.perf_counter() - t0
    assert elapsed < offs[-1] + 0.05 + 0.2
    # a closed loop would be ~50 ms late by the 2nd request and seconds late by the last
    assert float(np.median(lags)) < 0.005 and sorted(lags)[-3] < 0.04


def test_blocks_interleave_abba_and_random() -> None:
    s = block_schedule(["A", "B"], 32, 8, 1, "abba", 0)
    assert [t for _, _, t in s.segments] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    r1 = block_schedule(["A", "B", "C"], 32, 8, 2, "random", 5)
    assert r1 == block_schedule(["A", "B", "C"], 32, 8, 2, "random", 5)
    # every block runs every target once per repeat, and never all of A before all of B
    for rep in (0, 1):
        for b in range(4):
            assert sorted(t for r, bb, t in r1.segments if r == rep and bb == b) == ["A", "B", "C"]
    with pytest.raises(ValueError, match="--order"):
        block_schedule(["A"], 4, 2, 1, "sorted", 0)
