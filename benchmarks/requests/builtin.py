"""Built-in seeded prompt sets, built on `benchmarks.samples.tasks`."""

from __future__ import annotations

import random
from collections.abc import Callable

from benchmarks.requests.files import RawPrompt

__all__ = ["builtin_prompts", "builtin_sets"]

PromptSet = Callable[[int, int], list[RawPrompt]]


def _tasks(n: int, seed: int) -> list[RawPrompt]:
    from benchmarks.samples.tasks import task_examples

    return [RawPrompt(e.prompt, e.reference, task=e.task) for e in task_examples(n, seed)]


def _free(n: int, seed: int) -> list[RawPrompt]:
    from benchmarks.samples.tasks import free_text_prompts

    return [RawPrompt(p, task="free") for p in free_text_prompts(n, seed)]


def _mc(n: int, seed: int) -> list[RawPrompt]:
    """Multiple choice: each task example's completion (" " + reference) among 3 distractors."""
    from benchmarks.samples.tasks import task_examples

    pool = task_examples(max(4 * n, 8), seed + 7919)
    rng = random.Random(seed)
    out: list[RawPrompt] = []
    for ex in pool[:n]:
        others = sorted({e.completion for e in pool if e.reference != ex.reference and e.task == ex.task})
        if len(others) < 3:
            others = sorted({e.completion for e in pool if e.reference != ex.reference})
        choices = [ex.completion, *rng.sample(others, 3)]
        rng.shuffle(choices)
        out.append(
            RawPrompt(ex.prompt, ex.reference, tuple(choices), choices.index(ex.completion), f"mc-{ex.task}")
        )
    return out


def _default(n: int, seed: int) -> list[RawPrompt]:
    """Two thirds task prompts with references, one third free text, plus n/4 multiple-choice items."""
    n_free = n // 3
    return _tasks(n - n_free, seed) + _free(n_free, seed + 1) + _mc(max(1, n // 4), seed + 2)


def builtin_sets() -> dict[str, PromptSet]:
    return {"default": _default, "tasks": _tasks, "free": _free, "mc": _mc}


def builtin_prompts(name: str, n: int, seed: int) -> list[RawPrompt]:
    sets = builtin_sets()
    if name not in sets:
        raise ValueError(f"unknown prompt set {name!r}; valid sets: {', '.join(sorted(sets))}")
    return sets[name](n, seed)
