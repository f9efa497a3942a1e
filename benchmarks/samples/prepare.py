"""Build (if missing) the sample models into the models dir, safely and reproducibly.

- ``models_dir()``: ``$ABTEST_MODELS_DIR``, else ``./models`` (relative to the cwd).
- ``ensure_models()``: returns ``{"hrm-tiny": path, "llama-tiny": path}``, building the
  missing ones. A model dir counts as present only when complete: each model is written
  into a temp dir next to its final place and renamed into place in one step, so an
  interrupted build never leaves a half model. An exclusive file lock
  (``<models_dir>/.build.lock``) keeps two processes from building at once; the second
  waits, then finds the models present.
- Each model dir also gets ``abtest_sample.json``: seed, recipe, build seconds and the
  held-out accuracy measured right after training.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.samples.evaluation import evaluate

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = [
    "METADATA_FILE",
    "MODEL_NAMES",
    "REQUIRED_FILES",
    "build_models",
    "ensure_models",
    "evaluate",
    "is_complete",
    "models_dir",
    "read_metadata",
]

MODEL_NAMES: tuple[str, ...] = ("hrm-tiny", "llama-tiny")
METADATA_FILE = "abtest_sample.json"
REQUIRED_FILES: tuple[str, ...] = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    METADATA_FILE,
)


def models_dir() -> Path:
    """``$ABTEST_MODELS_DIR`` if set, else ``./models`` relative to the current directory."""
    env = os.environ.get("ABTEST_MODELS_DIR")
    return Path(env) if env else Path.cwd() / "models"


def is_complete(path: Path) -> bool:
    """True when ``path`` holds every file of a finished sample model."""
    return path.is_dir() and all((path / name).is_file() for name in REQUIRED_FILES)


def read_metadata(path: Path) -> dict[str, Any]:
    """The ``abtest_sample.json`` of a model dir (empty dict when missing or unreadable)."""
    try:
        data = json.loads((path / METADATA_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _install(tmp: Path, final: Path) -> None:
    """Move a finished ``tmp`` dir to ``final`` (replacing an old one) with renames only."""
    if final.exists():
        old = final.with_name(f".old-{final.name}-{os.getpid()}")
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def build_models(names: Sequence[str], root: Path, seed: int = 0, progress: bool = True) -> dict[str, Path]:
    """Train ``names`` and install them under ``root`` (no lock, no presence check)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from benchmarks.samples.data import DataConfig, build_training_data, tokenizer_corpus
    from benchmarks.samples.tokenizer import train_tokenizer
    from benchmarks.samples.train import default_specs, save_model, train_model

    specs = default_specs()
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ValueError(f"unknown sample model(s) {unknown}; valid: {', '.join(specs)}")
    t0 = time.perf_counter()
    tokenizer = train_tokenizer(tokenizer_corpus(seed))
    data_cfg = DataConfig(seed=seed)
    data = build_training_data(tokenizer, data_cfg)
    data_seconds = time.perf_counter() - t0
    built: dict[str, Path] = {}
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, disable=not progress, transient=False) as bar:
        for name in names:
            spec = specs[name]
            task = bar.add_task(f"training {name}", total=spec.steps, loss=float("nan"))
            t1 = time.perf_counter()
            model = train_model(
                spec,
                tokenizer,
                data,
                seed=seed,
                progress=_bar_updater(bar, task),
            )
            train_seconds = time.perf_counter() - t1
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=root))
            tmp.chmod(0o755)
            try:
                save_model(model, tokenizer, tmp)
                meta = {
                    "name": name,
                    "seed": seed,
                    "spec": asdict(spec),
                    "data": asdict(data_cfg),
                    "data_seconds": round(data_seconds, 2),
                    "train_seconds": round(train_seconds, 2),
                    "torch_threads": 2,
                }
                (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2))
                meta["heldout_accuracy"] = evaluate(tmp)
                (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2))
                _install(tmp, root / name)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            built[name] = root / name
    return built


def _remove_leftovers(root: Path) -> None:
    """Delete temp / replaced dirs of builds that were killed (only called under the lock)."""
    for pattern in (".tmp-*", ".old-*"):
        for path in root.glob(pattern):
            shutil.rmtree(path, ignore_errors=True)


def _bar_updater(bar: Progress, task: TaskID) -> Callable[[int, int, float], None]:
    def update(step: int, _total: int, loss: float) -> None:
        bar.update(task, completed=step, loss=loss)

    return update


def ensure_models(
    models_dir: Path | None = None, progress: bool = True, *, seed: int = 0, force: bool = False
) -> dict[str, Path]:
    """``{"hrm-tiny": path, "llama-tiny": path}``, building missing (or, with ``force``, all) models."""
    root = Path(models_dir) if models_dir is not None else _default_dir()
    root = root.resolve()
    paths = {name: root / name for name in MODEL_NAMES}
    if not force and all(is_complete(p) for p in paths.values()):
        return paths
    with _build_lock(root):
        _remove_leftovers(root)
        missing = [n for n, p in paths.items() if force or not is_complete(p)]
        if missing:
            build_models(missing, root, seed=seed, progress=progress)
    return paths


def _default_dir() -> Path:
    return models_dir()
