"""requests.jsonl: one record per finished request, appended, flushed and fsync'd each time.

A crash (even kill -9) keeps every finished record; a torn last line is ignored on read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["RecordSink", "read_records"]


class RecordSink:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def open(self) -> None:
        # Drop a torn last line left by a crash, so appends start on a fresh line.
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with self.path.open("r+b") as f:
                    f.truncate(cut)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, record: dict[str, Any]) -> None:
        assert self._fd is not None, "open() first"
        line = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        os.write(self._fd, line)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_records(path: Path) -> list[dict[str, Any]]:
    """All complete records; a torn (unparseable) trailing line from a crash is skipped."""
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{path}:{i + 1}: corrupt record") from None
    return out
