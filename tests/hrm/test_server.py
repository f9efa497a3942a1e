"""The standalone HRM server (hrm/server.py) on loopback over the tiny sample model."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hrm.server import ServerConfig, create_server_app, run
from tests.router.fakes import serve_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(hrm_tiny: Path) -> Iterator[httpx.Client]:
    from hrm.engine import HrmEngine

    engine = HrmEngine.from_pretrained(hrm_tiny, device="cpu", max_batch_size=8, max_tokens_cap=32)
    app = create_server_app(ServerConfig(model_path=str(hrm_tiny), max_new_tokens=32), engine=engine)
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        deadline = time.monotonic() + 30
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        yield client


def test_generate_two_prompts(server: httpx.Client) -> None:
    r = server.post("/generate", json={"prompts": ["Hello", "Once upon a time"], "max_tokens": 8,
                                       "temperature": 0.7, "top_p": 0.9, "seed": 1},
                    headers={"X-Request-ID": "abc"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["completions"]) == 2 and all(isinstance(c, str) for c in body["completions"])
    u = body["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and 0 < u["completion_tokens"] <= 16
    assert r.headers["x-request-id"] == "abc" and body["request_id"] == "abc"
    again = server.post("/generate", json={"prompts": ["Hello", "Once upon a time"], "max_tokens": 8,
                                           "temperature": 0.7, "top_p": 0.9, "seed": 1})
    assert again.json()["completions"] == body["completions"]  # same seed, same output


def test_max_tokens_capped(server: httpx.Client) -> None:
    r = server.post("/generate", json={"prompts": ["x"], "max_tokens": 5000, "temperature": 0})
    assert r.status_code == 200
    assert r.json()["usage"]["completion_tokens"] <= 32
    assert any("capped at 32" in a for a in r.json()["approximations"])


def test_loglikelihood(server: httpx.Client) -> None:
    r = server.post("/loglikelihood", json={"prompts": ["Hello", "2+2="], "continuations": [" world", " 4"]})
    assert r.status_code == 200, r.text
    ll = r.json()["ll"]
    assert len(ll) == 2 and all(x < 0 for x in ll)


def test_stream(server: httpx.Client) -> None:
    with server.stream("POST", "/generate_stream", json={"prompts": ["Hello"], "max_tokens": 6,
                                                         "temperature": 0}) as r:
        assert r.status_code == 200
        text = "".join(r.iter_text())
    blocks = [b for b in text.strip().split("\n\n") if b]
    assert blocks[-1].startswith("event: done")
    done = json.loads(blocks[-1].split("data: ", 1)[1])
    tokens = "".join(json.loads(b.split("data: ", 1)[1])["text"] for b in blocks[:-1])
    assert tokens == done["text"] and done["usage"]["completion_tokens"] >= 1
    greedy = server.post("/generate", json={"prompts": ["Hello"], "max_tokens": 6, "temperature": 0})
    assert greedy.json()["completions"] == [done["text"]]


@pytest.mark.parametrize(("body", "field"), [
    ({"prompts": []}, "prompts"), ({"prompts": [""]}, "prompts"), ({"prompts": ["x"], "temperature": 9}, "temperature"),
    ({"prompts": ["x"], "top_p": 0}, "top_p"),
])
def test_bad_inputs(server: httpx.Client, body: dict, field: str) -> None:
    r = server.post("/generate", json=body)
    assert r.status_code == 400 and r.json()["error"]["field"] == field
    r = server.post("/loglikelihood", json={"prompts": ["a", "b"], "continuations": ["c"]})
    assert r.status_code == 400
    r = server.post("/generate", content=b"{bad", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"


def test_health_ready_metrics(server: httpx.Client) -> None:
    assert server.get("/healthz").json() == {"status": "ok"}
    assert server.get("/readyz").json()["status"] == "ready"
    assert "hrm_requests_total" in server.get("/metrics").text


def test_env_and_cli_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIOS_MODEL_PATH", "/env/model")
    monkeypatch.setenv("AIOS_MAX_BATCH_SIZE", "4")
    monkeypatch.setenv("AIOS_DEVICE", "cpu")
    monkeypatch.setenv("AIOS_TOKENIZER_PATH", "/env/tok")
    cfg = ServerConfig.from_env(max_batch_size=8, port=None)
    assert (cfg.model_path, cfg.max_batch_size, cfg.device, cfg.port) == ("/env/model", 8, "cpu", 8000)
    assert cfg.tokenizer_path == "/env/tok"
    assert ServerConfig.from_env(tokenizer_path="/cli/tok").tokenizer_path == "/cli/tok"


def test_module_print_config_and_dry_run(hrm_tiny: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "hrm.server", "--model-path", str(hrm_tiny), "--print-config"],
                         cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and json.loads(out.stdout)["model_path"] == str(hrm_tiny)
    out = subprocess.run([sys.executable, "-m", "hrm.server", "--model-path", str(hrm_tiny), "--dry-run",
                          "--device", "cpu", "--tokenizer-path", str(hrm_tiny)],
                         cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["model"] == hrm_tiny.name


def test_queue_full_is_429_with_retry_after(hrm_tiny: Path) -> None:
    import asyncio

    from hrm.engine import HrmEngine

    engine = HrmEngine.from_pretrained(hrm_tiny, device="cpu", max_batch_size=1, max_tokens_cap=64)
    app = create_server_app(ServerConfig(model_path=str(hrm_tiny), max_new_tokens=64, max_queue=1), engine=engine)
    with serve_app(app) as url:
        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(base_url=url, timeout=60) as c:
                while (await c.get("/readyz")).status_code != 200:
                    await asyncio.sleep(0.05)
                body = {"prompts": ["Once upon a time"], "max_tokens": 64, "temperature": 0.0}
                return list(await asyncio.gather(*(c.post("/generate", json=body) for _ in range(8))))

        responses = asyncio.run(burst())
    codes = [r.status_code for r in responses]
    assert 200 in codes and 429 in codes and set(codes) <= {200, 429}, codes
    rejected = next(r for r in responses if r.status_code == 429)
    assert int(rejected.headers["retry-after"]) >= 1 and rejected.json()["error"]["type"] == "overloaded"


def test_bearer_keys_and_body_limit(hrm_tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hrm.engine import HrmEngine

    keys = tmp_path / "keys"
    keys.write_text("# comment\nfile-key\n")
    monkeypatch.setenv("AIOS_API_KEY", "env-key")
    engine = HrmEngine.from_pretrained(hrm_tiny, device="cpu", max_batch_size=2, max_tokens_cap=4)
    cfg = ServerConfig(model_path=str(hrm_tiny), api_key_file=str(keys), max_body_bytes=2048)
    shown = json.dumps(dataclasses.asdict(cfg))  # what --print-config prints
    assert "env-key" not in shown and "file-key" not in shown
    body = {"prompts": ["copy: ab ="], "max_tokens": 2, "temperature": 0}
    with serve_app(create_server_app(cfg, engine=engine)) as url, httpx.Client(base_url=url, timeout=60) as c:
        deadline = time.monotonic() + 30
        while c.get("/readyz").status_code != 200 and time.monotonic() < deadline:  # probes need no key
            time.sleep(0.05)
        assert c.get("/healthz").status_code == 200
        r = c.post("/generate", json=body)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"]["field"] == "Authorization"
        assert c.post("/generate", json=body, headers={"Authorization": "Bearer nope"}).status_code == 403
        for key in ("file-key", "env-key"):
            r = c.post("/generate", json=body, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
        big = {**body, "prompts": ["x" * 4096]}
        r = c.post("/generate", json=big, headers={"Authorization": "Bearer env-key"})
        assert r.status_code == 413 and r.json()["error"]["field"] == "body"


def test_unreadable_api_key_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(ServerConfig(model_path="m", api_key_file="/nonexistent/keys")) == 2
    assert "--api-key-file /nonexistent/keys" in capsys.readouterr().err
