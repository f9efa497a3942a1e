"""Torch side of the engine: prefill / decode / full-sequence forwards over the KV cache.

Rows of the cache are the rows of the running batch (kept contiguous by the scheduler).
Prefill writes new sequences at rows [row0, row0 + B) from position 0, with the prompts
packed (no pad tokens go through the model); decode feeds one token per running row at
per-row positions.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hrm.forward import Weights, hidden_states, logits
from hrm.model import AttnContext, HrmForCausalLM, HrmKVCache, rope_table

__all__ = ["ModelRunner", "prefix_mask"]


def prefix_mask(prefix_lens: Tensor, T: int) -> Tensor:
    """Bool (B, 1, T, T): causal, plus bidirectional inside each row's prefix [0, prefix_len)."""
    idx = torch.arange(T, device=prefix_lens.device)
    causal = idx[None, :] <= idx[:, None]  # (q, k)
    in_prefix = idx[None, :] < prefix_lens[:, None]  # (B, T)
    both = in_prefix[:, :, None] & in_prefix[:, None, :]  # (B, q, k)
    return (causal[None] | both)[:, None]


class ModelRunner:
    def __init__(self, model: HrmForCausalLM, max_context: int, pad_id: int = 0):
        p = next(model.parameters())
        self.model, self.device, self.dtype = model, p.device, p.dtype
        self.cfg = model.cfg
        self.weights = Weights.from_model(model)
        self.max_context = max_context
        self.pad_id = pad_id
        self.cos, self.sin = rope_table(self.cfg, max_context, self.dtype, self.device)
        self.cache: HrmKVCache | None = None

    # -- cache management -------------------------------------------------------------
    @torch.inference_mode()
    def ensure_cache(self, rows: int, seq: int) -> None:
        seq = min(self.max_context, seq)
        if self.cache is None:
            self.cache = HrmKVCache(self.cfg, rows, seq, self.dtype, self.device)
        else:
            self.cache.ensure(rows, seq)

    def release_cache(self) -> None:
        self.cache = None

    @torch.inference_mode()
    def move_row(self, src: int, dst: int) -> None:
        if self.cache is not None:
            self.cache.move_row(src, dst)

    # -- forwards -----------------------------------------------------------------------
    def _pad(self, token_lists: list[list[int]]) -> tuple[Tensor, Tensor, int]:
        T = max(len(t) for t in token_lists)
        tokens = torch.full((len(token_lists), T), self.pad_id, dtype=torch.long)
        for i, t in enumerate(token_lists):
            tokens[i, : len(t)] = torch.tensor(t, dtype=torch.long)
        lens = torch.tensor([len(t) for t in token_lists], dtype=torch.long)
        return tokens.to(self.device), lens.to(self.device), T

    def _full_context(self, B: int, T: int, prefix_lens: Tensor | None) -> AttnContext:
        D = self.cos.shape[-1]
        cos = self.cos[:T].repeat(B, 1).view(B * T, 1, 1, D)
        sin = self.sin[:T].repeat(B, 1).view(B * T, 1, 1, D)
        mask = prefix_mask(prefix_lens, T) if prefix_lens is not None else None
        return AttnContext(batch=B, tokens=T, cos=cos, sin=sin, mask=mask, is_causal=mask is None and T > 1)

    @torch.inference_mode()
    def prefill(self, token_lists: list[list[int]], row0: int, prefix_lm: bool) -> Tensor:
        """Run prompts into cache rows [row0, row0+B); return fp32 logits (B, vocab) at each
        row's last prompt token. The prompts are packed, so projections and MLPs see only
        real tokens; attention reads the right-padded cache rows."""
        assert self.cache is not None, "ensure_cache() first"
        dev, D = self.device, self.cos.shape[-1]
        lens = torch.tensor([len(t) for t in token_lists], device=dev)
        B, T = len(token_lists), max(len(t) for t in token_lists)
        tokens = torch.tensor([t for ids in token_lists for t in ids], dtype=torch.long, device=dev)
        N = tokens.shape[0]
        ends = lens.cumsum(0)
        rows = torch.arange(B, device=dev).repeat_interleave(lens, output_size=N)
        pos = torch.arange(N, device=dev) - (ends - lens).repeat_interleave(lens, output_size=N)
        mask = prefix_mask(lens, T) if prefix_lm else None
        ctx = AttnContext(
            batch=B,
            tokens=T,
            cos=self.cos.index_select(0, pos).view(N, 1, 1, D),
            sin=self.sin.index_select(0, pos).view(N, 1, 1, D),
            mask=mask,
            is_causal=mask is None and T > 1,
            cache=self.cache,
            row0=row0,
            kv_index=self.cache.index((rows + row0)[:, None], pos[:, None]),
            kv_len=T,
            packed=rows * T + pos,
        )
        states = hidden_states(self.weights, tokens, ctx)
        return logits(self.weights, states[ends - 1]).float()

    @torch.inference_mode()
    def decode(self, tokens: Tensor, pos: Tensor, kv_len: int, uniform: bool = False) -> Tensor:
        """One token per running row: tokens/pos (B,) for cache rows [0, B). Returns fp32 (B, vocab).

        `uniform`: every row is at position kv_len - 1, so no mask is needed."""
        assert self.cache is not None, "ensure_cache() first"
        B, H = tokens.shape[0], self.cfg.num_attention_heads
        D = self.cos.shape[-1]
        if uniform:
            bias = torch.zeros(1, 1, kv_len, dtype=self.dtype, device=self.device)
        else:
            keys = torch.arange(kv_len, device=self.device)
            bias = torch.zeros(B, 1, kv_len, dtype=self.dtype, device=self.device)
            bias = bias.masked_fill_(keys > pos[:, None, None], float("-inf")).repeat_interleave(H, dim=0)
        ctx = AttnContext(
            batch=B,
            tokens=1,
            cos=self.cos.index_select(0, pos).view(B, 1, 1, D),
            sin=self.sin.index_select(0, pos).view(B, 1, 1, D),
            mask=None,
            is_causal=False,
            cache=self.cache,
            row0=0,
            kv_index=self.cache.index(torch.arange(B, device=self.device)[:, None], pos[:, None]),
            kv_len=kv_len,
            bias=bias,
        )
        return logits(self.weights, hidden_states(self.weights, tokens, ctx)).float()

    @torch.inference_mode()
    def full_hidden(self, token_lists: list[list[int]], prefix_lens: list[int] | None) -> Tensor:
        """No-cache forward over whole (right-padded) sequences: final states (B, T, hidden)."""
        tokens, _, T = self._pad(token_lists)
        B = tokens.shape[0]
        plens = None if prefix_lens is None else torch.tensor(prefix_lens, device=self.device)
        return hidden_states(self.weights, tokens.view(-1), self._full_context(B, T, plens)).view(B, T, -1)

    @torch.inference_mode()
    def continuation_logits(self, pairs: list[tuple[list[int], list[int]]], prefix_lm: bool) -> Tensor:
        """(sum of continuation lengths, vocab): one forward over each `ctx + cont[:-1]`; the
        logits at position len(ctx) - 1 + i score continuation token i."""
        states = self.full_hidden([(ctx + cont)[:-1] for ctx, cont in pairs],
                                  [len(ctx) for ctx, _ in pairs] if prefix_lm else None)
        rows = [r for r, (_, cont) in enumerate(pairs) for _ in cont]
        cols = [len(ctx) - 1 + i for ctx, cont in pairs for i in range(len(cont))]
        dev = states.device
        return self.logits(states[torch.tensor(rows, device=dev), torch.tensor(cols, device=dev)])

    @torch.inference_mode()
    def logits(self, states: Tensor) -> Tensor:
        return logits(self.weights, states)
