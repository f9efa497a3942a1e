"""Engine speed check: our HRM engine vs transformers `generate()` on the same checkpoint.

    python -m benchmarks.perf_engine --model models/hrm-tiny [--repeats 3] [--json out.json]

- Static batches (1, 8, 32 by default): the same prompts, greedy, exactly `--new-tokens`
  tokens each (EOS ignored on both sides), the two engines interleaved per repeat; the
  median tokens/s of each and their ratio are printed, with the "matmul-only bound": the
  ratio an engine would reach if everything but its matrix multiplies took no time.
- Continuous batching: `--concurrent` requests submitted at once to `AsyncHrmEngine`
  vs one request alone; aggregate tokens/s ratio.
- Peak RSS of a fresh process that loads the engine and generates a batch of 32.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

_FALLBACK_PROMPTS = [
    "copy: hello world ->",
    "reverse: abcdef ->",
    "sort: 5 3 9 1 ->",
    "The quick brown fox",
    "Once upon a time",
    "add: 3 + 4 =",
    "The weather today is",
    "In a hole in the ground",
]


def _prompts(n: int) -> list[str]:
    try:
        from benchmarks.samples.tasks import free_text_prompts

        return list(free_text_prompts(n, seed=0))
    except Exception:  # noqa: BLE001 - sample tasks not available: fixed prompts
        return [_FALLBACK_PROMPTS[i % len(_FALLBACK_PROMPTS)] + f" {i}" for i in range(n)]


def _resolve_model(path: Path) -> Path:
    if (path / "config.json").is_file():
        return path
    from benchmarks.samples.prepare import ensure_models

    return ensure_models(path.parent)[path.name]


def _time_ours(engine: Any, prompts: list[str], new_tokens: int) -> float:
    from hrm.params import SamplingParams

    params = SamplingParams(max_tokens=new_tokens, temperature=0.0, ignore_eos=True)
    t0 = time.perf_counter()
    outs = engine.generate(prompts, params)
    dt = time.perf_counter() - t0
    return sum(len(o.token_ids) for o in outs) / dt


def _time_hf(model: Any, tok: Any, prompts: list[str], new_tokens: int) -> float:
    import torch

    enc = tok(prompts, return_tensors="pt", padding=True)
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            **enc,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=None,
        )
    dt = time.perf_counter() - t0
    return (out.shape[1] - enc["input_ids"].shape[1]) * len(prompts) / dt


def _matmul_step_s(engine: Any, batch: int, repeats: int = 200) -> float:
    """Seconds per decode step spent in the step's matrix multiplies alone (every projection
    of every recurrence step, plus the LM head, at `batch` rows): a floor no eager engine
    beats without doing fewer FLOPs, so `hf step time / this` bounds the reachable ratio."""
    import torch

    W, cfg = engine.runner.weights, engine.runner.cfg
    applied = [w for _ in range(cfg.H_cycles) for w in W.L * cfg.L_cycles + W.H]
    x = torch.randn(batch, cfg.hidden_size)
    mlp_in = torch.randn(batch, cfg.intermediate_size)
    attn_out = torch.randn(batch, W.L[0].o_t.shape[0])

    def step() -> None:
        for w in applied:
            torch.mm(x, w.gqkv_t), torch.addmm(x, attn_out, w.o_t)
            torch.mm(x, w.gate_up_t), torch.addmm(x, mlp_in, w.down_t)
        torch.mm(x, W.lm_head.t())

    with torch.inference_mode():
        for _ in range(20):
            step()
        t0 = time.perf_counter()
        for _ in range(repeats):
            step()
    return (time.perf_counter() - t0) / repeats


async def _continuous(engine: Any, prompts: list[str], new_tokens: int) -> tuple[float, float]:
    from hrm.async_engine import AsyncHrmEngine
    from hrm.params import SamplingParams

    params = SamplingParams(max_tokens=new_tokens, temperature=0.0, ignore_eos=True)
    aeng = AsyncHrmEngine(engine)
    await aeng.start()
    try:
        await aeng.generate(prompts[0], params)  # warm-up
        t0 = time.perf_counter()
        one = await aeng.generate(prompts[0], params)
        single = len(one.token_ids) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        outs = await asyncio.gather(*(aeng.generate(p, params) for p in prompts))
        agg = sum(len(o.token_ids) for o in outs) / (time.perf_counter() - t0)
    finally:
        await aeng.stop()
    return single, agg


def _rss_probe(model: Path, batch: int, new_tokens: int) -> None:
    import resource

    import psutil

    from hrm.engine import HrmEngine

    engine = HrmEngine.from_pretrained(model, device="cpu", dtype="float32")
    _time_ours(engine, _prompts(batch), new_tokens)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss = psutil.Process().memory_info().rss
    print(json.dumps({"peak_rss_mb": peak_kb / 1024, "rss_mb": rss / 2**20}))


def _peak_rss(model: Path, batch: int, new_tokens: int) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.perf_engine",
        "--model",
        str(model),
        "--rss-probe",
        "--new-tokens",
        str(new_tokens),
        "--rss-batch",
        str(batch),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return dict(json.loads(out))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer, HrmTextForCausalLM

    from hrm.engine import HrmEngine

    if args.threads:
        torch.set_num_threads(args.threads)
    model_dir = _resolve_model(Path(args.model))
    engine = HrmEngine.from_pretrained(
        model_dir, device="cpu", dtype="float32", max_batch_size=max(*args.batches, args.concurrent)
    )
    hf = HrmTextForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir), padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    prompts = _prompts(max(max(args.batches), args.concurrent))
    samples: dict[int, dict[str, list[float]]] = {b: {"ours": [], "hf": []} for b in args.batches}
    for b in args.batches:  # warm-up
        _time_ours(engine, prompts[:b], 4)
        _time_hf(hf, tok, prompts[:b], 4)
    for _ in range(args.repeats):
        for b in args.batches:
            samples[b]["ours"].append(_time_ours(engine, prompts[:b], args.new_tokens))
            samples[b]["hf"].append(_time_hf(hf, tok, prompts[:b], args.new_tokens))
    report: dict[str, Any] = {
        "model": str(model_dir),
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "static": {},
    }
    print(f"{'batch':>5} {'ours tok/s':>11} {'hf tok/s':>10} {'ratio':>6} {'matmul-only bound':>18}")
    for b in args.batches:
        ours, ref = statistics.median(samples[b]["ours"]), statistics.median(samples[b]["hf"])
        bound = (b / ref) / _matmul_step_s(engine, b)
        report["static"][str(b)] = {"ours_tok_s": ours, "hf_tok_s": ref, "ratio": ours / ref, "bound": bound}
        print(f"{b:>5} {ours:>11.0f} {ref:>10.0f} {ours / ref:>6.2f} {bound:>17.2f}x")
    cb = [
        asyncio.run(_continuous(engine, prompts[: args.concurrent], args.new_tokens))
        for _ in range(args.repeats)
    ]
    single, agg = statistics.median(c[0] for c in cb), statistics.median(c[1] for c in cb)
    report["continuous"] = {
        "concurrent": args.concurrent,
        "single_tok_s": single,
        "aggregate_tok_s": agg,
        "ratio": agg / single,
    }
    print(
        f"continuous batching: 1 stream {single:.0f} tok/s, {args.concurrent} concurrent {agg:.0f} tok/s "
        f"aggregate, ratio {agg / single:.2f}"
    )
    if not args.skip_rss:
        report["rss"] = _peak_rss(model_dir, 32, args.new_tokens)
        print(f"peak RSS at batch 32: {report['rss']['peak_rss_mb']:.0f} MB")
    return report


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/hrm-tiny")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 32])
    ap.add_argument("--concurrent", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--threads", type=int, default=1, help="torch threads for both engines (0 = torch default)"
    )
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures to this file")
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--rss-probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rss-batch", type=int, default=32, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_probe:
        _rss_probe(Path(args.model), args.rss_batch, args.new_tokens)
        return
    report = run(args)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
