"""`create_app(config)`: the router's FastAPI app. No module globals: everything the app
owns hangs off one `RouterState` that the handlers close over."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from backends.base import create_backend
from router.api import ERROR_RESPONSES, v1_routes
from router.errors import ClientError, error_response, install_error_handlers
from router.health import check_once, health_loop, readiness, refresh_gauges
from router.metrics import RouterMetrics
from router.middleware import AdmissionMiddleware, AuthMiddleware, BodyLimitMiddleware, ContextMiddleware
from router.openai_api import openai_routes
from router.reload import install_sighup, reload_now, watch_file
from router.settings import RouterConfig
from router.shadow import ShadowRunner
from router.state import RouterState
from router.table import BackendFactory, TableHolder, build_table

__all__ = ["INFERENCE_PATHS", "create_app"]

INFERENCE_PATHS = frozenset({"/generate", "/generate_stream", "/loglikelihood", "/v1/completions"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1"})
log = logging.getLogger("abtest.router")


def _lifespan(state: RouterState) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings = state.config.router
        table = await build_table(state.config, state.factory)
        state.holder = TableHolder(table, state.factory)
        await check_once(table, state.metrics, min(settings.health_interval_s, 5.0))
        tasks = [asyncio.create_task(health_loop(state))]
        if settings.watch_config and state.config.path is not None:
            tasks.append(asyncio.create_task(watch_file(state)))
        install_sighup(state)
        state.ready = True
        log.info('{"event": "ready", "backends": %s}', sorted(table.handles))
        try:
            yield
        finally:
            state.draining = True
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await state.shadow.drain(settings.drain_timeout_s)
            await state.holder.close(settings.drain_timeout_s)
            log.info('{"event": "stopped"}')

    return lifespan


def create_app(config: RouterConfig, *, backend_factory: BackendFactory | None = None) -> FastAPI:
    settings = config.router
    metrics = RouterMetrics()
    state = RouterState(config=config, factory=backend_factory or create_backend, metrics=metrics,
                        shadow=ShadowRunner(metrics, settings.log_prompts, settings.seed),
                        api_keys=settings.all_api_keys())
    app = FastAPI(title="abtest router", version="1", lifespan=_lifespan(state))
    app.state.router = state
    install_error_handlers(app)
    app.include_router(v1_routes(state))
    app.include_router(openai_routes(state))

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"model": ERROR_RESPONSES[503]["model"]}})
    async def readyz() -> Response:
        ok, detail = readiness(state)
        if ok:
            return JSONResponse({"status": "ready", **detail})
        return error_response(503, "not_ready", f"not ready: {detail.get('reason')}")

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        refresh_gauges(state)
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @app.post("/admin/reload", responses=ERROR_RESPONSES)
    async def admin_reload(request: Request) -> Response:
        # With API keys the auth middleware guards this; without, only local callers may reload.
        client_host = request.client.host if request.client else ""
        if not state.api_keys and client_host not in LOOPBACK_HOSTS:
            return error_response(403, "forbidden", "/admin/reload is loopback-only when no api_keys are set")
        try:
            return JSONResponse({"version": await reload_now(state)})
        except ValueError as exc:  # a bad config file (the current table stays)
            raise ClientError(f"config: {exc}", field="config") from exc

    # Added innermost first: Context is outermost, so its headers cover every response.
    # Limits and keys are read from `state` per request, so a reload changes them.
    app.add_middleware(AdmissionMiddleware, metrics=metrics, paths=INFERENCE_PATHS,
                       limits=lambda: (state.config.router.max_queue, state.config.router.retry_after_s))
    app.add_middleware(BodyLimitMiddleware, max_bytes=lambda: state.config.router.max_body_bytes)
    app.add_middleware(AuthMiddleware, keys=lambda: state.api_keys)
    if settings.enable_cors:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins or ["*"],
                           allow_methods=["GET", "POST", "OPTIONS"], allow_headers=["*"],
                           expose_headers=["X-Request-ID", "X-Backend", "X-Arm", "X-Fallback-From",
                                           "X-Router-Overhead-Ms", "Server-Timing"])
    app.add_middleware(ContextMiddleware, metrics=metrics)
    return app
