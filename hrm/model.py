"""The HRM-Text parameters (as nn.Modules) and the static KV cache (gpt-fast style).

Parameter names mirror the on-disk checkpoint (`attn.gqkv_proj` rows `[gate|q|k|v]`,
`mlp.gate_up_proj` rows `[gate|up]`), so a checkpoint loads with a plain strict
`load_state_dict` and each fused projection stays one matmul. The forward math lives in
`hrm.forward` as plain functions over the weight tensors (no per-module call overhead).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from hrm.config import HrmConfig

__all__ = ["AttnContext", "HrmForCausalLM", "HrmKVCache", "KVCache", "rope_table"]


class KVCache(nn.Module):
    """One preallocated cache slot: k and v fused as `kv` of shape (2, rows, heads, seq, head_dim),
    so one `index_put_` writes both."""

    kv: Tensor

    def __init__(
        self, rows: int, heads: int, seq: int, head_dim: int, dtype: torch.dtype, device: torch.device
    ):
        super().__init__()
        shape = (2, rows, heads, seq, head_dim)
        self.register_buffer("kv", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.flat = self.kv.view(-1, head_dim)  # rows of `flat` are addressed by `HrmKVCache.index`

    def update(self, ctx: AttnContext, kv: Tensor) -> tuple[Tensor, Tensor]:
        """Write kv (N = B*T, 2, H, D) at the flat rows ctx.kv_index (N, 2, H); return the
        (B, H, kv_len, D) k and v views of rows row0 .. row0+B-1 that attention reads."""
        self.flat.index_put_((ctx.kv_index,), kv)
        k, v = self.kv[:, ctx.row0 : ctx.row0 + ctx.batch, :, : ctx.kv_len]
        return k, v


class HrmKVCache:
    """All slots (one per recurrence step x layer); grows on demand, keeping contents."""

    def __init__(self, cfg: HrmConfig, rows: int, seq: int, dtype: torch.dtype, device: torch.device):
        self._spec = (cfg.num_attention_heads, int(cfg.head_dim or 0), dtype, device)
        self.num_slots = cfg.num_slots
        self.rows, self.seq = rows, seq
        self.slots: list[KVCache] = [self._new_slot(rows, seq) for _ in range(cfg.num_slots)]
        self._plane = self._planes()

    def _new_slot(self, rows: int, seq: int) -> KVCache:
        heads, head_dim, dtype, device = self._spec
        return KVCache(rows, heads, seq, head_dim, dtype, device)

    def _planes(self) -> Tensor:
        """(2, H): the `flat` row of (k or v, cache row 0, head h, position 0)."""
        heads, device = self._spec[0], self._spec[3]
        kv, h = torch.arange(2, device=device)[:, None], torch.arange(heads, device=device)[None, :]
        return (kv * self.rows * heads + h) * self.seq

    def index(self, rows: Tensor, pos: Tensor) -> Tensor:
        """`KVCache.flat` rows (B*T, 2, H) where tokens at cache rows `rows` (B, 1) and positions
        `pos` (B or 1, T) write their k and v (B*T, 2, H, D)."""
        heads = self._spec[0]
        base = (rows * (heads * self.seq) + pos)[..., None, None]  # (B, T, 1, 1)
        return (base + self._plane).view(-1, 2, heads)

    def ensure(self, rows: int, seq: int) -> None:
        if rows <= self.rows and seq <= self.seq:
            return
        rows, seq = max(rows, self.rows), max(seq, self.seq)
        for i, old in enumerate(self.slots):
            new = self._new_slot(rows, seq)
            new.kv[:, : self.rows, :, : self.seq] = old.kv
            self.slots[i] = new
        self.rows, self.seq = rows, seq
        self._plane = self._planes()

    def move_row(self, src: int, dst: int) -> None:
        for slot in self.slots:
            slot.kv[:, dst] = slot.kv[:, src]

    def nbytes(self) -> int:
        return sum(s.kv.nbytes for s in self.slots)


@dataclass
class AttnContext:
    """Everything attention needs for one forward over B rows x T tokens, built once per step."""

    batch: int
    tokens: int  # T
    cos: Tensor  # (B*T, 1, 1, D)
    sin: Tensor  # sign-folded, see rope_table
    mask: Tensor | None  # bool, broadcastable to (B, H, T, kv_len); None with is_causal or full
    is_causal: bool
    cache: HrmKVCache | None = None
    row0: int = 0  # first cache row of this batch (rows row0 .. row0+B-1)
    kv_index: Tensor | None = None  # (B*T, 2, H) flat cache rows written, see HrmKVCache.index
    bias: Tensor | None = None  # decode only: additive mask (B*H or 1, 1, kv_len), see decode_attention
    packed: Tensor | None = None  # packed prefill: each token's row in the right-padded (B*T) layout
    kv_len: int = 0  # keys attended: [0, kv_len)


def rope_table(
    cfg: HrmConfig, length: int, dtype: torch.dtype, device: torch.device
) -> tuple[Tensor, Tensor]:
    """cos and sign-folded sin (length, head_dim), computed in fp32 as transformers does, then cast.

    transformers: `x*cos + rotate_half(x)*sin` with `rotate_half(x) = cat(-x2, x1)`. Here
    `x*cos + roll(x, D/2)*sin_signed` with `sin_signed = cat(-sin1, sin2)`: the same products
    (negation is exact), two ops fewer."""
    dim = int(cfg.head_dim or 0)
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.arange(length, dtype=torch.int64).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    sin = emb.sin().to(dtype)
    sin[:, : dim // 2] = -sin[:, : dim // 2]
    return emb.cos().to(device=device, dtype=dtype), sin.to(device=device)


class Attention(nn.Module):
    """Parameter container; the math is in `hrm.forward`."""

    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.gqkv_proj = nn.Linear(cfg.hidden_size, 4 * cfg.attn_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.attn_dim, cfg.hidden_size, bias=cfg.attention_bias)


class MLP(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=cfg.mlp_bias)


class Layer(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.attn, self.mlp = Attention(cfg), MLP(cfg)


class Stack(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg.num_layers_per_stack)])


class Backbone(nn.Module):
    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.L_module, self.H_module = Stack(cfg), Stack(cfg)
        self.z_L_init = nn.Parameter(torch.zeros(cfg.hidden_size), requires_grad=False)


class HrmForCausalLM(nn.Module):
    """Parameters only: `model.embed_tokens`, `model.{L,H}_module.layers.*`, `model.z_L_init`, `lm_head`."""

    def __init__(self, cfg: HrmConfig):
        super().__init__()
        self.cfg = cfg
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
