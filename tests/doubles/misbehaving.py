"""A tiny loopback server that answers badly, for transport error tests.

GET /health, /info and /v1/models answer correctly (so adapters can start); POST
/v1/completions, /generate and /generate_stream misbehave per `mode`. A vLLM
capability probe (body with `echo`) gets a 400, i.e. "no log-probs".
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.doubles.server import serve

__all__ = ["MISBEHAVIOURS", "misbehaving_app", "start_misbehaving"]

MISBEHAVIOURS = ("bad_json", "missing_field", "cut_stream", "no_final", "slow_first_byte", "status_500",
                 "status_429")

_INFO = {"model_id": "bad", "max_concurrent_requests": 1, "max_best_of": 1, "max_stop_sequences": 4,
         "max_input_tokens": 100, "max_total_tokens": 200, "validation_workers": 1, "max_client_batch_size": 1,
         "router": "bad", "version": "0"}
_MODELS = {"object": "list", "data": [{"id": "bad", "object": "model"}]}
_VLLM_EVENT = {"choices": [{"index": 0, "text": "hel", "finish_reason": None}]}
_TGI_EVENT = {"index": 0, "token": {"id": 5, "text": "hel", "logprob": -1.0, "special": False},
              "generated_text": None, "details": None}


async def _send_json(send: Any, status: int, payload: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def misbehaving_app(mode: str, delay_s: float = 5.0) -> Any:
    if mode not in MISBEHAVIOURS:
        raise ValueError(f"unknown mode {mode!r}; valid: {MISBEHAVIOURS}")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        if method == "GET":
            doc = {"/info": _INFO, "/v1/models": _MODELS}.get(path, {})
            return await _send_json(send, 200, json.dumps(doc).encode())
        request = json.loads(body or b"{}")
        if "echo" in request:
            return await _send_json(send, 400, b'{"error": {"message": "echo is not supported"}}')
        streaming = path == "/generate_stream" or request.get("stream")
        event = _TGI_EVENT if path.startswith("/generate") else _VLLM_EVENT
        if mode == "slow_first_byte":
            await asyncio.sleep(delay_s)
            return await _send_json(send, 200, b"{}")
        if mode == "status_500":
            return await _send_json(send, 500, b'{"error": "CUDA out of memory", "error_type": "generation"}')
        if mode == "status_429":
            return await _send_json(send, 429, b'{"error": "Model is overloaded", "error_type": "overloaded"}')
        if mode == "bad_json":
            return await _send_json(send, 200, b'{"choices": [ {"text": "unterminated')
        if mode == "missing_field" and not streaming:
            return await _send_json(send, 200, b'{"id": "x", "choices": [{"index": 0}], "details": {}}')
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": f"data: {json.dumps(event)}\n\n".encode(),
                    "more_body": True})
        if mode == "cut_stream":
            raise RuntimeError("connection dropped mid-stream (deliberately)")
        await send({"type": "http.response.body", "body": b""})  # ends cleanly, but with no final event

    return app


@contextmanager
def start_misbehaving(mode: str, delay_s: float = 5.0) -> Iterator[str]:
    """Serve a misbehaving backend on loopback; yields its base url."""
    with serve(misbehaving_app(mode, delay_s)) as url:
        yield url
