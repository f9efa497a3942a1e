"""The fused k/v cache (one `index_put_` per write) and the decode attention path."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hrm.config import HrmConfig
from hrm.forward import decode_attention
from hrm.model import AttnContext, HrmKVCache


def _cache(rows: int = 4, seq: int = 8) -> HrmKVCache:
    cfg = HrmConfig(
        vocab_size=8, hidden_size=16, intermediate_size=32, num_attention_heads=2, num_layers_per_stack=1
    )
    return HrmKVCache(cfg, rows, seq, torch.float32, torch.device("cpu"))


def _write(cache: HrmKVCache, rows: list[int], pos: list[int]) -> torch.Tensor:
    """Write random k/v for one token per row; return them (B, 2, H, D)."""
    kv = torch.randn(len(rows), 2, 2, 8)
    ctx = AttnContext(
        batch=len(rows), tokens=1, cos=torch.ones(1), sin=torch.zeros(1), mask=None, is_causal=False
    )
    ctx.kv_index = cache.index(torch.tensor(rows)[:, None], torch.tensor(pos)[:, None])
    ctx.kv_len = cache.seq
    cache.slots[0].update(ctx, kv)
    return kv


def test_index_writes_each_row_at_its_position():
    cache = _cache()
    kv = _write(cache, [0, 1, 2], [5, 0, 7])
    slot = cache.slots[0].kv  # (2, rows, H, seq, D)
    for b, (r, p) in enumerate([(0, 5), (1, 0), (2, 7)]):
        assert torch.equal(slot[:, r, :, p], kv[b])
    assert slot.abs().sum() == kv.abs().sum()  # nothing else written


def test_ensure_keeps_contents_and_move_row_copies():
    cache = _cache()
    kv = _write(cache, [1, 3], [2, 6])
    cache.ensure(8, 16)
    assert cache.slots[0].kv.shape == (2, 8, 2, 16, 8)
    assert torch.equal(cache.slots[0].kv[:, 3, :, 6], kv[1])
    cache.move_row(3, 0)
    assert torch.equal(cache.slots[0].kv[:, 0, :, 6], kv[1])
    kv2 = _write(cache, [7], [15])  # the grown geometry is addressed correctly
    assert torch.equal(cache.slots[0].kv[:, 7, :, 15], kv2[0])


def test_decode_attention_equals_sdpa_with_mask():
    B, H, L, D = 3, 2, 9, 8
    q, k, v = torch.randn(B, H, D), torch.randn(B, H, L, D), torch.randn(B, H, L, D)
    pos = torch.tensor([8, 3, 5])
    keep = torch.arange(L)[None, :] <= pos[:, None]  # (B, L)
    bias = torch.zeros(B, 1, L).masked_fill_(~keep[:, None], float("-inf")).repeat_interleave(H, dim=0)
    ours = decode_attention(q, k, v, bias, D**-0.5).view(B, H, D)
    ref = F.scaled_dot_product_attention(q[:, :, None], k, v, attn_mask=keep[:, None, None], scale=D**-0.5)
    assert (ours - ref[:, :, 0]).abs().max() <= 1e-6
