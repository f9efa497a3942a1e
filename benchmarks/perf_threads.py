"""Why in-process CPU engines default to one torch thread (see hrm/threads.py).

    python -m benchmarks.perf_threads --model models/hrm-tiny [--threads 1,2] [--repeats 5]

For each thread count, in a fresh process: greedy 64-token generation of one prompt,
timed on the main thread (`HrmEngine.generate`) and through `AsyncHrmEngine`, whose step
loop runs on its own worker thread as it does in the HRM server and the `hrm` backend.
Prints tokens/s for both, median of `--repeats`, measured side by side in one process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

__all__ = ["main"]


def _probe(model: str, threads: int, new_tokens: int, repeats: int) -> dict[str, Any]:
    import torch

    from benchmarks.perf_engine import _prompts
    from hrm.async_engine import AsyncHrmEngine
    from hrm.engine import HrmEngine
    from hrm.params import SamplingParams

    torch.set_num_threads(threads)
    engine = HrmEngine.from_pretrained(model, device="cpu", dtype="float32")
    prompt = _prompts(1)
    params = SamplingParams(max_tokens=new_tokens, temperature=0.0, ignore_eos=True)

    def on_main() -> float:
        t0 = time.perf_counter()
        out = engine.generate(prompt, params)[0]
        return len(out.token_ids) / (time.perf_counter() - t0)

    async def on_worker() -> list[float]:
        aeng = AsyncHrmEngine(engine)
        await aeng.start()
        try:
            await aeng.generate(prompt[0], params)  # warm-up
            rates = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                out = await aeng.generate(prompt[0], params)
                rates.append(len(out.token_ids) / (time.perf_counter() - t0))
            return rates
        finally:
            await aeng.stop()

    on_main()  # warm-up
    main_rates = [on_main() for _ in range(repeats)]
    worker_rates = asyncio.run(on_worker())
    return {
        "threads": torch.get_num_threads(),
        "main_tok_s": statistics.median(main_rates),
        "worker_tok_s": statistics.median(worker_rates),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/hrm-tiny")
    ap.add_argument("--threads", type=lambda s: [int(x) for x in s.split(",")], default=None,
                    help="comma-separated thread counts (default: 1 and the CPU count)")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--probe", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probe is not None:
        print(json.dumps(_probe(args.model, args.probe, args.new_tokens, args.repeats)))
        return
    counts = args.threads or sorted({1, os.cpu_count() or 1})
    print(f"{'threads':>7} {'main thread tok/s':>18} {'worker thread tok/s':>20} {'worker/main':>11}")
    for n in counts:
        cmd = [sys.executable, "-m", "benchmarks.perf_threads", "--model", args.model, "--probe", str(n),
               "--new-tokens", str(args.new_tokens), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        r = json.loads(out)
        ratio = r["worker_tok_s"] / r["main_tok_s"]
        print(f"{r['threads']:>7} {r['main_tok_s']:>18.0f} {r['worker_tok_s']:>20.0f} {ratio:>11.2f}")


if __name__ == "__main__":
    main()
