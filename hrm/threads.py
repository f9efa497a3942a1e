"""Torch intra-op threads for in-process CPU inference.

Both in-process engines run model code off the main thread: the HRM step loop on its own
worker thread, transformers in asyncio's worker threads. torch's OpenMP runtime (libgomp)
keeps one thread team per calling thread, and once the teams together hold more threads than
there are CPUs it stops spinning between parallel regions, so every small op pays a thread
wake-up. On a 2-core machine that made greedy decoding about 3x slower on a worker thread
than on the main thread (`python -m benchmarks.perf_threads`). With one intra-op thread no
team is formed at all, and for small models one thread is also the fastest setting.
"""

from __future__ import annotations

import torch

__all__ = ["configure_threads"]


def configure_threads(threads: int | None, device: str | torch.device) -> int:
    """Set torch's intra-op threads (process-wide): `threads` if given, else 1 on CPU.
    Accelerators keep torch's default unless `threads` is given. Returns the count in effect."""
    if threads is not None or str(device).split(":")[0] == "cpu":
        torch.set_num_threads(threads or 1)
    return torch.get_num_threads()
