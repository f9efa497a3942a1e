"""The router over real adapters: the in-process HRM engine and a vLLM double on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai

from router import create_app
from router.config import config_from_dict
from tests.doubles.server import serve
from tests.doubles.vllm_double import create_vllm_app
from tests.router.fakes import serve_app


def test_router_over_hrm_and_vllm(hrm_tiny: Path, llama_tiny: Path, tmp_path: Path) -> None:
    with serve(create_vllm_app(llama_tiny, served_name="llama-tiny")) as vllm_url:
        cfg = config_from_dict({
            "backends": [
                {"name": "hrm", "kind": "hrm", "model": str(hrm_tiny), "device": "cpu"},
                {"name": "vllm", "kind": "vllm", "url": vllm_url, "model": "llama-tiny", "tokenizer": str(llama_tiny)},
            ],
            "router": {"split": {"hrm": 50, "vllm": 50}, "fallback": ["vllm"], "health_interval_s": 30,
                       "shadow": {"backend": "vllm", "log_path": str(tmp_path / "shadow.jsonl")}},
        })
        with serve_app(create_app(cfg)) as url, httpx.Client(base_url=url, timeout=60) as c:
            assert c.get("/readyz").status_code == 200
            arms = set()
            for i in range(12):
                r = c.post("/generate", json={"prompts": ["Hello"], "max_tokens": 4, "temperature": 0},
                           headers={"X-User-Id": f"u{i}"})
                assert r.status_code == 200, r.text
                arms.add(r.headers["x-backend"])
                assert r.json()["usage"]["completion_tokens"] >= 1
            assert arms == {"hrm", "vllm"}
            r = c.post("/loglikelihood", json={"prompts": ["2+2="], "continuations": [" 4"]},
                       headers={"X-Backend": "hrm"})
            assert r.status_code == 200 and r.json()["ll"][0] < 0
            with c.stream("POST", "/generate_stream", json={"prompts": ["Hello"], "max_tokens": 5, "temperature": 0},
                          headers={"X-Backend": "hrm"}) as s:
                body = "".join(s.iter_text())
            done = json.loads(body.strip().split("\n\n")[-1].split("data: ", 1)[1])
            greedy = c.post("/generate", json={"prompts": ["Hello"], "max_tokens": 5, "temperature": 0,
                                               "backend": "hrm"}).json()["completions"][0]
            assert done["text"] == greedy and done["backend"] == "hrm"
            sdk = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
            resp = sdk.completions.create(model="vllm", prompt="Hello", max_tokens=3, temperature=0)
            assert resp.model == "vllm" and resp.usage is not None and resp.usage.completion_tokens >= 1
            assert "vllm" in c.get("/metrics").text
        lines = (tmp_path / "shadow.jsonl").read_text().splitlines()
        assert any(json.loads(x)["primary"] == "hrm" and json.loads(x)["shadow"] == "vllm" for x in lines)
