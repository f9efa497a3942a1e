"""Validate bodies against TGI's published OpenAPI spec (`/work/shared/specs/tgi-openapi.json`).

OpenAPI 3.0 schemas become JSON Schema (draft 2020-12): `nullable: true` turns into
"or null", and `$ref`s resolve into `#/components/schemas/...` of the same document.

    spec = TgiSpec.load()
    errors = spec.errors("GenerateRequest", body)   # [] when valid
"""

from __future__ import annotations

import copy
import json
from functools import cached_property
from pathlib import Path
from typing import Any

__all__ = ["SPEC_PATH", "TgiSpec"]

SPEC_PATH = Path("/work/shared/specs/tgi-openapi.json")


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _convert(v) for k, v in node.items() if k not in ("example", "nullable", "default")}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class TgiSpec:
    def __init__(self, doc: dict[str, Any]) -> None:
        self._components = {"schemas": _convert(copy.deepcopy(doc["components"]["schemas"]))}

    @classmethod
    def load(cls, path: Path = SPEC_PATH) -> TgiSpec:
        return cls(json.loads(path.read_text()))

    @cached_property
    def _validators(self) -> dict[str, Any]:
        return {}

    def validator(self, name: str) -> Any:
        from jsonschema import Draft202012Validator

        if name not in self._validators:
            root = {"$ref": f"#/components/schemas/{name}", "components": self._components}
            self._validators[name] = Draft202012Validator(root)
        return self._validators[name]

    def array_validator(self, item: str) -> Any:
        from jsonschema import Draft202012Validator

        key = f"[{item}]"
        if key not in self._validators:
            root = {"type": "array", "items": {"$ref": f"#/components/schemas/{item}"},
                    "components": self._components}
            self._validators[key] = Draft202012Validator(root)
        return self._validators[key]

    def errors(self, name: str, instance: Any) -> list[str]:
        """Readable violations of schema `name` (`[Item]` for an array of Item)."""
        v = self.array_validator(name[1:-1]) if name.startswith("[") else self.validator(name)
        return [f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
                for e in v.iter_errors(instance)]
