"""Strict test doubles, run as real HTTP servers on loopback (reused by router and benchmark tests).

- `start_vllm_double(model_dir, served_name=None, echo_drops_bos=False)`: context manager -> base url of a vLLM
  OpenAI-compatible `/v1/completions` server (echo/logprobs, SSE, `[DONE]`).
- `start_tgi_double(model_dir, max_stop_sequences=4)`: context manager -> base url of a TGI
  server validating every body against `/work/shared/specs/tgi-openapi.json`.
- `start_misbehaving(mode)`: context manager -> base url of a server that answers badly
  (modes in `MISBEHAVIOURS`).
- `serve(app)` / `start_server(app) -> (url, stop)`: any ASGI app on a free loopback port.
- `build_tiny_models(root)`: random-init hrm-tiny/llama-tiny (seconds), for fast tests.
Heavy imports happen on use, not on import of this package.
"""

from tests.doubles.misbehaving import MISBEHAVIOURS, start_misbehaving
from tests.doubles.server import serve, start_server
from tests.doubles.tgi_double import create_tgi_app, start_tgi_double
from tests.doubles.tiny_models import build_tiny_models
from tests.doubles.vllm_double import create_vllm_app, start_vllm_double

__all__ = [
    "MISBEHAVIOURS",
    "build_tiny_models",
    "create_tgi_app",
    "create_vllm_app",
    "serve",
    "start_misbehaving",
    "start_server",
    "start_tgi_double",
    "start_vllm_double",
]
