"""One definition of "continuation tokens" for log-likelihood, shared by every kind.

lm-eval style: trailing whitespace of the context moves into the continuation; the
whole string `context + continuation` is tokenized once, and the continuation tokens
are those whose character span ends past the end of the context. Engines that only
return per-token log-probs of an echoed prompt (vLLM, TGI) find the same boundary
from character offsets, so every kind scores the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["continuation_start", "split_context", "truncate_at_stop"]


def split_context(context: str, continuation: str) -> tuple[str, str]:
    """Move trailing whitespace of `context` to the front of `continuation` (as lm-eval does)."""
    stripped = context.rstrip()
    if stripped == context:
        return context, continuation
    return stripped, context[len(stripped):] + continuation


def continuation_start(offsets: Sequence[tuple[int, int] | None], context_chars: int) -> int:
    """Index of the first token whose span ends past `context_chars`.

    `offsets` are (start, end) character spans of the whole text's tokens; special
    tokens (None or an empty span at 0, e.g. BOS) belong to the context.
    """
    for i, span in enumerate(offsets):
        if span is None:
            continue
        start, end = span
        if end > start and end > context_chars:
            return i
    return len(offsets)


def truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut `text` at the earliest stop string (the stop itself is dropped)."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    if cut < 0:
        return text, False
    return text[:cut], True
