"""Bad backends give clear typed errors, never a hang: malformed JSON, a missing field,
a stream cut mid-way, a slow first byte, 5xx, 429, a dead port; plus bearer auth."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from backends.base import create_backend
from backends.errors import (
    BackendOverloaded,
    BackendProtocolError,
    BackendRejected,
    BackendTimeout,
    BackendUnavailable,
)
from backends.types import SamplingParams
from tests.doubles import serve, start_misbehaving
from tests.doubles.server import free_port

GREEDY = SamplingParams(max_tokens=4, temperature=0.0)
FAST = {"connect": 1.0, "first_token": 0.5, "total": 1.0}


async def _started(kind: str, url: str, **extra: Any) -> Any:
    backend = create_backend({"name": f"bad-{kind}", "kind": kind, "url": url, "timeouts": FAST,
                              "retries": 1, "retry_backoff_s": 0.01, **extra})
    await backend.start()
    return backend


async def _drain(events: AsyncIterator[Any]) -> list[Any]:
    return [e async for e in events]


@pytest.mark.parametrize("kind", ["vllm", "tgi"])
@pytest.mark.parametrize(
    ("mode", "error", "streaming"),
    [
        ("bad_json", BackendProtocolError, False),
        ("missing_field", BackendProtocolError, False),
        ("cut_stream", BackendProtocolError, True),
        ("no_final", BackendProtocolError, True),
        ("slow_first_byte", BackendTimeout, False),
        ("slow_first_byte", BackendTimeout, True),
        ("status_500", BackendUnavailable, False),
        ("status_429", BackendOverloaded, False),
    ],
)
async def test_misbehaving_backend_gives_typed_error(kind: str, mode: str, error: type, streaming: bool) -> None:
    with start_misbehaving(mode, delay_s=3.0) as url:
        backend = await _started(kind, url)
        t0 = time.monotonic()
        try:
            with pytest.raises(error) as info:
                if streaming:
                    await asyncio.wait_for(_drain(backend.stream("hi", GREEDY)), 10)
                else:
                    await asyncio.wait_for(backend.generate(["hi"], GREEDY), 10)
        finally:
            await backend.close()
        assert time.monotonic() - t0 < 2.5, "error must come from our timeouts, not the server finishing"
        assert info.value.backend == f"bad-{kind}"
        assert str(info.value)  # a readable message


async def test_cut_stream_message_says_so() -> None:
    with start_misbehaving("no_final") as url:
        backend = await _started("tgi", url)
        with pytest.raises(BackendProtocolError, match="cut mid-way"):
            await _drain(backend.stream("hi", GREEDY))
        await backend.close()


@pytest.mark.parametrize("kind", ["vllm", "tgi"])
async def test_dead_port_is_unavailable_after_retries(kind: str) -> None:
    backend = create_backend({"name": "dead", "kind": kind, "url": f"http://127.0.0.1:{free_port()}",
                              "timeouts": FAST, "retries": 2, "retry_backoff_s": 0.01})
    await backend.start()
    assert await backend.health() is False
    with pytest.raises(BackendUnavailable, match="cannot connect"):
        await backend.generate(["hi"], GREEDY)
    await backend.close()


async def test_not_started_is_a_clear_error() -> None:
    backend = create_backend({"name": "idle", "kind": "tgi", "url": "http://127.0.0.1:1"})
    with pytest.raises(BackendUnavailable, match="not started"):
        await backend.generate(["hi"], GREEDY)


def _auth_app(seen: list[str | None]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        seen.append(headers.get(b"authorization", b"").decode() or None)
        status = 200 if headers.get(b"authorization") == b"Bearer s3cret" else 401
        payload = b'{"error": "bad token", "error_type": "auth"}' if status == 401 else b"{}"
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})

    return app


async def test_bearer_token_from_env_is_sent_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABTEST_TEST_TOKEN", "s3cret")
    seen: list[str | None] = []
    with serve(_auth_app(seen)) as url:
        backend = create_backend({"name": "auth", "kind": "tgi", "url": url, "api_key_env": "ABTEST_TEST_TOKEN"})
        await backend.start()
        assert await backend.health() is True
        assert seen[-1] == "Bearer s3cret"
        assert "s3cret" not in repr(backend) and "s3cret" not in repr(backend.settings)
        await backend.close()


async def test_bearer_token_from_file_and_rejection_carries_message(tmp_path: Any) -> None:
    (tmp_path / "tok").write_text("wrong\n")
    seen: list[str | None] = []
    with serve(_auth_app(seen)) as url:
        backend = create_backend({"name": "auth", "kind": "tgi", "url": url, "api_key_file": str(tmp_path / "tok")})
        await backend.start()
        with pytest.raises(BackendRejected, match="bad token") as info:
            await backend.generate(["hi"], GREEDY)
        assert info.value.status == 401 and seen[-1] == "Bearer wrong"
        await backend.close()


async def test_missing_api_key_env_names_the_field() -> None:
    backend = create_backend({"name": "x", "kind": "vllm", "url": "http://127.0.0.1:1", "api_key_env": "NOPE_X"})
    with pytest.raises(ValueError, match="api_key_env 'NOPE_X'"):
        await backend.start()
