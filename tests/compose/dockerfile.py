"""Parse the repo's Dockerfile into stages with dockerfile-parse (pip install dockerfile-parse)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.compose.composefile import REPO

__all__ = ["Stage", "global_args", "stage_names", "stages"]


@dataclass
class Stage:
    name: str
    base: str  # image or parent stage
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, value)

    def values(self, instruction: str) -> list[str]:
        return [v for i, v in self.instructions if i == instruction]


def _parsed() -> list[dict[str, object]]:
    import pytest

    parse = pytest.importorskip("dockerfile_parse", reason="pip install dockerfile-parse")
    parser = parse.DockerfileParser(path=str(REPO / "Dockerfile"))
    return list(parser.structure)


def global_args() -> list[str]:
    out = []
    for ins in _parsed():
        if ins["instruction"] == "FROM":
            break
        if ins["instruction"] == "ARG":
            out.append(str(ins["value"]))
    return out


def stages() -> dict[str, Stage]:
    result: dict[str, Stage] = {}
    current: Stage | None = None
    for ins in _parsed():
        kind, value = str(ins["instruction"]), str(ins["value"])
        if kind == "FROM":
            parts = value.split()
            assert len(parts) == 3 and parts[1].upper() == "AS", f"unnamed stage: FROM {value}"
            current = Stage(parts[2], parts[0])
            result[current.name] = current
        elif current is not None:
            current.instructions.append((kind, value))
    return result


def stage_names() -> set[str]:
    return set(stages())
