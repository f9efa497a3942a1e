"""The HRM-Text network with a static KV cache (gpt-fast style).

Parameter names mirror the on-disk checkpoint (`attn.gqkv_proj` rows `[gate|q|k|v]`,
`mlp.gate_up_proj` rows `[gate|up]`), so a checkpoint loads with a plain strict
`load_state_dict` and each fused projection is one matmul.

Forward (inference), as in transformers' `HrmTextModel`:

    x = embed(ids) * embedding_scale;  zH = x;  zL = z_L_init
    for h in range(H_cycles):
        for l in range(L_cycles): zL = L_stack(zL + zH)   # cache slots slot_base(h, l) + layer
        zH = H_stack(zH + zL)                              # cache slots slot_base(h, L_cycles) + layer
    logits = lm_head(zH)

Batches are right-padded: every row starts at position 0, so prefill needs only the
causal (or prefix-LM) mask; decode runs one token per row at per-row positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hrm.config import HrmConfig

__all__ = ["HrmForCausalLM", "KVCache", "HrmKVCache", "AttnContext", "rope_table"]


class KVCache(nn.Module):
    """One preallocated cache slot: k/v of shape (rows, heads, seq, head_dim)."""

    def __init__(self, rows: int, heads: int, seq: int, head_dim: int, dtype: torch.dtype, device: torch.device):
        super().__init__()
        shape = (rows, heads, seq, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, ctx: AttnContext, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write k/v (B, T, H, D) at rows ctx.rows, positions ctx.input_pos (B, T); return the
        (B, H, kv_len, D) views attention reads."""
        k_rows = self.k_cache[ctx.row0 : ctx.row0 + k.shape[0]]
        v_rows = self.v_cache[ctx.row0 : ctx.row0 + k.shape[0]]
        k_rows[ctx.row_idx, :, ctx.input_pos] = k
        v_rows[ctx.row_idx, :, ctx.input_pos] = v
        return k_rows[:, :, : ctx.kv_len], v_rows[:, :, : ctx.kv_len]


class HrmKVCache(nn.Module):
    """All slots (one per recurrence step x layer); grows on demand, keeping contents."""

    def __init__(self, cfg: HrmConfig, rows: int, seq: int, dtype: torch.dtype, device: torch.device):
        super().__init__()
        self._spec = (cfg.num_attention_heads, int(cfg.head_dim or 0), dtype, device)
        self.num_slots = cfg.num_slots
        self.rows, self.seq = rows, seq
        self.slots = nn.ModuleList([self._new_slot(rows, seq) for _ in range(cfg.num_slots)])

    def _new_slot(self, rows: int, seq: int) -> KVCache:
        heads, head_dim, dtype, device = self._spec
        return KVCache(rows, heads, seq, head_dim, dtype, device)

    def ensure(self, rows: int, seq: int) -> None:
        if rows <= self.rows and seq <= self.seq:
            return
        rows, seq = max(rows, self.rows), max(seq, self.seq)
        for i, old in enumerate(self.slots):
            new = self._new_slot(rows, seq)
            new.k_cache[: self.rows, :, : self.seq] = old.k_cache
            new.v_cache[: self.rows, :, : self.seq] = old.v_cache
            self.slots[i] = new
        self.rows, self.seq = rows, seq

    def move_row(self, src: int, dst: int) -> None:
        for slot in self.slots:
            slot.k_cache[dst] = slot.k_cache[src]
            slot.v_cache[dst] = slot.v_cache[src]

    def nbytes(self) -> int:
        return sum(s.k_cache.nbytes + s.v_cache.nbytes for s in self.slots)


@dataclass
class AttnContext:
    """Everything attention needs for one forward, built once per step."""

    cos: Tensor  # (B, T, 1, 1, D)
    sin: Tensor
    mask: Tensor | None  # bool, broadcastable to (B, H, T, kv_len); None with is_causal
    is_causal: bool
    cache: HrmKVCache | None = None
    row0: int = 0  # first cache row of this batch (rows row0 .. row0+B-1)
    row_idx: Tensor | None = None  # (B, 1) arange
    input_pos: Tensor | None = None  # (B, T) positions written
    kv_len: int = 0  # keys attended: [0, kv_len)


def rope_table(cfg: HrmConfig, length: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """cos/sin (length, head_dim), computed in fp32 as transformers does, then cast."""
    dim = int(cfg.head_dim or 0)
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.arange(length, dtype=torch.int64).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(device=device, dtype=dtype), emb.sin().to(device=device, dtype=dtype)


def _rms(x: Tensor, eps: float) -> Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.heads, self.head_dim = cfg.num_attention_heads, int(cfg.head_dim or 0)
        self.gqkv_proj = nn.Linear(cfg.hidden_size, 4 * cfg.attn_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.attn_dim, cfg.hidden_size, bias=cfg.attention_bias)
        self.scale = self.head_dim**-0.5

    def forward(self, x: Tensor, ctx: AttnContext, slot: KVCache | None) -> Tensor:
        B, T, _ = x.shape
        gqkv = self.gqkv_proj(x).view(B, T, 4, self.heads, self.head_dim)
        qk = gqkv[:, :, 1:3]
        qk = qk * ctx.cos + _rotate_half(qk) * ctx.sin  # RoPE on q and k at once
        q, k, v = qk[:, :, 0], qk[:, :, 1], gqkv[:, :, 3]
        if slot is not None:
            keys, values = slot.update(ctx, k, v)
        else:
            keys, values = k.transpose(1, 2), v.transpose(1, 2)
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), keys, values, attn_mask=ctx.mask, is_causal=ctx.is_causal, scale=self.scale
        )
        out = out.transpose(1, 2) * torch.sigmoid(gqkv[:, :, 0])  # sigmoid gate, (B, T, H, D)
        return self.o_proj(out.reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=cfg.mlp_bias)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.attn, self.mlp, self.eps = Attention(cfg), MLP(cfg), cfg.rms_norm_eps

    def forward(self, x: Tensor, ctx: AttnContext, slot: KVCache | None) -> Tensor:
        x = x + self.attn(_rms(x, self.eps), ctx, slot)
        return x + self.mlp(_rms(x, self.eps))


class Stack(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg.num_layers_per_stack)])
        self.eps = cfg.rms_norm_eps

    def forward(self, x: Tensor, ctx: AttnContext, slot_base: int) -> Tensor:
        slots = ctx.cache.slots if ctx.cache is not None else None
        for i, layer in enumerate(self.layers):
            x = layer(x, ctx, slots[slot_base + i] if slots is not None else None)
        return _rms(x, self.eps)


class Backbone(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.L_module, self.H_module = Stack(cfg), Stack(cfg)
        self.z_L_init = nn.Parameter(torch.zeros(cfg.hidden_size), requires_grad=False)

    def forward(self, tokens: Tensor, ctx: AttnContext) -> Tensor:
        cfg = self.cfg
        z_h = self.embed_tokens(tokens) * float(cfg.embedding_scale or 1.0)
        z_l = self.z_L_init.to(z_h.dtype).expand_as(z_h)
        for h in range(cfg.H_cycles):
            for step in range(cfg.L_cycles):
                z_l = self.L_module(z_l + z_h, ctx, cfg.slot_base(h, step))
            z_h = self.H_module(z_h + z_l, ctx, cfg.slot_base(h, cfg.L_cycles))
        return z_h


class HrmForCausalLM(nn.Module):
    """`hidden(tokens, ctx)` -> final states (B, T, hidden); `logits(states)` -> (..., vocab)."""

    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.cfg = cfg
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def hidden(self, tokens: Tensor, ctx: AttnContext) -> Tensor:
        return self.model(tokens, ctx)

    def logits(self, states: Tensor) -> Tensor:
        return self.lm_head(states)

    def forward(self, tokens: Tensor, ctx: AttnContext) -> Tensor:
        return self.logits(self.hidden(tokens, ctx))
