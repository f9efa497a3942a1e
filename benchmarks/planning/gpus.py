"""GPU spec table and `--gpus NAME:COUNT` parsing.

Memory is what the device reports to the runtime (roughly `nvidia-smi`'s total), in GiB;
TFLOPs are dense (no sparsity) 16-bit tensor throughput; bandwidth is HBM/GDDR peak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GpuInventory", "GpuSpec", "gpu_specs", "parse_gpus"]


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gib: float
    bf16_tflops: float  # dense; T4 has no bf16, its fp16 figure is given instead
    bandwidth_gbs: float
    bf16: bool = True
    fp8: bool = False
    vendor: str = "nvidia"
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuInventory:
    spec: GpuSpec
    count: int

    def __str__(self) -> str:
        return f"{self.spec.name}:{self.count}"


def gpu_specs() -> dict[str, GpuSpec]:
    """The known GPUs by canonical name (a fresh dict each call)."""
    table = (
        GpuSpec("T4", 15.0, 65.0, 320.0, bf16=False, aliases=("TESLA-T4",)),
        GpuSpec("L4", 22.5, 121.0, 300.0, fp8=True),
        GpuSpec("A10G", 22.5, 70.0, 600.0, aliases=("A10",)),
        GpuSpec("A100-40", 40.0, 312.0, 1555.0, aliases=("A100", "A100-40GB", "A100-SXM4-40GB")),
        GpuSpec("A100-80", 80.0, 312.0, 2039.0, aliases=("A100-80GB", "A100-SXM4-80GB")),
        GpuSpec("H100", 79.6, 989.0, 3350.0, fp8=True, aliases=("H100-80", "H100-80GB", "H100-SXM")),
        GpuSpec("H200", 139.8, 989.0, 4800.0, fp8=True, aliases=("H200-141GB",)),
        GpuSpec("B200", 179.0, 2250.0, 8000.0, fp8=True, aliases=("B200-180GB",)),
        GpuSpec("MI300X", 192.0, 1307.0, 5300.0, fp8=True, vendor="amd"),
    )
    return {spec.name: spec for spec in table}


def _lookup(name: str) -> GpuSpec | None:
    key = name.strip().upper()
    for spec in gpu_specs().values():
        if key == spec.name.upper() or key in spec.aliases:
            return spec
    return None


def parse_gpus(text: str) -> GpuInventory:
    """Parse `H100:4` (count defaults to 1). Raises ValueError naming the valid GPUs."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_-]+)\s*(?::\s*(\d+))?\s*", text)
    if m is None:
        raise ValueError(f"--gpus {text!r}: expected NAME:COUNT, e.g. H100:4")
    spec = _lookup(m.group(1))
    if spec is None:
        valid = ", ".join(gpu_specs())
        raise ValueError(f"--gpus {text!r}: unknown GPU {m.group(1)!r}; known GPUs: {valid}")
    count = int(m.group(2) or 1)
    if count < 1:
        raise ValueError(f"--gpus {text!r}: GPU count must be at least 1")
    return GpuInventory(spec, count)
