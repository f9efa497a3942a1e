"""The `abtest` kind against the real HRM server (`hrm.server`, uvicorn on loopback, the
trained `hrm-tiny`): same greedy text as the in-process `hrm` kind, log-likelihood parity,
stream == generate, the server's 4xx as BackendRejected naming the field; and error
mapping against a small misbehaving v1 server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from backends.base import Backend, create_backend
from backends.errors import BackendOverloaded, BackendProtocolError, BackendRejected, BackendUnavailable
from backends.types import SamplingParams
from benchmarks.samples.tasks import free_text_prompts, task_examples
from tests.doubles import serve
from tests.doubles.server import free_port

GREEDY = SamplingParams(max_tokens=12, temperature=0.0)
FAST = {"connect": 1.0, "first_token": 5.0, "total": 10.0}


@contextmanager
def _serve_with_lifespan(app: Any) -> Iterator[str]:
    """uvicorn with the app's lifespan on (where the HRM server loads its model and the
    router starts its backends); yields the base url once /readyz answers 200."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, name=f"v1-server-{port}", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"server on port {port} did not become ready")
            time.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def hrm_server(hrm_tiny: Path) -> Iterator[str]:
    """`hrm.server`'s app on loopback, serving the trained `hrm-tiny`."""
    from hrm.server import ServerConfig, create_server_app

    cfg = ServerConfig(model_path=str(hrm_tiny), device="cpu", max_batch_size=32)
    with _serve_with_lifespan(create_server_app(cfg)) as url:
        yield url


@pytest.fixture(scope="module")
def router_server(hrm_server: str) -> Iterator[str]:
    """An abtest router whose one backend is the HRM server, reached by the `abtest` kind."""
    from router import create_app
    from router.config import config_from_dict

    cfg = config_from_dict({"backends": [{"name": "hrm", "kind": "abtest", "url": hrm_server}],
                            "router": {"split": {"hrm": 1.0}}})
    with _serve_with_lifespan(create_app(cfg)) as url:
        yield url


@pytest.fixture
async def pair(hrm_tiny: Path, hrm_server: str, router_server: str) -> AsyncIterator[dict[str, Backend]]:
    specs: list[dict[str, Any]] = [
        {"name": "hrm", "kind": "hrm", "model": str(hrm_tiny), "device": "cpu"},
        {"name": "remote", "kind": "abtest", "url": hrm_server, "timeouts": FAST},
        {"name": "remote-split", "kind": "abtest", "url": hrm_server, "timeouts": FAST, "batch_prompts": False},
        {"name": "via-router", "kind": "abtest", "url": router_server, "timeouts": FAST},
    ]
    built = {s["name"]: create_backend(s) for s in specs}
    for b in built.values():
        await b.start()
    yield built
    for b in built.values():
        await b.close()


def _prompts() -> list[str]:
    return [e.prompt for e in task_examples(6, seed=2)] + free_text_prompts(3, seed=2)


async def test_greedy_generate_equals_in_process_hrm(pair: dict[str, Backend]) -> None:
    prompts = _prompts()
    local = await pair["hrm"].generate(prompts, GREEDY)
    remote = await pair["remote"].generate(prompts, GREEDY)
    split = await pair["remote-split"].generate(prompts, GREEDY)
    assert [(c.text, c.finish_reason) for c in remote] == [(c.text, c.finish_reason) for c in local]
    assert [(c.text, c.finish_reason) for c in split] == [(c.text, c.finish_reason) for c in local]
    assert any(c.text for c in local)
    # Per-prompt usage is exact both batched (the server's `prompt_usage`) and one prompt per request.
    expected = [(c.prompt_tokens, c.completion_tokens) for c in local]
    assert [(c.prompt_tokens, c.completion_tokens) for c in split] == expected
    assert [(c.prompt_tokens, c.completion_tokens) for c in remote] == expected
    assert not any("batch only" in a for c in remote for a in c.approximations)
    one = (await pair["remote"].generate(prompts[:1], GREEDY))[0]
    assert (one.prompt_tokens, one.completion_tokens) == (local[0].prompt_tokens, local[0].completion_tokens)
    assert one.latency_s is not None and one.latency_s > 0


async def test_server_approximations_pass_through(pair: dict[str, Backend]) -> None:
    out = await pair["remote"].generate(["the bird"], SamplingParams(max_tokens=5000, temperature=0.0))
    assert any("max_tokens capped at 1024" in a for a in out[0].approximations), out[0].approximations


async def test_loglikelihood_parity_with_in_process_hrm(pair: dict[str, Backend]) -> None:
    examples = task_examples(6, seed=1)
    prompts = [e.prompt for e in examples] + ["the bird remembers ", "a dog"]
    conts = [" " + e.reference for e in examples] + ["the tree", " carries the ball"]
    local = await pair["hrm"].loglikelihood(prompts, conts)
    remote = await pair["remote"].loglikelihood(prompts, conts)
    assert len(remote) == len(prompts)
    for i, (a, b) in enumerate(zip(local, remote)):
        assert abs(a.ll - b.ll) <= 1e-3, f"pair {i}: {b.ll} vs {a.ll}"
        assert a.is_greedy == b.is_greedy, f"pair {i}"
    assert all(r.ll < 0 for r in remote)


async def test_stream_concatenation_equals_generate(pair: dict[str, Backend]) -> None:
    for prompt in _prompts()[:3]:
        want = (await pair["remote"].generate([prompt], GREEDY))[0]
        events = [e async for e in pair["remote"].stream(prompt, GREEDY)]
        final = events[-1].final
        assert final is not None and all(e.final is None for e in events[:-1])
        assert "".join(e.text for e in events) == want.text == final.text
        assert (final.finish_reason, final.prompt_tokens, final.completion_tokens) == \
            (want.finish_reason, want.prompt_tokens, want.completion_tokens)
        assert final.ttft_s is None or 0 < final.ttft_s <= (final.latency_s or 0)


async def test_server_4xx_is_rejected_naming_the_field(pair: dict[str, Backend]) -> None:
    bad = SamplingParams(max_tokens=4, temperature=5.0)
    with pytest.raises(BackendRejected) as info:
        await pair["remote"].generate(["hello"], bad)
    assert info.value.field == "temperature" and info.value.status == 400
    assert "temperature" in info.value.message
    with pytest.raises(BackendRejected) as info:
        [e async for e in pair["remote"].stream("hello", SamplingParams(max_tokens=4, top_p=0.0))]
    assert info.value.field == "top_p"


async def test_health_and_info(pair: dict[str, Backend]) -> None:
    remote = pair["remote"]
    assert await remote.health()
    info = await remote.info()
    assert info.kind == "abtest" and info.model == "hrm-tiny"
    assert info.capabilities.batch_prompts and info.capabilities.loglikelihood and info.capabilities.streaming
    assert any("v1 contract" in n for n in remote.normalizations(info))  # type: ignore[attr-defined]


async def test_dead_port_is_unavailable_quickly() -> None:
    backend = create_backend({"name": "dead", "kind": "abtest", "url": f"http://127.0.0.1:{free_port()}",
                              "timeouts": FAST, "retries": 1, "retry_backoff_s": 0.01})
    await backend.start()
    t0 = time.monotonic()
    try:
        assert not await backend.health()
        with pytest.raises(BackendUnavailable):
            await backend.generate(["x"], GREEDY)
        with pytest.raises(BackendUnavailable):
            [e async for e in backend.stream("x", GREEDY)]
        with pytest.raises(BackendUnavailable):
            await backend.info()
    finally:
        await backend.close()
    assert time.monotonic() - t0 < 3.0


def _misbehaving_v1(mode: str) -> Starlette:
    """A v1 server that answers badly per `mode`."""

    def error(status: int, type_: str, message: str) -> Response:
        body = {"error": {"type": type_, "message": message, "field": None}}
        return Response(json.dumps(body), status_code=status, media_type="application/json")

    async def generate(request: Request) -> Response:
        if mode == "overloaded":
            return error(429, "overloaded", "queue is full")
        if mode == "not_ready":
            return error(503, "not_ready", "model is loading")
        if mode == "short":
            return Response(json.dumps({"completions": []}), media_type="application/json")
        return Response("{not json", media_type="application/json")

    async def generate_stream(request: Request) -> Response:
        tok = 'event: token\ndata: {"text": "hel"}\n\n'
        if mode == "error_event":  # a router's mid-stream failure
            err = {"error": {"type": "backend_error", "message": "upstream died", "field": None}}
            return Response(tok + f"event: error\ndata: {json.dumps(err)}\n\n", media_type="text/event-stream")
        return Response(tok, media_type="text/event-stream")  # no `done`

    return Starlette(routes=[Route("/generate", generate, methods=["POST"]),
                             Route("/generate_stream", generate_stream, methods=["POST"])])


@pytest.mark.parametrize(("mode", "error", "streaming"), [
    ("overloaded", BackendOverloaded, False),
    ("not_ready", BackendUnavailable, False),
    ("bad_json", BackendProtocolError, False),
    ("short", BackendProtocolError, False),
    ("error_event", BackendUnavailable, True),
    ("no_done", BackendProtocolError, True),
])  # fmt: skip
async def test_bad_answers_are_typed_errors(mode: str, error: type[Exception], streaming: bool) -> None:
    with serve(_misbehaving_v1(mode)) as url:
        backend = create_backend({"name": "bad", "kind": "abtest", "url": url, "timeouts": FAST, "retries": 0})
        await backend.start()
        try:
            with pytest.raises(error) as info:
                if streaming:
                    [e async for e in backend.stream("x", GREEDY)]
                else:
                    await backend.generate(["x"], GREEDY)
            if mode == "error_event":
                assert "upstream died" in str(info.value)
            if mode == "not_ready":
                assert getattr(info.value, "upstream_status", None) == 503
        finally:
            await backend.close()


async def test_through_another_router(pair: dict[str, Backend]) -> None:
    """abtest kind -> router -> abtest kind -> HRM server: same contract, same answers."""
    prompts = _prompts()[:4]
    direct = await pair["hrm"].generate(prompts, GREEDY)
    routed = await pair["via-router"].generate(prompts, GREEDY)
    assert [(c.text, c.finish_reason) for c in routed] == [(c.text, c.finish_reason) for c in direct]
    events = [e async for e in pair["via-router"].stream(prompts[0], GREEDY)]
    assert "".join(e.text for e in events) == direct[0].text
    final = events[-1].final
    assert final is not None and final.completion_tokens == direct[0].completion_tokens
    ll_direct = await pair["hrm"].loglikelihood(["the bird remembers "], ["the tree"])
    ll_routed = await pair["via-router"].loglikelihood(["the bird remembers "], ["the tree"])
    assert abs(ll_direct[0].ll - ll_routed[0].ll) <= 1e-3
    with pytest.raises(BackendRejected) as info:
        await pair["via-router"].generate(["hello"], SamplingParams(max_tokens=4, temperature=5.0))
    assert info.value.field == "temperature"
    assert await pair["via-router"].health()
    assert (await pair["via-router"].info()).kind == "abtest"
