"""`AsyncHrmEngine`: an asyncio front over one worker thread running the step loop.

Requests are validated on the caller's side (errors raise immediately), then handed to
the worker through an inbox. At every step boundary the worker admits new sequences into
the running batch (a prefill step) and retires finished ones, so a request never waits
for an unrelated batch to drain (continuous batching). Results and stream chunks go back
to the event loop with `call_soon_threadsafe`. The number of requests not yet running is
bounded by `max_queue`; beyond it `QueueFullError` is raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from hrm.engine import HrmEngine
from hrm.errors import HrmError, QueueFullError
from hrm.params import CompletionOutput, LoglikelihoodOutput, SamplingParams, TokenChunk
from hrm.sequence import Sequence

__all__ = ["AsyncHrmEngine"]


@dataclass(eq=False)
class _Request:
    seq: Sequence
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[CompletionOutput] | None = None
    chunks: asyncio.Queue[TokenChunk | BaseException] | None = None
    text: list[str] = field(default_factory=list)  # deltas since the last chunk
    sent_ids: int = 0

    def deliver(self, fn: Callable[..., Any], *args: Any) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)


@dataclass(eq=False)
class _Job:
    """Work run on the worker thread between steps (e.g. log-likelihood scoring)."""

    fn: Callable[[], Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]

    def run(self) -> None:
        try:
            out = self.fn()
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            self.fail(exc)
        else:
            if not self.loop.is_closed():
                self.loop.call_soon_threadsafe(_set_result, self.future, out)

    def fail(self, exc: BaseException) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(_set_exception, self.future, exc)


def _set_result(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class AsyncHrmEngine:
    def __init__(self, engine: HrmEngine, max_queue: int = 256):
        self.engine = engine
        self.max_queue = max_queue
        self._inbox: deque[_Request | _Job] = deque()
        self._active: dict[int, _Request] = {}  # seq_id -> request (worker thread only)
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._queued = 0  # requests in the inbox (guarded by _wake)

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        if self._thread is not None:
            return
        if self.engine.driver is not None:
            raise HrmError("this HrmEngine is already driven by another running AsyncHrmEngine")
        self.engine.driver = self
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="hrm-engine", daemon=True)
        self._thread.start()

    async def stop(self, drain: bool = True) -> None:
        """Stop the worker; with `drain`, in-flight and queued requests finish first."""
        thread = self._thread
        if thread is None:
            return
        if drain:
            while self._inbox or self.engine.scheduler.has_work():
                await asyncio.sleep(0.01)
        with self._wake:
            self._stopping = True
            self._wake.notify()
        await asyncio.to_thread(thread.join)
        self._thread = None
        stopped = HrmError("engine stopped")
        self._fail_active(stopped)
        with self._wake:
            items = list(self._inbox)
            self._inbox.clear()
            self._queued = 0
        for item in items:
            if isinstance(item, _Request):
                self._active[item.seq.seq_id] = item
            else:
                item.fail(stopped)
        self._fail_active(stopped)
        self.engine.scheduler.waiting.clear()
        self.engine.scheduler.running.clear()
        self.engine.driver = None

    @property
    def queue_depth(self) -> int:
        """Requests accepted but not yet running (inbox + scheduler waiting list)."""
        return self._queued + len(self.engine.scheduler.waiting)

    @property
    def num_running(self) -> int:
        return len(self.engine.scheduler.running)

    # -- requests ---------------------------------------------------------------------
    def _submit(self, item: _Request | _Job) -> None:
        if self._thread is None or self._stopping:
            raise HrmError("AsyncHrmEngine is not running")
        with self._wake:
            if isinstance(item, _Request):
                if self.queue_depth >= self.max_queue:
                    raise QueueFullError(f"request queue is full ({self.max_queue} waiting)")
                self._queued += 1
            self._inbox.append(item)
            self._wake.notify()

    async def generate(self, prompt: str, params: SamplingParams) -> CompletionOutput:
        loop = asyncio.get_running_loop()
        req = _Request(seq=self.engine.make_sequence(prompt, params), loop=loop, future=loop.create_future())
        self._submit(req)
        assert req.future is not None
        try:
            return await req.future
        except asyncio.CancelledError:
            req.seq.cancelled = True
            raise

    def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[TokenChunk]:
        """Validate and enqueue now (errors raise here); iterate for chunks, the last has `.final`."""
        loop = asyncio.get_running_loop()
        req = _Request(
            seq=self.engine.make_sequence(prompt, params, incremental=True), loop=loop, chunks=asyncio.Queue()
        )
        req.seq.on_token = lambda _seq, delta: req.text.append(delta)
        self._submit(req)
        return self._drain(req)

    async def _drain(self, req: _Request) -> AsyncIterator[TokenChunk]:
        assert req.chunks is not None
        try:
            while True:
                item = await req.chunks.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.final is not None:
                    return
        finally:
            req.seq.cancelled = True  # no-op once finished; frees the row if the client left

    async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodOutput]:
        loop = asyncio.get_running_loop()
        job = _Job(lambda: self.engine.loglikelihood(prompts, continuations), loop, loop.create_future())
        self._submit(job)
        result: list[LoglikelihoodOutput] = await job.future
        return result

    # -- worker thread ----------------------------------------------------------------------
    def _run(self) -> None:
        sched = self.engine.scheduler
        while True:
            with self._wake:
                while not self._inbox and not sched.has_work() and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                items = list(self._inbox)
                self._inbox.clear()
            # Never hold _wake and engine.lock together (a sync generate() holds the latter).
            with self.engine.lock:  # excludes a concurrent synchronous HrmEngine.generate()
                for item in items:
                    if isinstance(item, _Request):
                        self._active[item.seq.seq_id] = item
                        sched.add(item.seq)
            with self._wake:  # counted as queued until they are in the scheduler's waiting list
                self._queued -= sum(isinstance(item, _Request) for item in items)
            for item in items:
                if isinstance(item, _Job):
                    item.run()
            if sched.has_work():
                try:
                    finished = self.engine.step()
                except BaseException as exc:  # noqa: BLE001 - fail the batch, keep serving
                    self._reset(exc)
                    continue
                self._publish(finished)

    def _publish(self, finished: list[Sequence]) -> None:
        done = {s.seq_id for s in finished}
        for req in list(self._active.values()):
            seq = req.seq
            if req.chunks is not None and (len(seq.output_ids) > req.sent_ids or seq.seq_id in done):
                final = seq.output() if seq.seq_id in done else None
                chunk = TokenChunk("".join(req.text), seq.output_ids[req.sent_ids :], final=final)
                req.text.clear()
                req.sent_ids = len(seq.output_ids)
                req.deliver(req.chunks.put_nowait, chunk)
            if seq.seq_id in done:
                del self._active[seq.seq_id]
                if req.future is not None:
                    req.deliver(_set_result, req.future, seq.output())

    def _reset(self, exc: BaseException) -> None:
        sched = self.engine.scheduler
        sched.waiting.clear()
        sched.running.clear()
        self._fail_active(exc)

    def _fail_active(self, exc: BaseException) -> None:
        for req in self._active.values():
            if req.future is not None:
                req.deliver(_set_exception, req.future, exc)
            if req.chunks is not None:
                req.deliver(req.chunks.put_nowait, exc)
        self._active.clear()
