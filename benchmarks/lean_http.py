"""A lean HTTP/1.1 keep-alive client on raw asyncio protocols, for high request rates.

httpx costs roughly a millisecond of CPU per request, which on a small machine caps an
open-loop client far below 1,000 req/s and turns CPU time into schedule lag. This client
does only what the benchmark needs: POST/GET with a body, Content-Length or chunked
responses, a bounded connection pool, no pipelining.
"""

from __future__ import annotations

import asyncio
from collections import deque
from urllib.parse import urlsplit

__all__ = ["LeanClient", "LeanHTTPError", "LeanResponse"]


class LeanHTTPError(ConnectionError):
    """Connection failed or closed before a complete response."""


class _StaleConnection(LeanHTTPError):
    """A reused keep-alive connection closed before any response byte: safe to retry once."""


class LeanResponse:
    __slots__ = ("content", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status = status
        self.headers = headers
        self.content = content


class _Conn(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[LeanResponse] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(LeanHTTPError(f"connection closed before a response ({exc})"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is None or self.waiter.done():
            return
        res = self._parse()
        if res is not None:
            self.waiter.set_result(res)

    def _parse(self) -> LeanResponse | None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            pos = start
            while True:
                nl = self.buf.find(b"\r\n", pos)
                if nl < 0:
                    return None
                size = int(bytes(self.buf[pos:nl]).split(b";")[0], 16)
                if len(self.buf) < nl + 2 + size + 2:
                    return None
                body += self.buf[nl + 2 : nl + 2 + size]
                pos = nl + 2 + size + 2
                if size == 0:
                    del self.buf[:pos]
                    return LeanResponse(status, headers, bytes(body))
        length = int(headers.get("content-length", "0"))
        if len(self.buf) < start + length:
            return None
        content = bytes(self.buf[start : start + length])
        del self.buf[: start + length]
        if headers.get("connection", "").lower() == "close" and self.transport is not None:
            self.transport.close()
            self.closed = True
        return LeanResponse(status, headers, content)


class LeanClient:
    def __init__(self, base_url: str, *, max_connections: int = 256, connect_timeout_s: float = 5.0) -> None:
        u = urlsplit(base_url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"lean client supports http:// URLs only, got {base_url!r}")
        self.host, self.port = u.hostname, u.port or 80
        self.prefix = u.path.rstrip("/")
        self.max_connections = max_connections
        self.connect_timeout_s = connect_timeout_s
        self._idle: deque[_Conn] = deque()
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._all: set[_Conn] = set()

    async def _acquire(self) -> tuple[_Conn, bool]:
        """(connection, reused from the idle pool)."""
        while True:
            while self._idle:
                c = self._idle.pop()
                if not c.closed:
                    return c, True
                self._drop(c)
            if self._open < self.max_connections:
                self._open += 1
                try:
                    loop = asyncio.get_running_loop()
                    async with asyncio.timeout(self.connect_timeout_s):
                        _, proto = await loop.create_connection(_Conn, self.host, self.port)
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
                self._all.add(proto)
                return proto, False
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut

    def _wake(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def _drop(self, c: _Conn) -> None:
        if c in self._all:
            self._all.discard(c)
            self._open -= 1

    def _release(self, c: _Conn, reusable: bool) -> None:
        if reusable and not c.closed:
            self._idle.append(c)
        else:
            if c.transport is not None:
                c.transport.close()
            self._drop(c)
        self._wake()

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> LeanResponse:
        """One request. A kept-alive connection that the server closed while idle (no byte of a
        response received) is retried once on a fresh connection, as HTTP clients do."""
        try:
            return await self._request_once(method, path, body, headers, fresh=False)
        except _StaleConnection:
            return await self._request_once(method, path, body, headers, fresh=True)

    async def _request_once(
        self, method: str, path: str, body: bytes, headers: dict[str, str] | None, fresh: bool
    ) -> LeanResponse:
        if fresh:
            for idle in self._idle:
                if idle.transport is not None:
                    idle.transport.close()
        c, reused = await self._acquire()
        ok = False
        try:
            head = [
                f"{method} {self.prefix}{path} HTTP/1.1",
                f"host: {self.host}:{self.port}",
                f"content-length: {len(body)}",
            ]
            head += [f"{k}: {v}" for k, v in (headers or {}).items()]
            c.waiter = asyncio.get_running_loop().create_future()
            assert c.transport is not None
            c.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
            if c.buf:
                res = c._parse()
                if res is not None:
                    c.waiter.set_result(res)
            try:
                resp = await c.waiter
            except LeanHTTPError:
                if reused and not c.buf:
                    raise _StaleConnection from None
                raise
            ok = True
            return resp
        finally:
            c.waiter = None
            self._release(c, ok)

    async def post(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> LeanResponse:
        return await self.request("POST", path, body, headers)

    async def aclose(self) -> None:
        for c in list(self._all):
            if c.transport is not None:
                c.transport.close()
        self._all.clear()
        self._idle.clear()
        self._open = 0
