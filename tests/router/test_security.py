"""Bearer API keys (401/403), open health endpoints, CORS off by default."""

from __future__ import annotations

from pathlib import Path

from tests.router.test_api import assert_routing_headers


def test_api_keys(router_factory, tmp_path: Path) -> None:
    keyfile = tmp_path / "keys.txt"
    keyfile.write_text("# comment\nfile-key\n")
    with router_factory(split={"a": 1}, api_keys=["k1"], api_keys_file=str(keyfile)) as lr:
        r = lr.client.post("/generate", json={"prompts": ["p"]})
        assert r.status_code == 401 and r.json()["error"]["field"] == "Authorization"
        assert r.headers["www-authenticate"] == "Bearer"
        assert_routing_headers(r)
        r = lr.client.post("/generate", json={"prompts": ["p"]}, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 403
        assert_routing_headers(r)
        for key in ("k1", "file-key"):
            r = lr.client.post("/generate", json={"prompts": ["p"]}, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200
        assert lr.client.get("/healthz").status_code == 200
        assert lr.client.get("/readyz").status_code == 200
        assert lr.client.get("/metrics").status_code == 401


def test_api_keys_from_env(router_factory, monkeypatch) -> None:
    monkeypatch.setenv("ABTEST_API_KEYS", '["env-key"]')
    with router_factory(split={"a": 1}) as lr:
        assert lr.client.post("/generate", json={"prompts": ["p"]}).status_code == 401
        r = lr.client.post("/generate", json={"prompts": ["p"]}, headers={"Authorization": "Bearer env-key"})
        assert r.status_code == 200


def test_cors_off_by_default_and_on_when_enabled(router_factory) -> None:
    pre = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    with router_factory(split={"a": 1}) as lr:
        r = lr.client.options("/generate", headers=pre)
        assert "access-control-allow-origin" not in r.headers
    with router_factory(split={"a": 1}, enable_cors=True, cors_origins=["http://app.example"]) as lr:
        r = lr.client.options("/generate", headers=pre)
        assert r.headers["access-control-allow-origin"] == "http://app.example"
        r = lr.client.post("/generate", json={"prompts": ["p"]}, headers={"Origin": "http://app.example"})
        assert "X-Backend" in r.headers["access-control-expose-headers"]
