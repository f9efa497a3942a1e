"""Harness self-benchmark: can the open-loop dispatcher keep its schedule at high request rates?

A null HTTP server (a separate process, raw asyncio, constant `/generate` body) answers
instantly; the harness replays a seeded Poisson schedule against it through the same
`dispatch()` and `RouterTarget` the benchmark uses, and reports achieved rate and
schedule lag. Rerun with:

    python -m benchmarks.perf_harness --rate 1000 --duration 10
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import numpy as np

__all__ = ["NullServer", "main", "run_harness"]

_BODY = (
    b'{"completions":[" ok"],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4},'
    b'"finish_reasons":["eos"]}'
)
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-backend: null\r\n"
    b"content-length: " + str(len(_BODY)).encode() + b"\r\n\r\n" + _BODY
)


class _NullProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive: answer every complete request with the constant response."""

    def __init__(self) -> None:
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].lower()
            i = head.find(b"content-length:")
            length = (
                int(head[i + 15 : head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None])
                if i >= 0
                else 0
            )
            total = head_end + 4 + length
            if len(self.buf) < total:
                return
            self.buf = self.buf[total:]
            assert self.transport is not None
            self.transport.write(_RESPONSE)


async def _serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_NullProtocol, "127.0.0.1", port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class NullServer:
    """The null server in a separate process; `url` once started."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.perf_harness", "--serve"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


async def _harness(url: str, rate: float, n: int, seed: int, sink_dir: Path | None) -> dict[str, Any]:
    from benchmarks.load.openloop import dispatch
    from benchmarks.load.poisson import PoissonArrivals
    from benchmarks.outputs.jsonl import RecordSink
    from benchmarks.records import Params, RequestItem, RequestRecord
    from benchmarks.targets import RouterTarget

    profile = PoissonArrivals(rate, seed)
    items = [RequestItem(id=f"p{i}", prompt=f"prompt {i}", params=Params(max_tokens=1)) for i in range(n)]
    target = RouterTarget(url, timeout_s=30.0, max_connections=512)
    sink = RecordSink(sink_dir / "requests.jsonl") if sink_dir else None
    if sink:
        sink.open()
    recs: list[RequestRecord] = []

    async def send(item: RequestItem, t_sched: float) -> None:
        rec = RequestRecord(
            type="generate",
            target=target.name,
            level=profile.label,
            repeat=0,
            request_id=item.id,
            block=0,
            warmup=False,
            t_scheduled=t_sched,
        )
        await target.generate(item, rec)
        if sink:
            sink.write(rec.to_dict())
        recs.append(rec)

    await target.start()
    try:
        # warm the connection pool so the measured window is steady state
        await asyncio.gather(
            *(
                send(RequestItem(id=f"w{i}", prompt="w", params=Params(max_tokens=1)), time.perf_counter())
                for i in range(64)
            )
        )
        recs.clear()
        gc.freeze()
        t0, cpu0 = time.perf_counter(), time.process_time()
        await dispatch(items, profile.offsets(n) or [], send)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        await target.close()
        if sink:
            sink.close()
    lag = np.array([r.t_sent - r.t_scheduled for r in recs]) * 1000.0
    e2e = np.array([r.t_end - r.t_sent for r in recs if r.ok]) * 1000.0
    sends = sorted(r.t_sent for r in recs)
    return {
        "target_rate": rate,
        "requests": n,
        "errors": sum(1 for r in recs if not r.ok),
        "elapsed_s": elapsed,
        "achieved_send_rate": (n - 1) / (sends[-1] - sends[0]) if n > 1 else None,
        "achieved_completion_rate": n / elapsed,
        "lag_p50_ms": float(np.percentile(lag, 50)),
        "lag_p99_ms": float(np.percentile(lag, 99)),
        "lag_max_ms": float(lag.max()),
        "e2e_p50_ms": float(np.percentile(e2e, 50)) if e2e.size else None,
        "e2e_p99_ms": float(np.percentile(e2e, 99)) if e2e.size else None,
        "fsync_sink": sink_dir is not None,
        "client_cpu_us_per_request": cpu / n * 1e6,
        "loadavg_1m": os.getloadavg()[0],
    }


def run_harness(
    url: str, *, rate: float = 1000.0, duration_s: float = 10.0, seed: int = 0, sink: bool = True
) -> dict[str, Any]:
    n = max(2, int(rate * duration_s))
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_harness(url, rate, n, seed, Path(tmp) if sink else None))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", action="store_true", help="run only the null server (prints its port)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-sink", action="store_true", help="do not append+fsync records (isolates the client)"
    )
    ap.add_argument("--max-lag-p99-ms", type=float, default=2.0)
    ap.add_argument("--min-rate", type=float, default=1000.0)
    args = ap.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.port))
        return 0
    with NullServer() as srv:
        res = run_harness(
            srv.url, rate=args.rate, duration_s=args.duration, seed=args.seed, sink=not args.no_sink
        )
    res["cpu_count"] = os.cpu_count()
    res["pass"] = (
        res["errors"] == 0
        and res["lag_p99_ms"] <= args.max_lag_p99_ms
        and res["achieved_completion_rate"] >= args.min_rate * 0.97
    )
    print(json.dumps(res, indent=2))
    return 0 if res["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
