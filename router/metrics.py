"""Prometheus metrics on a per-app CollectorRegistry (no global registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from router.context import RequestContext

__all__ = ["RouterMetrics"]

_LAT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1)
_KNOWN_PATHS = frozenset({"/generate", "/generate_stream", "/loglikelihood", "/v1/completions", "/v1/models",
                          "/healthz", "/readyz", "/metrics"})


class RouterMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("abtest_router_requests", "Requests by endpoint, backend, arm and status",
                                ["endpoint", "backend", "arm", "status"], registry=r)
        self.latency = Histogram("abtest_router_request_seconds", "Total request latency (to last byte)",
                                 ["endpoint"], buckets=_LAT_BUCKETS, registry=r)
        self.backend_latency = Histogram("abtest_router_backend_seconds", "Backend call latency (to first byte)",
                                         ["backend"], buckets=_LAT_BUCKETS, registry=r)
        self.overhead = Histogram("abtest_router_overhead_seconds", "Router time before the response starts, "
                                  "excluding backend time", buckets=_OVERHEAD_BUCKETS, registry=r)
        self.tokens = Counter("abtest_router_tokens", "Tokens in/out by backend", ["backend", "direction"],
                              registry=r)
        self.shadow = Counter("abtest_router_shadow", "Shadow comparisons by outcome",
                              ["backend", "outcome"], registry=r)
        self.fallbacks = Counter("abtest_router_fallbacks", "Requests served by a fallback backend",
                                 ["from_backend", "to_backend"], registry=r)
        self.queue_depth = Gauge("abtest_router_queue_depth", "Requests waiting for a backend slot", registry=r)
        self.active = Gauge("abtest_router_active_requests", "Requests inside the router", registry=r)
        self.rejected = Counter("abtest_router_rejected", "Requests rejected with 429 at the queue bound",
                                registry=r)
        self.healthy = Gauge("abtest_router_backend_healthy", "1 if the backend passed its last health check",
                             ["backend"], registry=r)
        self.breaker_open = Gauge("abtest_router_breaker_open", "1 while the backend's circuit is open",
                                  ["backend"], registry=r)
        self.inflight = Gauge("abtest_router_backend_inflight", "Requests in flight per backend", ["backend"],
                              registry=r)

    def observe_request(self, ctx: RequestContext, total_s: float) -> None:
        endpoint = ctx.path if ctx.path in _KNOWN_PATHS else "other"
        self.requests.labels(endpoint, ctx.backend or "none", ctx.arm or "none", str(ctx.status)).inc()
        self.latency.labels(endpoint).observe(total_s)
        if ctx.backend is not None and ctx.t_response_start is not None:
            self.overhead.observe(ctx.overhead_s())
            if ctx.backend_s > 0:
                self.backend_latency.labels(ctx.backend).observe(ctx.backend_s)
        if ctx.backend is not None and (ctx.tokens_in or ctx.tokens_out):
            self.tokens.labels(ctx.backend, "in").inc(ctx.tokens_in)
            self.tokens.labels(ctx.backend, "out").inc(ctx.tokens_out)

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))
