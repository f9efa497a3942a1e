"""User prompt files (JSONL and CSV). Every error names the file and the line."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PromptFileError", "RawPrompt", "load_prompt_file"]


class PromptFileError(ValueError):
    """A malformed prompt file; the message reads `FILE:LINE: what is wrong`."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclass(frozen=True)
class RawPrompt:
    prompt: str
    reference: str | None = None
    choices: tuple[str, ...] = ()
    answer: int | None = None
    task: str | None = None
    id: str | None = None


_ALLOWED = {"id", "prompt", "reference", "continuations", "choices", "answer", "task"}


def _parse_row(row: dict[str, Any], path: Path, line: int) -> RawPrompt:
    unknown = sorted(set(row) - _ALLOWED)
    if unknown:
        raise PromptFileError(path, line, f"unknown field(s) {unknown}; allowed: {sorted(_ALLOWED)}")
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise PromptFileError(path, line, "field 'prompt' must be a non-empty string")
    ref = row.get("reference")
    if ref is not None and not isinstance(ref, str):
        raise PromptFileError(path, line, "field 'reference' must be a string")
    if "continuations" in row and "choices" in row:
        raise PromptFileError(path, line, "give either 'continuations' or 'choices', not both")
    raw_choices = row.get("choices", row.get("continuations"))
    choices: tuple[str, ...] = ()
    if raw_choices is not None:
        name = "choices" if "choices" in row else "continuations"
        if not isinstance(raw_choices, list) or not raw_choices:
            raise PromptFileError(path, line, f"field '{name}' must be a non-empty list of strings")
        for i, c in enumerate(raw_choices):
            if not isinstance(c, str) or not c:
                raise PromptFileError(path, line, f"field '{name}[{i}]' must be a non-empty string")
        choices = tuple(raw_choices)
    answer = row.get("answer")
    if answer is not None and (
        isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices)
    ):
        raise PromptFileError(
            path, line, f"field 'answer' must be an index into choices (0..{len(choices) - 1})"
        )
    task = row.get("task")
    if task is not None and not isinstance(task, str):
        raise PromptFileError(path, line, "field 'task' must be a string")
    rid = row.get("id")
    if rid is not None and not isinstance(rid, str | int):
        raise PromptFileError(path, line, "field 'id' must be a string or integer")
    return RawPrompt(prompt, ref, choices, answer, task, None if rid is None else str(rid))


def _load_jsonl(path: Path) -> list[RawPrompt]:
    out: list[RawPrompt] = []
    with path.open(encoding="utf-8") as f:
        for n, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise PromptFileError(path, n, f"invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(row, dict):
                raise PromptFileError(path, n, "each line must be a JSON object with a 'prompt' field")
            out.append(_parse_row(row, path, n))
    return out


def _load_csv(path: Path) -> list[RawPrompt]:
    out: list[RawPrompt] = []
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or "prompt" not in reader.fieldnames:
            raise PromptFileError(path, 1, "CSV header must include a 'prompt' column")
        for row in reader:
            line = reader.line_num
            if None in row:
                raise PromptFileError(path, line, "row has more cells than the header")
            parsed: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
            for key in ("choices", "continuations"):
                if key in parsed:
                    try:
                        parsed[key] = json.loads(parsed[key])
                    except json.JSONDecodeError:
                        raise PromptFileError(path, line, f"column '{key}' must be a JSON list") from None
            if "answer" in parsed:
                try:
                    parsed["answer"] = int(parsed["answer"])
                except ValueError:
                    raise PromptFileError(path, line, "column 'answer' must be an integer") from None
            out.append(_parse_row(parsed, path, line))
    return out


def load_prompt_file(path: Path) -> list[RawPrompt]:
    """Read a `.jsonl` or `.csv` prompt file. Raises PromptFileError naming file and line."""
    loaders: dict[str, Callable[[Path], list[RawPrompt]]] = {
        ".jsonl": _load_jsonl,
        ".json": _load_jsonl,
        ".csv": _load_csv,
    }
    if not path.is_file():
        raise PromptFileError(path, None, "file not found")
    loader = loaders.get(path.suffix.lower())
    if loader is None:
        raise PromptFileError(path, None, f"unsupported extension {path.suffix!r}; use .jsonl or .csv")
    try:
        rows = loader(path)
    except UnicodeDecodeError as e:
        raise PromptFileError(path, None, f"not UTF-8 text ({e.reason})") from None
    if not rows:
        raise PromptFileError(path, None, "no prompts in file")
    return rows
