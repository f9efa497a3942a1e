"""Print log-likelihood parity and greedy agreement across adapters on the sample model.

    python -m tests.backends.parity_report [--models-dir models] [-n 50]
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from backends.base import create_backend
from backends.types import SamplingParams
from benchmarks.samples.tasks import task_examples
from tests.doubles import start_tgi_double, start_vllm_double


async def _report(model: Path, vllm_url: str, tgi_url: str, n: int) -> None:
    examples = task_examples(n, seed=11)
    prompts, conts = [e.prompt for e in examples], [" " + e.reference for e in examples]
    backends = {
        "hf": create_backend({"name": "hf", "kind": "hf", "model": str(model), "device": "cpu"}),
        "hrm": create_backend({"name": "hrm", "kind": "hrm", "model": str(model), "device": "cpu"}),
        "vllm-double": create_backend({"name": "vllm", "kind": "vllm", "url": vllm_url}),
        "tgi-double": create_backend({"name": "tgi", "kind": "tgi", "url": tgi_url}),
    }
    for b in backends.values():
        await b.start()
    try:
        scores = {k: await b.loglikelihood(prompts, conts) for k, b in backends.items()}
        for name, got in scores.items():
            delta = max(abs(a.ll - b.ll) for a, b in zip(scores["hf"], got))
            print(f"{name:12s} max |ll - ll_hf| = {delta:.2e} over {n} pairs")
        greedy = SamplingParams(max_tokens=16, temperature=0.0)
        hf, hrm = await backends["hf"].generate(prompts, greedy), await backends["hrm"].generate(prompts, greedy)
        same = sum(a.text == b.text and a.completion_tokens == b.completion_tokens for a, b in zip(hf, hrm))
        print(f"greedy hrm == hf: {same}/{n}")
    finally:
        for b in backends.values():
            await b.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models-dir", type=Path, default=Path("models"))
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    model = args.models_dir / "hrm-tiny"
    with start_vllm_double(model, served_name="hrm-tiny") as v, start_tgi_double(model) as t:
        asyncio.run(_report(model, v, t, args.n))


if __name__ == "__main__":
    main()
