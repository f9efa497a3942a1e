"""Held-out task accuracy of a model dir, with transformers greedy ``generate`` (batched, left padding)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.samples.tasks import TASKS, TaskExample, score, task_examples

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

__all__ = ["EVAL_SEED", "accuracy", "evaluate", "generate_greedy"]

EVAL_SEED = 1234


def generate_greedy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    prompts: Sequence[str],
    max_new_tokens: int = 16,
    batch_size: int = 32,
) -> list[str]:
    """Greedy completions (special tokens dropped) for ``prompts``, batched with left padding."""
    import torch

    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    out: list[str] = []
    try:
        for start in range(0, len(prompts), batch_size):
            chunk = list(prompts[start : start + batch_size])
            enc = tokenizer(chunk, return_tensors="pt", padding=True)
            with torch.inference_mode():
                gen = cast(Any, model).generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=tokenizer.eos_token_id,
                )
            new = gen[:, enc["input_ids"].shape[1] :]
            out += tokenizer.batch_decode(new, skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
    return out


def accuracy(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, examples: Sequence[TaskExample]
) -> dict[str, float]:
    """Per-task fraction of ``examples`` that ``score`` accepts."""
    completions = generate_greedy(model, tokenizer, [ex.prompt for ex in examples])
    hits: dict[str, list[bool]] = {}
    for ex, completion in zip(examples, completions, strict=True):
        hits.setdefault(ex.task, []).append(score(ex, completion))
    return {task: sum(v) / len(v) for task, v in hits.items()}


def evaluate(
    model_dir: Path, n: int = 50, seed: int = EVAL_SEED, tasks: Sequence[str] | None = None
) -> dict[str, float]:
    """Held-out accuracy per task of the model in ``model_dir``, ``n`` prompts per task."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    names = tuple(tasks) if tasks is not None else TASKS
    tokenizer: Any = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    examples = [ex for task in names for ex in task_examples(n, seed, [task])]
    return accuracy(model, tokenizer, examples)
