"""Log-likelihood scoring of continuations (teacher forcing, no KV cache).

Tokenization-boundary rule (lm-evaluation-harness `_encode_pair`):

1. Trailing whitespace of the prompt moves to the front of the continuation
   (`"Q: 2+2= "`, `"4"` is scored as `"Q: 2+2="`, `" 4"`), so the space merges with the
   continuation's first word the way the tokenizer would merge it in running text.
2. `whole = encode(prompt + continuation)` and `ctx = encode(prompt)`, both with the
   tokenizer's special tokens (BOS if it adds one); the continuation tokens are
   `whole[len(ctx):]`. If that tail is empty (the prompt's last token merged across the
   boundary), the continuation is encoded on its own, without special tokens.
3. An empty prompt encoding (no BOS) is replaced by `[bos]` (or `[eos]`) so that the first
   continuation token has something to condition on.
4. A sequence longer than the context window loses prompt tokens from the left; a
   continuation that alone does not fit raises `InvalidRequestError(field="continuations[i]")`.

For prefix-LM checkpoints the (possibly truncated) prompt tokens are the bidirectional
prefix (transformers' `token_type_ids == 1`), the continuation is causal. For AI-OS ACTV1
bundles (fully bidirectional), continuation token i is scored by the last-position logits
of a forward over `ctx + cont[:i]`: the distribution generation samples it from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from hrm.actv1 import Actv1Runner
from hrm.errors import InvalidRequestError
from hrm.params import LoglikelihoodOutput
from hrm.runner import ModelRunner

__all__ = ["ScoreItem", "encode_pair", "score_batch", "split_whitespace"]

Encode = Callable[[str, bool], list[int]]  # (text, add_special_tokens) -> ids


@dataclass
class ScoreItem:
    ctx_ids: list[int]
    cont_ids: list[int]


def split_whitespace(prompt: str, continuation: str) -> tuple[str, str]:
    n = len(prompt) - len(prompt.rstrip())
    if n:
        return prompt[:-n], prompt[-n:] + continuation
    return prompt, continuation


def encode_pair(
    encode: Encode, prompt: str, continuation: str, index: int, max_context: int, fallback_ctx: int
) -> ScoreItem:
    if not continuation:
        raise InvalidRequestError(f"continuations[{index}] is empty", field=f"continuations[{index}]")
    prompt, continuation = split_whitespace(prompt, continuation)
    ctx = encode(prompt, True) if prompt else []
    whole = encode(prompt + continuation, True)
    if not ctx:
        ctx = [fallback_ctx]
        cont = encode(continuation, False)
    else:
        cont = whole[len(ctx) :] or encode(continuation, False)
    if len(cont) >= max_context:
        raise InvalidRequestError(
            f"continuations[{index}] has {len(cont)} tokens; the context window is {max_context}",
            field=f"continuations[{index}]",
        )
    keep = max_context + 1 - len(cont)  # tokens fed = len(ctx) + len(cont) - 1 <= max_context
    return ScoreItem(ctx_ids=ctx[-keep:], cont_ids=cont)


def score_batch(
    runner: ModelRunner | Actv1Runner, items: list[ScoreItem], prefix_lm: bool
) -> list[LoglikelihoodOutput]:
    """Score one batch of (context, continuation) pairs by teacher forcing."""
    targets = [t for it in items for t in it.cont_ids]
    logits = runner.continuation_logits([(it.ctx_ids, it.cont_ids) for it in items], prefix_lm)
    dev = logits.device
    logp = F.log_softmax(logits.float(), dim=-1)
    tgt = torch.tensor(targets, device=dev)
    tok_lp = logp.gather(1, tgt[:, None])[:, 0].tolist()
    greedy = (logp.argmax(dim=-1) == tgt).tolist()
    out, i = [], 0
    for it in items:
        n = len(it.cont_ids)
        lps = tok_lp[i : i + n]
        out.append(
            LoglikelihoodOutput(
                ll=float(sum(lps)), token_logprobs=lps, is_greedy=all(greedy[i : i + n]), num_tokens=n
            )
        )
        i += n
    return out
