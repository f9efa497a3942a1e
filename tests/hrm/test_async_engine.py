"""AsyncHrmEngine: continuous batching, streaming, bounded queue, scoring, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from hrm.async_engine import AsyncHrmEngine
from hrm.errors import InvalidRequestError, QueueFullError
from hrm.params import SamplingParams

GREEDY = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)


@pytest.fixture
async def aengine(engine):
    a = AsyncHrmEngine(engine, max_queue=64)
    await a.start()
    yield a
    await a.stop()


async def test_async_generate_equals_sync(engine, aengine):
    prompts = ["hello world", "the quick brown fox", "copy: abc ->"]
    sync = engine.generate(prompts, GREEDY)
    outs = await asyncio.gather(*(aengine.generate(p, GREEDY) for p in prompts))
    assert [o.token_ids for o in outs] == [o.token_ids for o in sync]
    assert all(o.t_start and o.t_first_token and o.t_end for o in outs)


async def test_seeded_request_same_under_continuous_batching(engine, aengine):
    params = SamplingParams(max_tokens=20, temperature=1.0, top_p=0.95, seed=77)
    alone = engine.generate(["hello world"], params)[0]
    others = [SamplingParams(max_tokens=5 + 3 * i, temperature=0.9, seed=i) for i in range(16)]
    tasks = [
        asyncio.create_task(aengine.generate(f"the quick brown fox {i}", p)) for i, p in enumerate(others[:8])
    ]
    await asyncio.sleep(0.01)  # let the first wave start decoding, then join mid-flight
    target = asyncio.create_task(aengine.generate("hello world", params))
    tasks += [asyncio.create_task(aengine.generate(f"sort: {i} 1 ->", p)) for i, p in enumerate(others[8:])]
    out = await target
    await asyncio.gather(*tasks)
    assert out.token_ids == alone.token_ids
    assert out.text == alone.text


async def test_requests_join_a_running_batch(engine, aengine):
    long = asyncio.create_task(
        aengine.generate("hello", SamplingParams(max_tokens=60, temperature=0.0, ignore_eos=True))
    )
    while aengine.num_running == 0:
        await asyncio.sleep(0.001)
    short = await aengine.generate("world", SamplingParams(max_tokens=2, temperature=0.0, ignore_eos=True))
    assert not long.done()  # the short request finished while the long one was still decoding
    assert len(short.token_ids) == 2
    assert len((await long).token_ids) == 60


async def test_stream_chunks_add_up_to_the_completion(aengine):
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    chunks = [c async for c in aengine.stream("héllo ✓", params)]
    final = chunks[-1].final
    assert final is not None and all(c.final is None for c in chunks[:-1])
    assert "".join(c.text for c in chunks) == final.text
    assert [t for c in chunks for t in c.token_ids] == final.token_ids
    assert len(chunks) >= 8  # incremental, not one blob
    sync = await aengine.generate("héllo ✓", params)
    assert sync.text == final.text


async def test_stream_never_leaks_a_stop_string(engine, aengine):
    full = engine.generate(["hello world"], GREEDY)[0].text
    stop = full[4:7]
    params = SamplingParams(max_tokens=12, temperature=0.0, stop=(stop,))
    chunks = [c async for c in aengine.stream("hello world", params)]
    text = "".join(c.text for c in chunks)
    assert chunks[-1].final is not None and chunks[-1].final.finish_reason == "stop"
    assert text == full[: full.index(stop)]


async def test_invalid_requests_raise_immediately(aengine):
    with pytest.raises(InvalidRequestError) as e:
        await aengine.generate("", GREEDY)
    assert e.value.field == "prompts[0]"
    with pytest.raises(InvalidRequestError) as e:
        aengine.stream("hi", SamplingParams(top_p=2.0))
    assert e.value.field == "top_p"


async def test_queue_full_raises(engine):
    a = AsyncHrmEngine(engine, max_queue=2)
    await a.start()
    try:
        with engine.lock:  # the worker cannot step: requests stay queued
            t1 = asyncio.create_task(a.generate("a", GREEDY))
            t2 = asyncio.create_task(a.generate("b", GREEDY))
            await asyncio.sleep(0.05)
            assert a.queue_depth == 2
            with pytest.raises(QueueFullError):
                await a.generate("c", GREEDY)
        assert len((await t1).token_ids) == 12 and len((await t2).token_ids) == 12
    finally:
        await a.stop()


async def test_async_loglikelihood_equals_sync(engine, aengine):
    sync = engine.loglikelihood(["hello"], [" world"])
    res, gen = await asyncio.gather(
        aengine.loglikelihood(["hello"], [" world"]), aengine.generate("x", GREEDY)
    )
    assert len(gen.token_ids) == 12  # scoring ran between decode steps of a live request
    assert res[0].ll == pytest.approx(sync[0].ll, abs=1e-6)
    with pytest.raises(InvalidRequestError):
        await aengine.loglikelihood(["a"], [""])


async def test_stop_drains_in_flight_requests(engine):
    a = AsyncHrmEngine(engine)
    await a.start()
    tasks = [asyncio.create_task(a.generate(f"p{i}", GREEDY)) for i in range(4)]
    await asyncio.sleep(0)
    await a.stop(drain=True)
    assert all(len(t.result().token_ids) == 12 for t in tasks)
    assert not engine.scheduler.has_work()


async def test_abandoned_stream_frees_its_row(engine, aengine):
    params = SamplingParams(max_tokens=200, temperature=0.0, ignore_eos=True)
    agen = aengine.stream("hello", params)
    async for _ in agen:
        break
    await agen.aclose()
    for _ in range(200):
        if not engine.scheduler.has_work():
            break
        await asyncio.sleep(0.005)
    assert not engine.scheduler.has_work()


async def test_not_started_or_stopped_engine_refuses(engine):
    from hrm.errors import HrmError

    a = AsyncHrmEngine(engine)
    with pytest.raises(HrmError, match="not running"):
        await a.generate("hi", GREEDY)
    await a.start()
    await a.stop()
    with pytest.raises(HrmError, match="not running"):
        await a.generate("hi", GREEDY)
