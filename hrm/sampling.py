"""Pure tensor sampling functions (CPU-testable, batch-invariant).

Randomness is counter-based: a row's uniform at generation step `t` is
`splitmix64(splitmix64(seed) ^ t)`, computed for all rows in a few vectorised int64 ops.
This plays the role of a per-row `torch.Generator` seeded from the request `seed`: a
row's draws depend only on its seed and step, never on its batch mates, the batch
order, or when it joined a continuous batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["sample_tokens", "splitmix64", "token_logprobs", "uniforms"]

_GOLDEN = 0x9E3779B97F4A7C15
_MUL1 = 0xBF58476D1CE4E5B9
_MUL2 = 0x94D049BB133111EB


def _i64(c: int) -> int:
    """Reinterpret an unsigned 64-bit constant as signed int64 (torch has no uint64 math)."""
    return c - (1 << 64) if c >= (1 << 63) else c


def _shr(x: Tensor, s: int) -> Tensor:
    """Logical right shift on int64."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def splitmix64(x: Tensor) -> Tensor:
    """SplitMix64 finaliser on int64 tensors (wrapping arithmetic)."""
    z = x + _i64(_GOLDEN)
    z = (z ^ _shr(z, 30)) * _i64(_MUL1)
    z = (z ^ _shr(z, 27)) * _i64(_MUL2)
    return z ^ _shr(z, 31)


def uniforms(seeds: Tensor, steps: Tensor) -> Tensor:
    """(B,) float32 uniforms in [0, 1) from int64 seeds and step counters."""
    z = splitmix64(splitmix64(seeds) ^ steps)
    return _shr(z, 40).to(torch.float32) * (1.0 / (1 << 24))


def sample_tokens(
    logits: Tensor,  # (B, V) fp32 raw logits
    temperature: Tensor,  # (B,) fp32; 0 = greedy
    top_p: Tensor,  # (B,) fp32 in (0, 1]
    u: Tensor,  # (B,) uniforms in [0, 1)
    all_greedy: bool = False,
    any_top_p: bool = True,
) -> Tensor:
    """Next tokens (B,) int64: argmax where temperature is 0, else inverse-CDF sampling from
    softmax(logits / T) restricted to the top-p nucleus."""
    greedy = logits.argmax(dim=-1)
    if all_greedy:
        return greedy
    temp = torch.where(temperature > 0, temperature, torch.ones_like(temperature))
    probs = torch.softmax(logits / temp[:, None], dim=-1)
    if any_top_p:
        probs, order = probs.sort(dim=-1, descending=True)
        cum = probs.cumsum(dim=-1)
        probs = probs * ((cum - probs) < top_p[:, None])  # smallest prefix with mass >= top_p
    cum = probs.cumsum(dim=-1)
    target = (u * cum[:, -1])[:, None]
    idx = torch.searchsorted(cum, target, right=True).clamp_(max=logits.shape[-1] - 1)
    if any_top_p:
        idx = order.gather(1, idx)
    return torch.where(temperature > 0, idx[:, 0], greedy)


def token_logprobs(logits: Tensor, tokens: Tensor) -> Tensor:
    """log-softmax of the raw logits (before temperature) at `tokens`: (B, V), (B,) -> (B,)."""
    return F.log_softmax(logits, dim=-1).gather(1, tokens[:, None])[:, 0]
