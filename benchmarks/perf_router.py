"""Router overhead benchmark (rerunnable): `python -m benchmarks.perf_router [--seconds 10]`.

Same run, same machine, three processes: a null HTTP server (raw ASGI under uvicorn that
answers /generate with a canned body), the router (one worker) over a `null` in-process
backend kind that returns at once, and a separate load-generator process (raw asyncio
HTTP/1.1 keep-alive client). Measured:

* open loop at --rate req/s (default 200): latency percentiles straight to the null server
  and through the router; "added" = router minus direct, per percentile. Latency counts
  from each request's scheduled send time (no coordinated omission).
* closed loop with --concurrency connections: requests/s through the router (one worker).

Writes results/perf_router.json and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

BODY = json.dumps({"prompts": ["hello"], "max_tokens": 1, "temperature": 0.0}).encode()
CANNED = json.dumps({"completions": ["ok"], "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                       "total_tokens": 2}}).encode()


# ---- servers (run in subprocesses) -----------------------------------------------------------
async def _null_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            await send({"type": msg["type"] + ".complete"})
            if msg["type"] == "lifespan.shutdown":
                return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(CANNED)).encode())]})
    await send({"type": "http.response.body", "body": CANNED})


def _register_null_kind() -> None:
    from typing import Literal

    from backends.base import BackendSettings, register
    from backends.types import Completion, LoglikelihoodResult, StreamEvent

    class NullSettings(BackendSettings):
        kind: Literal["null"] = "null"

    class NullBackend:
        def __init__(self, settings: NullSettings) -> None:
            self.settings = settings

        @property
        def name(self) -> str:
            return self.settings.name

        async def start(self) -> None: ...
        async def close(self) -> None: ...

        async def health(self) -> bool:
            return True

        async def info(self) -> Any:
            raise NotImplementedError

        async def generate(self, prompts: list[str], params: Any) -> list[Completion]:
            return [Completion(text="ok", prompt_tokens=1, completion_tokens=1, finish_reason="length")
                    for _ in prompts]

        async def stream(self, prompt: str, params: Any) -> Any:
            yield StreamEvent(text="ok", final=Completion(text="ok", prompt_tokens=1, completion_tokens=1,
                                                          finish_reason="length"))

        async def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodResult]:
            return [LoglikelihoodResult(ll=0.0) for _ in prompts]

    register("null", NullSettings)(NullBackend)


def _serve(which: str, port: int) -> None:
    import uvicorn

    if which == "null":
        uvicorn.run(_null_app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        return
    _register_null_kind()
    from router import create_app
    from router.config import config_from_dict
    from router.serve import setup_logging

    setup_logging("warning")
    cfg = config_from_dict({"backends": [{"name": "null", "kind": "null"}],
                            "router": {"split": {"null": 1}, "health_interval_s": 60, "max_queue": 100_000}})
    uvicorn.run(create_app(cfg), host="127.0.0.1", port=port, log_level="warning", access_log=False,
                log_config=None)


# ---- load generator (runs in its own subprocess) -----------------------------------------------
class _Conn:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.req = (f"POST /generate HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(self.req)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await self.reader.readexactly(length)
        return status


async def _open_loop(host: str, port: int, rate: float, seconds: float) -> dict[str, Any]:
    idle: list[_Conn] = [_Conn(host, port) for _ in range(8)]
    lat: list[float] = []
    errors = 0
    n = int(rate * seconds)
    t0 = time.perf_counter() + 0.05

    async def one(i: int) -> None:
        nonlocal errors
        due = t0 + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        conn = idle.pop() if idle else _Conn(host, port)
        try:
            status = await conn.call()
            lat.append(time.perf_counter() - due)
            errors += status != 200
            idle.append(conn)
        except (OSError, asyncio.IncompleteReadError):
            errors += 1

    await asyncio.gather(*(one(i) for i in range(n)))
    return {"n": len(lat), "errors": errors, "latencies_s": lat}


async def _closed_loop(host: str, port: int, concurrency: int, seconds: float) -> dict[str, Any]:
    done = 0
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done, errors
        conn = _Conn(host, port)
        while time.perf_counter() < stop:
            errors += (await conn.call()) != 200
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"n": done, "errors": errors, "rps": done / (time.perf_counter() - t0)}


def _load(mode: str, port: int, a: float, seconds: float) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    coro = _open_loop("127.0.0.1", port, a, seconds) if mode == "open" else \
        _closed_loop("127.0.0.1", port, int(a), seconds)
    print(json.dumps(asyncio.run(coro)))


# ---- orchestration -----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(which: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.perf_router", "_serve", which, str(port)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{which} server did not start")


def _run_load(mode: str, port: int, a: float, seconds: float) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.perf_router", "_load", mode, str(port), str(a),
                          str(seconds)], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def run(rate: float, seconds: float, concurrency: int, rounds: int, out: Path) -> dict[str, Any]:
    null_proc, null_port = _start("null")
    router_proc, router_port = _start("router")
    try:
        _run_load("closed", null_port, 4, 1.0)  # warm up both
        _run_load("closed", router_port, 4, 1.0)
        direct: list[float] = []
        routed: list[float] = []
        errors = 0
        for _ in range(rounds):  # interleave so drift in machine load hits both sides alike
            d = _run_load("open", null_port, rate, seconds / rounds)
            r = _run_load("open", router_port, rate, seconds / rounds)
            direct += d["latencies_s"]
            routed += r["latencies_s"]
            errors += d["errors"] + r["errors"]
        closed_router = _run_load("closed", router_port, concurrency, seconds)
        closed_direct = _run_load("closed", null_port, concurrency, seconds)
    finally:
        for p in (router_proc, null_proc):
            p.terminate()
            p.wait(timeout=30)
    ms = {q: (_pct(direct, q) * 1000, _pct(routed, q) * 1000) for q in (0.5, 0.9, 0.99)}
    result = {
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]},
        "open_loop": {"rate_rps": rate, "seconds": seconds, "requests_each": len(direct), "errors": errors,
                      **{f"p{int(q * 100)}_ms": {"direct": round(d, 3), "router": round(r, 3),
                                                  "added": round(r - d, 3)} for q, (d, r) in ms.items()}},
        "closed_loop": {"concurrency": concurrency, "seconds": seconds,
                        "router_rps": round(closed_router["rps"], 1), "direct_rps": round(closed_direct["rps"], 1),
                        "errors": closed_router["errors"] + closed_direct["errors"]},
        "targets": {"p50_added_ms<=1": ms[0.5][1] - ms[0.5][0] <= 1.0, "p99_added_ms<=5": ms[0.99][1] - ms[0.99][0] <= 5.0,
                    "router_rps>=1000": closed_router["rps"] >= 1000},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_serve":
        _serve(argv[1], int(argv[2]))
        return 0
    if argv and argv[0] == "_load":
        _load(argv[1], int(argv[2]), float(argv[3]), float(argv[4]))
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks.perf_router", description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=200.0, help="open-loop request rate (req/s)")
    p.add_argument("--seconds", type=float, default=10.0, help="duration of each phase")
    p.add_argument("--concurrency", type=int, default=16, help="closed-loop connections")
    p.add_argument("--rounds", type=int, default=2, help="open-loop direct/router alternations")
    p.add_argument("--out", type=Path, default=Path("results/perf_router.json"))
    a = p.parse_args(argv)
    res = run(a.rate, a.seconds, a.concurrency, a.rounds, a.out)
    ol, cl = res["open_loop"], res["closed_loop"]
    print(f"open loop {ol['rate_rps']:.0f} req/s, {ol['requests_each']} requests each side, errors {ol['errors']}")
    for k in ("p50_ms", "p90_ms", "p99_ms"):
        v = ol[k]
        print(f"  {k[:-3]:>4}: direct {v['direct']:7.3f} ms  router {v['router']:7.3f} ms  added {v['added']:7.3f} ms")
    print(f"closed loop x{cl['concurrency']}: router {cl['router_rps']:.0f} req/s (direct {cl['direct_rps']:.0f})")
    print(f"targets: {res['targets']}  (load avg {res['machine']['load_avg_1m']:.2f} on {res['machine']['cpus']} cpus)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
