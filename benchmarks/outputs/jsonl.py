"""requests.jsonl: one record per finished request, appended and fsync'd.

A writer thread does the appends with group commit (every batch of records that
finished while the previous fsync ran is written, then fsync'd), so a 3 ms fsync never
blocks the event loop or caps the request rate. A crash (even kill -9) keeps every
record whose fsync completed; a torn last line is ignored on read.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from pathlib import Path
from typing import Any

__all__ = ["RecordSink", "read_records"]


class RecordSink:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._q: queue.Queue[bytes | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def open(self) -> None:
        # Drop a torn last line left by a crash, so appends start on a fresh line.
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with self.path.open("r+b") as f:
                    f.truncate(cut)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._thread = threading.Thread(target=self._writer, name="record-sink", daemon=True)
        self._thread.start()

    def _writer(self) -> None:
        assert self._fd is not None
        while True:
            first = self._q.get()
            batch = [first]
            while True:
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            lines = [b for b in batch if b is not None]
            try:
                if lines:
                    os.write(self._fd, b"".join(lines))
                    os.fsync(self._fd)
            except OSError as e:  # surfaced by the next write()/flush()
                self._error = e
            for _ in batch:
                self._q.task_done()
            if None in batch:
                return

    def write(self, record: dict[str, Any]) -> None:
        if self._error is not None:
            raise self._error
        assert self._thread is not None, "open() first"
        self._q.put((json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8"))

    def flush(self) -> None:
        """Block until every record written so far is on disk."""
        self._q.join()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._thread = None
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
