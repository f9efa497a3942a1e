"""manifest.json: how a run was made (command, settings, seed, hashes, git sha, versions, hardware)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["build_manifest", "git_sha", "hardware", "read_manifest", "write_json_atomic"]

_PACKAGES = (
    "abtest",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "scipy",
    "pandas",
    "httpx",
    "fastapi",
    "uvicorn",
    "pydantic",
    "typer",
    "rich",
)


def git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in _PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def hardware() -> dict[str, Any]:
    hw: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    try:
        import psutil

        hw["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        hw["torch_threads"] = int(torch.get_num_threads())
        hw["cuda"] = bool(torch.cuda.is_available())
        if hw["cuda"]:
            hw["gpu"] = torch.cuda.get_device_name(0)
    return hw


def build_manifest(
    *,
    command: list[str],
    settings: dict[str, Any],
    request_list_sha256: str,
    schedule_sha256: str,
    targets: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "abtest_manifest": 1,
        "status": "running",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "settings": settings,
        "seed": settings.get("seed"),
        "request_list_sha256": request_list_sha256,
        "schedule_sha256": schedule_sha256,
        "targets": targets,
        "git_sha": git_sha(),
        "versions": _versions(),
        "hardware": hardware(),
    }


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, default=str, allow_nan=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise ValueError(f"{run_dir}: not a run directory (no manifest.json)")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
