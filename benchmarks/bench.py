"""Run orchestration: validate everything, create the run dir, execute, render the outputs.

All input errors surface (as ValueError) before anything is written to disk.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.load.base import LoadProfile, parse_levels
from benchmarks.manifest import build_manifest, hardware, read_manifest, write_json_atomic
from benchmarks.outputs.jsonl import RecordSink, read_records
from benchmarks.records import Params, RequestItem, record_key
from benchmarks.requests.builtin import builtin_prompts
from benchmarks.requests.files import load_prompt_file
from benchmarks.requests.plan import RequestList, build_request_list, canonical_sha256
from benchmarks.runner import NullProgress, Progress, Runner, Schedule, block_schedule
from benchmarks.settings import RunSettings
from benchmarks.targets import BackendTarget, RouterTarget, Target

__all__ = ["Prepared", "execute", "prepare", "render", "resume", "start_run", "target_specs"]


@dataclass
class Prepared:
    settings: RunSettings
    levels: list[LoadProfile]
    request_list: RequestList
    specs: list[dict[str, Any]]
    targets: dict[str, Target]
    schedule: Schedule

    @property
    def block_size(self) -> int:
        return self.settings.block_size or 8

    @property
    def schedule_sha256(self) -> str:
        n = len(self.request_list.items)
        return canonical_sha256(
            {
                "levels": [[lv.label, lv.offsets(n)] for lv in self.levels],
                "segments": [list(s) for s in self.schedule.segments],
                "block_size": self.block_size,
            }
        )


def target_specs(s: RunSettings) -> list[dict[str, Any]]:
    """Backend specs (for create_backend) or router targets (`via_router` set)."""
    if s.via_router:
        hints: list[str | None] = list(s.router_backends) or [None]
        return [
            {"name": f"router/{h}" if h else "router", "via_router": s.via_router, "hint": h} for h in hints
        ]
    specs = list(s.targets)
    if s.config_path:
        try:
            from backends.config import backend_specs, load_config
        except ImportError as e:
            raise ValueError(f"--config needs backends.config ({e})") from None
        specs += backend_specs(load_config(Path(s.config_path)), s.config_path)
    return specs


def _make_target(spec: dict[str, Any], s: RunSettings) -> Target:
    if "via_router" in spec:
        return RouterTarget(
            spec["via_router"], hint=spec.get("hint"), timeout_s=s.timeout_s, stream=s.router_stream
        )
    if not spec.get("name") or not spec.get("kind"):
        raise ValueError(f"backend spec {spec!r} needs a 'name' and a 'kind'")
    from pydantic import ValidationError

    try:
        return BackendTarget(spec, timeout_s=s.timeout_s, stream=s.stream)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        raise ValueError(
            f"backend {spec['name']!r} (kind {spec['kind']}): field {field!r}: {first['msg']}"
        ) from None


def _prompts(s: RunSettings, levels: list[LoadProfile]) -> list[Any]:
    n = s.n
    if s.duration_s is not None:
        if n is not None:
            raise ValueError("--n and --duration conflict: give one")
        rates = [lv.rate for lv in levels if lv.rate]
        if not rates:
            raise ValueError("--duration needs --rate (the open-loop schedule sets how many requests fit)")
        n = math.ceil(s.duration_s * max(rates))
    if s.prompts_file:
        raws = load_prompt_file(Path(s.prompts_file))
        gen = [r for r in raws if not r.choices]
        mc = [r for r in raws if r.choices]
        if n is not None and gen:
            k = len(gen)
            gen = [
                gen[i]
                if i < k
                else replace(gen[i % k], id=f"{gen[i % k].id}-{i // k}" if gen[i % k].id else None)
                for i in range(n)
            ]
        return gen + mc
    return builtin_prompts(s.prompt_set, n or 48, s.seed)


def auto_block_size(levels: list[LoadProfile]) -> int:
    """Blocks long enough that a level's load is reached: 4x the largest concurrency, or ~2 s of
    arrivals at the highest rate; at least 8 requests."""
    conc = max((lv.concurrency or 0 for lv in levels), default=0)
    rate = max((lv.rate or 0.0 for lv in levels), default=0.0)
    return max(8, 4 * conc, math.ceil(2 * rate))


def prepare(s: RunSettings) -> Prepared:
    """Validate every input and build targets (without starting them). Raises ValueError."""
    levels = parse_levels(s.concurrency, s.rate, s.arrival, s.seed, s.burstiness)
    if s.block_size is None:
        s = s.model_copy(update={"block_size": auto_block_size(levels)})
    raws = _prompts(s, levels)
    rl = build_request_list(
        raws, Params(s.max_tokens, s.temperature, s.top_p, None, ()), seed=s.seed, warmup=s.warmup
    )
    if not rl.items:
        raise ValueError("the prompt set has no generation prompts")
    specs = target_specs(s)
    if not specs:
        raise ValueError("no targets: give --backend, --config or --via-router")
    names = [str(sp.get("name")) for sp in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"backend names must be unique, got {names}")
    if s.reference is not None and s.reference not in names:
        raise ValueError(f"--reference {s.reference!r} is not a target; targets: {', '.join(names)}")
    targets = {n: _make_target(sp, s) for n, sp in zip(names, specs, strict=True)}
    schedule = block_schedule(names, len(rl.items), s.block_size or 8, s.repeats, s.order, s.seed)
    return Prepared(s, levels, rl, specs, targets, schedule)


def _new_run_dir(s: RunSettings) -> Path:
    root = Path(s.results_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in s.name) or "run"
    d = root / f"{stamp}-{safe}"
    k = 1
    while d.exists():
        k += 1
        d = root / f"{stamp}-{safe}-{k}"
    d.mkdir(parents=True)
    return d


def start_run(p: Prepared, command: list[str] | None = None) -> Path:
    """Create the run dir with its manifest and request list (the only files before execution)."""
    run_dir = _new_run_dir(p.settings)
    manifest = build_manifest(
        command=command if command is not None else sys.argv,
        settings=p.settings.model_dump(),
        request_list_sha256=p.request_list.sha256,
        schedule_sha256=p.schedule_sha256,
        targets=[_public_spec(sp) for sp in p.specs],
    )
    manifest["levels"] = [lv.label for lv in p.levels]
    if p.settings.config_path:
        text = Path(p.settings.config_path).read_text(encoding="utf-8")
        manifest["config"] = {"path": p.settings.config_path, "sha256": canonical_sha256(text), "text": text}
    manifest["block_order"] = p.schedule.order_labels
    write_json_atomic(run_dir / "request_list.json", p.request_list.to_dict())
    write_json_atomic(run_dir / "manifest.json", manifest)
    return run_dir


_SECRET_FIELDS = frozenset({"api_key", "token", "password", "secret", "authorization"})


def _public_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Specs as stored in the manifest (and used by --resume). Backends take secrets by reference
    (`api_key_env`, `api_key_file`), so only literal secret fields are masked."""
    return {k: ("***" if k.lower() in _SECRET_FIELDS else v) for k, v in spec.items()}


def execute(run_dir: Path, p: Prepared, progress: Progress | None = None) -> None:
    """Run (or continue) the benchmark into run_dir. On Ctrl-C the manifest says 'interrupted'."""
    manifest = read_manifest(run_dir)
    sink = RecordSink(run_dir / "requests.jsonl")
    sink.open()
    done = {record_key(d) for d in read_records(sink.path)}
    runner = Runner(
        targets=p.targets,
        levels=p.levels,
        request_list=p.request_list,
        sink=sink,
        schedule=p.schedule,
        block_size=p.block_size,
        done=done,
        progress=progress or NullProgress(),
        cross_score=p.settings.cross_score,
    )
    try:
        asyncio.run(runner.run())
    except KeyboardInterrupt:
        manifest["status"] = "interrupted"
        write_json_atomic(run_dir / "manifest.json", manifest)
        raise
    finally:
        sink.close()
    manifest["status"] = "complete"
    manifest["hardware"] = hardware()  # again: in-process backends have loaded torch by now
    write_json_atomic(run_dir / "manifest.json", manifest)


def render(run_dir: Path) -> dict[str, Any]:
    """(Re)compute the summary from raw records and write every output file."""
    from benchmarks.analysis import analyze
    from benchmarks.outputs.report_html import write_html
    from benchmarks.outputs.report_md import write_markdown
    from benchmarks.outputs.summary import write_summary

    summary = analyze(run_dir)
    write_summary(run_dir, summary)
    write_markdown(run_dir, summary)
    write_html(run_dir, summary, read_records(run_dir / "requests.jsonl"))
    return summary


def resume(run_dir: Path) -> Prepared:
    """Rebuild a run's plan from its manifest and stored request list (hash-checked)."""
    manifest = read_manifest(run_dir)
    s = RunSettings.model_validate(manifest["settings"])
    rl_data = json.loads((run_dir / "request_list.json").read_text(encoding="utf-8"))
    rl = RequestList(
        tuple(RequestItem.from_dict(d) for d in rl_data["items"]),
        tuple(RequestItem.from_dict(d) for d in rl_data["warmup"]),
        tuple(RequestItem.from_dict(d) for d in rl_data["scoring"]),
    )
    if rl.sha256 != manifest["request_list_sha256"]:
        raise ValueError(f"{run_dir}: request_list.json does not match the manifest hash")
    levels = parse_levels(s.concurrency, s.rate, s.arrival, s.seed, s.burstiness)
    specs = manifest["targets"]
    names = [sp["name"] for sp in specs]
    targets = {n: _make_target(sp, s) for n, sp in zip(names, specs, strict=True)}
    schedule = block_schedule(names, len(rl.items), s.block_size or 8, s.repeats, s.order, s.seed)
    p = Prepared(s, levels, rl, specs, targets, schedule)
    if p.schedule_sha256 != manifest["schedule_sha256"]:
        raise ValueError(f"{run_dir}: rebuilt schedule does not match the manifest hash")
    return p
