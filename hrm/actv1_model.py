"""The AI-OS ACTV1 network ("HierarchicalReasoningModel_ACTV1"), inference only.

Parameter names are the keys AI-OS writes to `actv1_student.safetensors`
(`inner.embed_tokens.embedding_weight`, `inner.H_level.layers.0.self_attn.qkv_proj.weight`, ...),
so a bundle loads with a plain strict `load_state_dict`. The math follows AI-OS
`src/aios/core/hrm_models/impl/{hrm_act_v1,layers,common}.py` and `moe_layer.py`:

    x   = clamp(embed_scale * embed(ids), -10, 10)     # learned pos: 0.7071 * (embed + pos) first
    z_H = H_init
    for h in range(H_cycles):
        z_L = L_init                                   # AI-OS resets z_L at every H cycle
        for l in range(L_cycles): z_L = L_level(z_L, z_H + x)
        z_H = H_level(z_H, z_L)
    logits = clamp(lm_head(z_H), -20, 20).float()

A level is `h = h + injection` then post-norm blocks `h = rms(h + attn(h)); h = rms(h + mlp(h))`
(RMSNorm without a weight). Attention is bidirectional (AI-OS builds it with `causal=False`),
so every position sees the whole sequence and there is no KV cache to keep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["Actv1Config", "Actv1Model", "rms_norm"]


def _find_multiple(a: int, b: int) -> int:
    return -(a // -b) * b


@dataclass
class Actv1Config:
    """The architecture (AI-OS `HierarchicalReasoningModel_ACTV1Config`) plus what `HrmEngine` reads."""

    vocab_size: int
    hidden_size: int
    num_heads: int
    H_layers: int
    L_layers: int
    H_cycles: int
    L_cycles: int
    expansion: float = 4.0
    pos_encodings: str = "rope"  # "rope" | "learned"
    max_seq_len: int = 2048
    halt_max_steps: int = 1
    act_segments: int = 1  # ACT segments run per forward; AI-OS inference runs exactly one
    use_moe: bool = False
    num_experts: int = 8
    num_experts_per_tok: int = 2
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    torch_dtype: str = "float32"  # AI-OS `forward_dtype`
    # Read by HrmEngine; filled from the tokenizer at load time.
    bos_token_id: int | None = None
    pad_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    prefix_lm: bool = False

    @property
    def max_position_embeddings(self) -> int:
        return self.max_seq_len

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def intermediate_size(self) -> int:
        return _find_multiple(round(self.expansion * self.hidden_size * 2 / 3), 256)

    @property
    def embed_scale(self) -> float:
        # AI-OS: sqrt(hidden) only from hidden_size 512 up, 1.0 below.
        return math.sqrt(self.hidden_size) if self.hidden_size >= 512 else 1.0


def rms_norm(x: Tensor, eps: float) -> Tensor:
    """Weightless RMSNorm, computed in fp32 and cast back (AI-OS `layers.rms_norm`)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)).to(x.dtype)


# -- parameter containers (names = checkpoint keys) -----------------------------------------


class _Embedding(nn.Module):
    def __init__(self, rows: int, dim: int):
        super().__init__()
        self.embedding_weight = nn.Parameter(torch.empty(rows, dim))


Rope = tuple[Tensor, Tensor]  # fp32 (cos, sin), each (positions, head_dim)


class _Attention(nn.Module):
    """Bidirectional: `mask` (B, 1, 1, T) only hides padding keys."""

    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.heads, self.head_dim = cfg.num_heads, cfg.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden_size, 3 * cfg.num_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * cfg.head_dim, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor, rope: Rope | None, mask: Tensor | None) -> Tensor:
        B, T, _ = x.shape
        H, D = self.heads, self.head_dim
        q, k, v = F.linear(x, self.qkv_proj.weight).view(B, T, 3 * H, D).split(H, dim=2)
        if rope is not None:
            cos, sin = rope[0][:T, None, :], rope[1][:T, None, :]  # broadcast over heads

            def rotate(t: Tensor) -> Tensor:  # in fp32, as AI-OS apply_rotary_pos_emb
                tf = t.float()
                return (tf * cos + torch.cat((-tf[..., D // 2 :], tf[..., : D // 2]), dim=-1) * sin).to(t.dtype)

            q, k = rotate(q), rotate(k)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             attn_mask=mask)
        return F.linear(out.transpose(1, 2).reshape(B, T, H * D), self.o_proj.weight)


class _SwiGLU(nn.Module):
    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = F.linear(x, self.gate_up_proj.weight).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_proj.weight)


class _Expert(nn.Module):
    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.w1 = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.w2 = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(F.gelu(F.linear(x, self.w1.weight)), self.w2.weight)


class _Router(nn.Module):
    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)


class _MoE(nn.Module):
    """AI-OS `MoELayer`: top-k router, softmax over the k picked logits, GELU experts."""

    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.k = cfg.num_experts_per_tok
        self.router = _Router(cfg)
        self.experts = nn.ModuleList([_Expert(cfg) for _ in range(cfg.num_experts)])

    def forward(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, x.shape[-1])
        top_logits, top_idx = F.linear(flat, self.router.gate.weight).topk(self.k, dim=-1)
        weights = top_logits.softmax(dim=-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):  # expert order = AI-OS's accumulation order
            rows, slot = (top_idx == e).nonzero(as_tuple=True)
            if rows.numel():
                out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return out.view_as(x)


class _MoESwiGLU(nn.Module):
    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.moe = _MoE(cfg)

    def forward(self, x: Tensor) -> Tensor:
        return self.moe(x)


class _Block(nn.Module):
    """Post-norm: `x = rms(x + attn(x)); x = rms(x + mlp(x))`."""

    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.eps = cfg.rms_norm_eps
        self.self_attn = _Attention(cfg)
        self.mlp: nn.Module = _MoESwiGLU(cfg) if cfg.use_moe else _SwiGLU(cfg)

    def forward(self, x: Tensor, rope: Rope | None, mask: Tensor | None) -> Tensor:
        x = rms_norm(x + self.self_attn(x, rope, mask), self.eps)
        return rms_norm(x + self.mlp(x), self.eps)


class _Level(nn.Module):
    """`h = h + injection`, then the blocks."""

    def __init__(self, cfg: Actv1Config, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList([_Block(cfg) for _ in range(n_layers)])

    def forward(self, h: Tensor, injection: Tensor, rope: Rope | None, mask: Tensor | None) -> Tensor:
        h = h + injection
        for block in self.layers:
            h = block(h, rope, mask)
        return h


class _Inner(nn.Module):
    H_init: Tensor
    L_init: Tensor

    def __init__(self, cfg: Actv1Config):
        super().__init__()
        self.embed_tokens = _Embedding(cfg.vocab_size, cfg.hidden_size)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.q_head = nn.Linear(cfg.hidden_size, 2, bias=True)  # halting Q-values; unused at inference
        if cfg.pos_encodings == "learned":
            self.embed_pos = _Embedding(cfg.max_seq_len, cfg.hidden_size)
        self.H_level = _Level(cfg, cfg.H_layers)
        self.L_level = _Level(cfg, cfg.L_layers)
        self.register_buffer("H_init", torch.empty(cfg.hidden_size), persistent=True)
        self.register_buffer("L_init", torch.empty(cfg.hidden_size), persistent=True)


# -- the model -----------------------------------------------------------------------------


class Actv1Model(nn.Module):
    """`hidden(ids, key_mask)` -> final z_H (B, T, hidden); `logits(z_H)` -> clamped fp32 logits.

    `key_mask` (B, T) bool marks real tokens of right-padded rows: padding is masked out of
    every attention, so each row's real positions equal an unpadded forward of that row."""

    def __init__(self, cfg: Actv1Config):
        super().__init__()
        if cfg.pos_encodings not in ("rope", "learned"):
            raise ValueError(f"pos_encodings {cfg.pos_encodings!r} is not 'rope' or 'learned'")
        self.cfg = cfg
        self.inner = _Inner(cfg)
        self._rope: Rope | None = None

    def rope_table(self, length: int) -> Rope:
        """fp32 (cos, sin) of shape (length, head_dim), AI-OS `RotaryEmbedding` layout."""
        if self._rope is None or self._rope[0].shape[0] < length:
            dim, dev = self.cfg.head_dim, self.inner.H_init.device
            inv_freq = 1.0 / (self.cfg.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
            freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self._rope = (emb.cos().to(dev), emb.sin().to(dev))
        return self._rope

    def embed(self, ids: Tensor) -> Tensor:
        cfg, inner = self.cfg, self.inner
        x = inner.embed_tokens.embedding_weight[ids]
        if cfg.pos_encodings == "learned":
            # AI-OS adds the whole (seq_len, hidden) table, i.e. assumes T == seq_len (its
            # training pads to max_length); rows [0, T) are what a length-T input gets.
            x = 0.707106781 * (x + inner.embed_pos.embedding_weight[: ids.shape[1]])
        return torch.clamp(cfg.embed_scale * x, min=-10.0, max=10.0)

    def hidden(self, ids: Tensor, key_mask: Tensor | None = None) -> Tensor:
        cfg, inner = self.cfg, self.inner
        B, T = ids.shape
        rope = self.rope_table(T) if cfg.pos_encodings == "rope" else None
        mask = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, T): keys only
        x = self.embed(ids)
        z_H = inner.H_init.expand(B, T, -1)  # the ACT carry starts halted, i.e. at (H_init, L_init)
        for _segment in range(cfg.act_segments):
            # AI-OS splits the last step out of these loops (no-grad vs grad in training); the
            # order of updates is the plain nested loop below.
            for _h in range(cfg.H_cycles):
                z_L = inner.L_init.expand(B, T, -1)
                for _l in range(cfg.L_cycles):
                    z_L = inner.L_level(z_L, z_H + x, rope, mask)
                z_H = inner.H_level(z_H, z_L, rope, mask)
        return z_H

    def logits(self, z_H: Tensor) -> Tensor:
        return torch.clamp(F.linear(z_H, self.inner.lm_head.weight), min=-20.0, max=20.0).float()
