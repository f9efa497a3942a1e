"""HRM-Text forward math as plain functions over weight tensors (gpt-fast style).

Activations stay 2-D, (N = B*T, hidden), so every projection is one `addmm`/`mm`, the
residual adds are folded into `addmm`, and there is no per-module call overhead: on
a tiny model the step time is dominated by op count, not FLOPs.

    x = embed(ids) * embedding_scale;  zH = x;  zL = z_L_init
    for h in range(H_cycles):
        for l in range(L_cycles): zL = L_stack(zL + zH)   # cache slots slot_base(h, l) + layer
        zH = H_stack(zH + zL)                              # cache slots slot_base(h, L_cycles) + layer
    logits = lm_head(zH)

Each stack: pre-norm layers `x + attn(rms(x))`, `x + mlp(rms(x))`, then a final RMSNorm.
Attention: fused `[gate|q|k|v]` projection, RoPE on q and k, SDPA, `sigmoid(gate) * out`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from hrm.config import HrmConfig
from hrm.model import AttnContext, HrmForCausalLM, KVCache

__all__ = ["LayerWeights", "Weights", "decode_attention", "hidden_states", "logits", "rms"]


class LayerWeights(NamedTuple):
    gqkv_t: Tensor  # (hidden, 4*A): gqkv_proj.weight.T (a view)
    gqkv_b: Tensor | None
    o_t: Tensor  # (A, hidden): o_proj.weight.T
    o_b: Tensor | None
    gate_up_t: Tensor  # (hidden, 2*I): gate_up_proj.weight.T
    gate_up_b: Tensor | None
    down_t: Tensor  # (I, hidden): down_proj.weight.T
    down_b: Tensor | None


@dataclass
class Weights:
    cfg: HrmConfig
    embed: Tensor
    z_l_init: Tensor
    lm_head: Tensor
    L: list[LayerWeights]
    H: list[LayerWeights]
    eps: Tensor  # 0-dim fp32 rms_norm_eps, on the weights' device

    @classmethod
    def from_model(cls, model: HrmForCausalLM) -> Weights:
        def stack(mod: torch.nn.Module) -> list[LayerWeights]:
            out = []
            for layer in mod.layers:  # type: ignore[union-attr]
                a, m = layer.attn, layer.mlp
                out.append(
                    LayerWeights(
                        a.gqkv_proj.weight.t(),
                        a.gqkv_proj.bias,
                        a.o_proj.weight.t(),
                        a.o_proj.bias,
                        m.gate_up_proj.weight.t(),
                        m.gate_up_proj.bias,
                        m.down_proj.weight.t(),
                        m.down_proj.bias,
                    )
                )
            return out

        bb = model.model
        return cls(
            model.cfg,
            bb.embed_tokens.weight,
            bb.z_L_init,
            model.lm_head.weight,
            stack(bb.L_module),
            stack(bb.H_module),
            torch.tensor(model.cfg.rms_norm_eps, dtype=torch.float32, device=bb.embed_tokens.weight.device),
        )


def rms(x: Tensor, eps: Tensor) -> Tensor:
    """Weightless RMSNorm in fp32, `x * rsqrt(mean(x^2) + eps)` (transformers' HrmTextRMSNorm).

    Four ops: the sum of squares as a squared `vector_norm` (within an ulp of `pow(2).mean()`);
    `F.rms_norm` runs about seven on CPU, and the norms are a fifth of a small decode step."""
    if x.dtype != torch.float32:
        return rms(x.float(), eps).to(x.dtype)
    n = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    return x * torch.addcmul(eps, n, n, value=1.0 / x.shape[-1]).rsqrt_()


def _proj(x: Tensor, w_t: Tensor, b: Tensor | None) -> Tensor:
    """x @ w_t (+ b): `F.linear` without its per-call transpose."""
    return torch.mm(x, w_t) if b is None else torch.addmm(b, x, w_t)


def _residual(x: Tensor, h: Tensor, w_t: Tensor, b: Tensor | None) -> Tensor:
    """x + h @ w_t (+ b), as one addmm."""
    return torch.addmm(x if b is None else x + b, h, w_t)


def decode_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor, scale: float) -> Tensor:
    """One query per row: q (B, H, D), k/v (B, H, L, D) cache views, bias additive (B*H or 1, 1, L)
    -> (B*H, 1, D). Three ops; at T = 1 SDPA's per-call setup costs more than the math."""
    B, H, L, D = k.shape
    s = torch.baddbmm(bias, q.reshape(B * H, 1, D), k.reshape(B * H, L, D).transpose(1, 2), alpha=scale)
    p = torch.softmax(s, dim=-1)  # reduced in fp32 internally for half types too
    return torch.bmm(p, v.reshape(B * H, L, D))


def attention(xn: Tensor, w: LayerWeights, ctx: AttnContext, slot: KVCache | None, cfg: HrmConfig) -> Tensor:
    N, B, T = xn.shape[0], ctx.batch, ctx.tokens
    H, D = cfg.num_attention_heads, int(cfg.head_dim or 0)
    g = _proj(xn, w.gqkv_t, w.gqkv_b).view(N, 4, H, D)
    qk = g[:, 1:3]
    torch.addcmul(qk * ctx.cos, qk.roll(D // 2, dims=-1), ctx.sin, out=qk)  # RoPE, in place
    if slot is not None:
        k, v = slot.update(ctx, g[:, 2:4])
    else:
        k, v = g[:, 2].view(B, T, H, D).transpose(1, 2), g[:, 3].view(B, T, H, D).transpose(1, 2)
    if ctx.bias is not None:  # decode: T == 1
        o = decode_attention(g[:, 1], k, v, ctx.bias, D**-0.5).view(N, H, D)
    else:
        q = g[:, 1]
        if ctx.packed is not None:  # only real tokens were projected; SDPA wants (B, H, T, D)
            q = q.new_zeros(B * T, H, D).index_copy_(0, ctx.packed, q)
        q = q.view(B, T, H, D).transpose(1, 2)
        o = F.scaled_dot_product_attention(
            q, k, v, attn_mask=ctx.mask, is_causal=ctx.is_causal, scale=D**-0.5
        )
        o = o.transpose(1, 2).reshape(B * T, H, D)
        if ctx.packed is not None:
            o = o.index_select(0, ctx.packed)
    return (o * torch.sigmoid(g[:, 0])).view(N, H * D)


def layer(x: Tensor, w: LayerWeights, ctx: AttnContext, slot: KVCache | None, W: Weights) -> Tensor:
    x = _residual(x, attention(rms(x, W.eps), w, ctx, slot, W.cfg), w.o_t, w.o_b)
    gu = _proj(rms(x, W.eps), w.gate_up_t, w.gate_up_b)
    inter = gu.shape[-1] // 2
    return _residual(x, F.silu(gu[:, :inter]) * gu[:, inter:], w.down_t, w.down_b)


def stack(x: Tensor, ws: list[LayerWeights], ctx: AttnContext, slot_base: int, W: Weights) -> Tensor:
    slots = ctx.cache.slots if ctx.cache is not None else None
    for i, w in enumerate(ws):
        x = layer(x, w, ctx, slots[slot_base + i] if slots is not None else None, W)
    return rms(x, W.eps)


def hidden_states(W: Weights, tokens: Tensor, ctx: AttnContext) -> Tensor:
    """tokens (N = B*T,) -> final H-state (N, hidden)."""
    cfg = W.cfg
    z_h = F.embedding(tokens, W.embed)
    if cfg.embedding_scale not in (None, 1.0):
        z_h = z_h * float(cfg.embedding_scale)
    z_l = W.z_l_init.expand_as(z_h)
    for h in range(cfg.H_cycles):
        for step in range(cfg.L_cycles):
            z_l = stack(z_l + z_h, W.L, ctx, cfg.slot_base(h, step), W)
        z_h = stack(z_h + z_l, W.H, ctx, cfg.slot_base(h, cfg.L_cycles), W)
    return z_h


def logits(W: Weights, states: Tensor) -> Tensor:
    return F.linear(states, W.lm_head)
