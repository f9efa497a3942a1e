"""Parameter counts and dtypes from safetensors headers, without reading any weights.

A safetensors file starts with an 8-byte little-endian header length and a JSON header
mapping tensor names to `{"dtype", "shape", "data_offsets"}`. Sharded checkpoints add
`model.safetensors.index.json` (`metadata.total_size` in bytes and a `weight_map`).
"""

from __future__ import annotations

import json
import math
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DTYPE_BYTES", "WeightStats", "read_header", "weight_stats"]

DTYPE_BYTES: dict[str, float] = {
    "F64": 8, "I64": 8, "U64": 8,
    "F32": 4, "I32": 4, "U32": 4,
    "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
    "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1,
    "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75,
}  # fmt: skip
_MAX_HEADER = 100 * 1024 * 1024


@dataclass
class WeightStats:
    """What the checkpoint files say about its weights."""

    num_params: int | None  # None when only an index total is known (shards absent)
    total_bytes: int
    dtype_params: dict[str, int] = field(default_factory=dict)  # safetensors dtype -> element count
    source: str = "safetensors-header"
    files: int = 0

    @property
    def main_dtype(self) -> str | None:
        return max(self.dtype_params, key=self.dtype_params.__getitem__) if self.dtype_params else None


def read_header(path: Path) -> dict[str, dict[str, object]]:
    """The JSON header of one .safetensors file (tensor name -> info), `__metadata__` dropped."""
    with path.open("rb") as fh:
        raw_len = fh.read(8)
        if len(raw_len) != 8:
            raise ValueError(f"{path}: too short to be a safetensors file")
        (n,) = struct.unpack("<Q", raw_len)
        if n <= 0 or n > _MAX_HEADER:
            raise ValueError(f"{path}: implausible safetensors header length {n}")
        data = fh.read(n)
    try:
        header = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: safetensors header is not valid JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise ValueError(f"{path}: safetensors header is not a JSON object")  # noqa: TRY004
    header.pop("__metadata__", None)
    return header


def _accumulate(header: dict[str, dict[str, object]], counts: Counter[str], path: Path) -> int:
    nbytes = 0
    for name, info in header.items():
        dtype = str(info.get("dtype", ""))
        shape = info.get("shape", [])
        if dtype not in DTYPE_BYTES or not isinstance(shape, list):
            raise ValueError(f"{path}: tensor {name!r} has unknown dtype {dtype!r} or bad shape")
        n = math.prod(int(d) for d in shape)
        counts[dtype] += n
        nbytes += math.ceil(n * DTYPE_BYTES[dtype])
    return nbytes


def weight_stats(model_dir: Path) -> WeightStats | None:
    """Stats for the safetensors weights in `model_dir`, or None if it has none."""
    index = model_dir / "model.safetensors.index.json"
    files = sorted(model_dir.glob("*.safetensors"))
    if index.is_file():
        meta = json.loads(index.read_text())
        shard_names = sorted(set(meta.get("weight_map", {}).values()))
        shards = [model_dir / s for s in shard_names]
        if shards and all(s.is_file() for s in shards):
            files = shards
        else:
            total = meta.get("metadata", {}).get("total_size")
            if not isinstance(total, int | float):
                raise ValueError(f"{index}: shards missing and no metadata.total_size")
            return WeightStats(None, int(total), source="index-total-size", files=0)
    if not files:
        return None
    counts: Counter[str] = Counter()
    total_bytes = sum(_accumulate(read_header(f), counts, f) for f in files)
    return WeightStats(sum(counts.values()), total_bytes, dict(counts), files=len(files))
