"""Incremental detokenization and stop strings (no torch).

- `Detokenizer` turns a growing list of token ids into text deltas, never emitting half a
  character: while the newest tokens decode to an incomplete UTF-8 sequence (a trailing
  U+FFFD from byte-level / byte-fallback tokens) it waits for more tokens. It decodes a
  small window seeded with the prompt's last tokens, so per-token cost is O(1) and
  SentencePiece-style leading spaces come out right.
- `StopChecker` finds the earliest stop-string match in the text so far (scanning only the
  region a new delta can complete) and says how much trailing text must be held back from
  a stream because it might still turn into a stop string.
- `final_text` decodes a whole completion at once, dropping a trailing incomplete character.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Decoder", "Detokenizer", "StopChecker", "final_text"]

_REPLACEMENT = "\ufffd"
_PROMPT_CONTEXT = 4  # prompt tokens kept as left context of the decode window


class Decoder(Protocol):
    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str: ...


def final_text(tokenizer: Decoder, token_ids: list[int]) -> str:
    """Whole-completion decode; a trailing incomplete UTF-8 character is dropped."""
    return tokenizer.decode(token_ids, skip_special_tokens=True).rstrip(_REPLACEMENT)


class Detokenizer:
    def __init__(self, tokenizer: Decoder, prompt_ids: list[int]):
        self._tok = tokenizer
        self._ids = list(prompt_ids[-_PROMPT_CONTEXT:])
        self._prefix = 0  # window start
        self._read = len(self._ids)  # ids before this are already emitted

    def push(self, token_id: int) -> str:
        """Add one generated token; return the newly completed text (maybe empty)."""
        self._ids.append(token_id)
        prefix_text = self._tok.decode(self._ids[self._prefix : self._read], skip_special_tokens=True)
        full = self._tok.decode(self._ids[self._prefix :], skip_special_tokens=True)
        if len(full) <= len(prefix_text) or full.endswith(_REPLACEMENT):
            return ""
        self._prefix, self._read = self._read, len(self._ids)
        return full[len(prefix_text) :]


class StopChecker:
    def __init__(self, stops: tuple[str, ...]):
        self.stops = tuple(s for s in stops if s)
        self._max = max((len(s) for s in self.stops), default=0)

    def find(self, text: str, new_from: int) -> int:
        """Start index of the earliest stop match that ends at or after `new_from`, or -1."""
        if not self.stops:
            return -1
        start = max(0, new_from - self._max + 1)
        hits = [i for i in (text.find(s, start) for s in self.stops) if i >= 0]
        return min(hits) if hits else -1

    def holdback(self, text: str) -> int:
        """Length of the longest suffix of `text` that is a proper prefix of some stop string."""
        for k in range(min(self._max - 1, len(text)), 0, -1):
            tail = text[-k:]
            if any(s.startswith(tail) for s in self.stops):
                return k
        return 0
