"""Benchmark targets: a backend (through `backends.base.create_backend`) or the router over HTTP.

Each target performs one request and fills a RequestRecord with raw timestamps;
it never computes metrics. Errors are classified, never raised.
"""

from benchmarks.targets.backend import BackendTarget
from benchmarks.targets.base import Target, classify_error, finish_record
from benchmarks.targets.router import RouterTarget

__all__ = ["BackendTarget", "RouterTarget", "Target", "classify_error", "finish_record"]
