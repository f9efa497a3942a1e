"""Seeded synthetic tasks with checkable answers, and seeded free-text prompts.

These are the sample models' training data *and* the benchmark's built-in prompt sets.

Prompt format (one line, no trailing space)::

    add: 3 + 5 =            -> " 8"
    copy: k d m a =         -> " k d m a"
    reverse: k d m a =      -> " a m d k"
    sort: k d m a =         -> " a d k m"

The model is trained on ``prompt + " " + reference + EOS`` with the loss on the answer
(and EOS) only, so a trained model answers and then stops. ``score`` checks a completion:
it is correct when the completion, cut at the first newline and stripped of surrounding
whitespace, equals the reference exactly.

Train / held-out split: every prompt is hashed (SHA-256 of the prompt text); prompts whose
hash bucket is ``0`` (1 in ``HELDOUT_BUCKETS``) are held out and never used for training.
``task_examples(..., split="heldout")`` (the default, used for evaluation and benchmarks)
draws only held-out prompts; ``split="train"`` draws only the others. Since the split is a
function of the prompt text, it holds across any seeds.

Free text: ``free_text_sentences`` builds simple template sentences (used as plain LM
training text); ``free_text_prompts`` returns the first few words of such sentences, for
open-ended generation benchmarks.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "HELDOUT_BUCKETS",
    "TASKS",
    "Split",
    "TaskExample",
    "free_text_prompts",
    "free_text_sentences",
    "is_heldout",
    "make_example",
    "normalize_completion",
    "score",
    "task_examples",
]

TASKS: tuple[str, ...] = ("add", "copy", "reverse", "sort")
HELDOUT_BUCKETS = 10  # 1 in 10 prompts (by hash) is held out
Split = Literal["train", "heldout", "all"]

_LETTERS = string.ascii_lowercase
_MIN_LEN = 3
_MAX_LEN = 6


@dataclass(frozen=True)
class TaskExample:
    """One prompt with its checkable answer. ``reference`` has no leading space."""

    task: str
    prompt: str
    reference: str

    @property
    def completion(self) -> str:
        """The training target that follows the prompt (EOS is added by the tokenizer side)."""
        return " " + self.reference


def _letters(rng: random.Random) -> list[str]:
    return [rng.choice(_LETTERS) for _ in range(rng.randint(_MIN_LEN, _MAX_LEN))]


def _add(rng: random.Random) -> TaskExample:
    a, b = rng.randint(0, 9), rng.randint(0, 9)
    return TaskExample("add", f"add: {a} + {b} =", str(a + b))


def _copy(rng: random.Random) -> TaskExample:
    xs = _letters(rng)
    return TaskExample("copy", f"copy: {' '.join(xs)} =", " ".join(xs))


def _reverse(rng: random.Random) -> TaskExample:
    xs = _letters(rng)
    return TaskExample("reverse", f"reverse: {' '.join(xs)} =", " ".join(reversed(xs)))


def _sort(rng: random.Random) -> TaskExample:
    xs = _letters(rng)
    return TaskExample("sort", f"sort: {' '.join(xs)} =", " ".join(sorted(xs)))


def _generators() -> dict[str, Callable[[random.Random], TaskExample]]:
    return {"add": _add, "copy": _copy, "reverse": _reverse, "sort": _sort}


def is_heldout(prompt: str) -> bool:
    """True when ``prompt`` belongs to the held-out split (never trained on)."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % HELDOUT_BUCKETS == 0


def _in_split(prompt: str, split: Split) -> bool:
    if split == "all":
        return True
    return is_heldout(prompt) == (split == "heldout")


def make_example(task: str, rng: random.Random) -> TaskExample:
    """One example of ``task`` from ``rng`` (either split)."""
    gens = _generators()
    if task not in gens:
        raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    return gens[task](rng)


def task_examples(
    n: int, seed: int, tasks: Sequence[str] | None = None, *, split: Split = "heldout"
) -> list[TaskExample]:
    """``n`` examples cycling through ``tasks`` (default: all), deterministic per ``seed``.

    Only prompts of ``split`` are returned (default held-out, i.e. safe for evaluation).
    Prompts may repeat (1-digit addition has only 100 distinct prompts).
    """
    names = tuple(tasks) if tasks is not None else TASKS
    if not names:
        raise ValueError("tasks must not be empty")
    gens = _generators()
    for name in names:
        if name not in gens:
            raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}")
    rng = random.Random(f"tasks:{seed}")
    out: list[TaskExample] = []
    for i in range(n):
        gen = gens[names[i % len(names)]]
        while True:
            ex = gen(rng)
            if _in_split(ex.prompt, split):
                out.append(ex)
                break
    return out


_SUBJECTS = ("the cat", "a dog", "the bird", "my friend", "the old man", "a small child", "the teacher")
_VERBS = ("sees", "likes", "finds", "paints", "follows", "remembers", "carries")
_OBJECTS = ("a red ball", "the blue house", "an apple", "the green tree", "a big box", "the river")
_PLACES = ("in the park", "at home", "near the sea", "on the hill", "in the morning", "after school")


def free_text_sentences(n: int, seed: int) -> list[str]:
    """``n`` simple template sentences such as ``"the cat sees a red ball in the park."``"""
    rng = random.Random(f"text:{seed}")
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}."
        for _ in range(n)
    ]


def free_text_prompts(n: int, seed: int) -> list[str]:
    """``n`` open-ended prompts: the first 2-4 words of a seeded template sentence."""
    rng = random.Random(f"prompts:{seed}")
    sentences = free_text_sentences(n, seed)
    return [" ".join(s.split()[: rng.randint(2, 4)]) for s in sentences]


def normalize_completion(completion: str) -> str:
    """The part of a completion that ``score`` compares: up to the first newline, stripped."""
    return completion.split("\n", 1)[0].strip()


def score(example: TaskExample, completion: str) -> bool:
    """Exact match of ``normalize_completion(completion)`` with the reference."""
    return normalize_completion(completion) == example.reference
