"""The harness self-benchmark (short): a null server in a separate process, 1,000 req/s.

The <= 2 ms lag p99 target is measured with `python -m benchmarks.perf_harness` on a quiet
machine; on a shared CI box this test only checks the rate is sustained without errors
and the lag stays under the run-validity threshold.
"""

from __future__ import annotations

import asyncio

from benchmarks.lean_http import LeanClient
from benchmarks.perf_harness import NullServer, run_harness


def test_null_server_and_lean_client_keep_alive() -> None:
    async def go(url: str) -> list[tuple[int, str | None, bytes]]:
        c = LeanClient(url, max_connections=2)
        try:
            rs = await asyncio.gather(*(c.post("/generate", b'{"prompts":["x"]}') for _ in range(20)))
        finally:
            await c.aclose()
        return [(r.status, r.headers.get("x-backend"), r.content[:16]) for r in rs]

    with NullServer() as srv:
        out = asyncio.run(go(srv.url))
    assert len(out) == 20 and all(
        s == 200 and b == "null" and c.startswith(b'{"completions"') for s, b, c in out
    )


def test_harness_sustains_1000_rps() -> None:
    with NullServer() as srv:
        res = run_harness(srv.url, rate=1000.0, duration_s=2.0, seed=1)
    assert res["errors"] == 0 and res["requests"] == 2000
    assert res["achieved_send_rate"] >= 900
    assert res["lag_p99_ms"] < 50.0, res  # loose: shared CI boxes; the 2 ms target is measured by the CLI


def test_lean_client_retries_a_keepalive_connection_the_server_closed() -> None:
    """Each server connection answers one request, then closes on the next without answering
    (a keep-alive timeout racing a new request): the client must retry on a fresh connection."""

    async def go() -> tuple[list[int], int]:
        conns = 0

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal conns
            conns += 1
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        c = LeanClient(f"http://127.0.0.1:{port}", max_connections=1)
        try:
            out = [(await c.post("/x", b"")).status for _ in range(3)]
        finally:
            await c.aclose()
            server.close()
        return out, conns

    statuses, conns = asyncio.run(go())
    assert statuses == [200, 200, 200] and conns == 3
