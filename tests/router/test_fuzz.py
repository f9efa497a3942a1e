"""Schemathesis fuzz of the router's OpenAPI schema (valid and invalid inputs): no 5xx."""

from __future__ import annotations

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.openapi import from_dict

from tests.router.conftest import live_router

EXAMPLES_PER_OPERATION = 12  # ~100 cases over the fuzzed operations (x2 modes), a few seconds


def test_fuzz_no_server_errors() -> None:
    with live_router(split={"a": 1, "b": 1}, fallback=["b"]) as lr:
        spec = httpx.get(lr.url + "/openapi.json").json()
        schema = from_dict(spec)
        seen: list[tuple[str, int]] = []
        for result in schema.get_all_operations():
            op = result.ok()
            if op.path == "/admin/reload":
                continue  # no config file in this test: a 400 by design, and not a fuzz target
            for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                strategy = op.as_strategy(generation_mode=mode)

                @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))
                @given(case=strategy)
                def run(case: schemathesis.Case) -> None:
                    resp = case.call(base_url=lr.url, timeout=10)
                    seen.append((case.operation.path, resp.status_code))
                    assert resp.status_code < 500, (case.operation.label, case.body, resp.text)

                try:
                    run()
                except Unsatisfiable:
                    # No invalid input exists for an operation without parameters/body (GET /healthz).
                    assert mode is schemathesis.GenerationMode.NEGATIVE and op.method.upper() == "GET"
        assert len(seen) >= 50
        assert {p for p, _ in seen} >= {"/generate", "/loglikelihood", "/generate_stream", "/v1/completions"}
        assert any(code == 200 for _, code in seen) and any(400 <= code < 500 for _, code in seen)
