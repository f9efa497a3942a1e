"""The one fixed request list of a run, hashed (sha256 of canonical JSON) into the manifest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from benchmarks.records import Params, RequestItem
from benchmarks.requests.files import RawPrompt

__all__ = ["RequestList", "build_request_list", "canonical_sha256"]


def canonical_sha256(obj: Any) -> str:
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RequestList:
    items: tuple[RequestItem, ...]  # generation items (measured)
    warmup: tuple[RequestItem, ...]  # sent first to every target, not measured
    scoring: tuple[RequestItem, ...]  # log-likelihood (multiple-choice) items

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [i.to_dict() for i in self.items],
            "warmup": [i.to_dict() for i in self.warmup],
            "scoring": [i.to_dict() for i in self.scoring],
        }

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.to_dict())


def build_request_list(raws: list[RawPrompt], params: Params, *, seed: int, warmup: int = 0) -> RequestList:
    """Fix ids and per-request params once. Request seeds derive from the run seed."""
    gen = [r for r in raws if not r.choices]
    mc = [r for r in raws if r.choices]
    items = tuple(
        RequestItem(
            id=r.id or f"p{i:05d}",
            prompt=r.prompt,
            params=Params(params.max_tokens, params.temperature, params.top_p, seed + i, params.stop),
            task=r.task,
            reference=r.reference,
        )
        for i, r in enumerate(gen)
    )
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise ValueError(f"duplicate prompt id {dup!r}")
    warm = tuple(
        RequestItem(
            id=f"warmup-{k}", prompt=items[k % len(items)].prompt, params=items[k % len(items)].params
        )
        for k in range(warmup if items else 0)
    )
    scoring = tuple(
        RequestItem(
            id=r.id or f"mc{i:05d}",
            prompt=r.prompt,
            params=params,
            task=r.task,
            reference=r.reference,
            choices=r.choices,
            answer=r.answer,
        )
        for i, r in enumerate(mc)
    )
    return RequestList(items, warm, scoring)
