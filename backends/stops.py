"""Client-side stop strings for streams: hold back text that may be the start of a stop."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["StopScanner"]


class StopScanner:
    """Feed streamed text; get back what is safe to emit. `stopped` turns true at the
    first stop string, after which nothing more is emitted (the stop itself is dropped)."""

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [s for s in stops if s]
        self._hold = max((len(s) for s in self._stops), default=1) - 1
        self._pending = ""
        self.text = ""  # everything emitted so far
        self.stopped = False

    def feed(self, chunk: str) -> str:
        if self.stopped:
            return ""
        self._pending += chunk
        cuts = [i for i in (self._pending.find(s) for s in self._stops) if i >= 0]
        if cuts:
            out, self._pending, self.stopped = self._pending[: min(cuts)], "", True
        elif self._hold and len(self._pending) > self._hold:
            out, self._pending = self._pending[: -self._hold], self._pending[-self._hold:]
        elif self._hold:
            out = ""
        else:
            out, self._pending = self._pending, ""
        self.text += out
        return out

    def flush(self) -> str:
        out, self._pending = ("" if self.stopped else self._pending), ""
        self.text += out
        return out
