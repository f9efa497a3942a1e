"""Update KEY=VALUE lines in a compose `.env` file in place, keeping comments and order."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["quote_env", "update_env_file"]

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def quote_env(value: str) -> str:
    if value and re.fullmatch(r"[A-Za-z0-9_./:,@+-]+", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def update_env_file(path: Path, values: dict[str, str]) -> None:
    """Set each key (replacing an existing line, else appending); other lines are untouched."""
    lines = path.read_text().splitlines() if path.exists() else []
    pending = dict(values)
    out: list[str] = []
    for line in lines:
        m = _LINE.match(line)
        if m and m.group(1) in pending:
            key = m.group(1)
            out.append(f"{key}={quote_env(pending.pop(key))}")
        else:
            out.append(line)
    if pending:
        out.append("# written by `abtest plan`")
        out.extend(f"{k}={quote_env(v)}" for k, v in pending.items())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")
