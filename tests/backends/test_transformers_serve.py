"""A real OpenAI-compatible server, `transformers serve`, serving the sample `llama-tiny`,
driven through the vllm adapter. It returns no log-probs: the probe must say so."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from backends.base import Backend, create_backend
from backends.errors import BackendRejected
from backends.types import SamplingParams
from tests.doubles.server import free_port

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if shutil.which("transformers") is None:
        return "the `transformers` CLI is not on PATH"
    for mod in ("fastapi", "uvicorn", "accelerate"):
        if importlib.util.find_spec(mod) is None:
            return f"`transformers serve` needs {mod}: pip install 'transformers[serving]==5.23.0'"
    return None


@pytest.fixture(scope="module")
def serve_url(llama_tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path_factory.mktemp("hf-cache")),
               TRANSFORMERS_VERBOSITY="error", OMP_NUM_THREADS="1")
    log = tmp_path_factory.mktemp("serve-log") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [shutil.which("transformers") or "transformers", "serve", str(llama_tiny), "--host", "127.0.0.1",
             "--port", str(port), "--device", "cpu"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not come up in 120 s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
async def backend(serve_url: str, llama_tiny: Path) -> AsyncIterator[Backend]:
    b = create_backend({"name": "tserve", "kind": "vllm", "url": serve_url, "model": str(llama_tiny),
                        "timeouts": {"first_token": 60, "total": 120}})
    await b.start()
    yield b
    await b.close()


async def test_capabilities_are_probed(backend: Backend) -> None:
    info = await backend.info()
    assert info.capabilities.token_logprobs is False
    assert info.capabilities.loglikelihood is False
    assert info.capabilities.streaming is True
    assert await backend.health() is True


async def test_generate_and_stream_against_real_server(backend: Backend, llama_tiny: Path) -> None:
    params = SamplingParams(max_tokens=6, temperature=0.0)
    prompts = ["copy: a b c =", "reverse: x y z ="]
    out = await backend.generate(prompts, params)
    hf = create_backend({"name": "hf", "kind": "hf", "model": str(llama_tiny), "device": "cpu"})
    await hf.start()
    local = await hf.generate(prompts, params)
    await hf.close()
    for c, ref in zip(out, local):
        assert c.text == ref.text
        assert c.prompt_tokens == ref.prompt_tokens and c.completion_tokens and c.completion_tokens <= 6
        assert c.finish_reason in ("stop", "length") and c.token_logprobs is None
    events = [e async for e in backend.stream(prompts[0], params)]
    final = events[-1].final
    assert final is not None and "".join(e.text for e in events) == out[0].text == final.text
    assert final.prompt_tokens == out[0].prompt_tokens and final.ttft_s is not None


async def test_loglikelihood_is_refused_clearly(backend: Backend) -> None:
    with pytest.raises(BackendRejected, match="not supported") as info:
        await backend.loglikelihood(["copy: a ="], [" a"])
    assert info.value.status == 501
