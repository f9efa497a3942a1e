"""Training data for the sample models: seeded texts, tokenized with answer-only labels.

Task examples come from the *train* split only (see `benchmarks.samples.tasks`). Each
row is ``BOS + prompt + " " + reference + EOS`` with labels ``-100`` on BOS and the prompt,
so the loss covers the answer and the EOS. Free-text sentences are trained on in full.
Rows are right padded (pad label ``-100``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.samples.tasks import TASKS, free_text_sentences, task_examples

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerFast

__all__ = ["DataConfig", "TrainingData", "build_training_data", "tokenizer_corpus"]

IGNORE = -100


@dataclass(frozen=True)
class DataConfig:
    examples_per_task: int = 6000
    free_text: int = 3000
    seed: int = 0


@dataclass
class TrainingData:
    input_ids: torch.Tensor  # (N, T) right padded with pad id
    labels: torch.Tensor  # (N, T), IGNORE on prompt and padding
    lengths: torch.Tensor  # (N,) real lengths

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows ``index`` cut to their longest real length: (input_ids, attention_mask, labels)."""
        import torch

        width = int(self.lengths[index].max())
        ids = self.input_ids[index, :width]
        mask = (torch.arange(width)[None, :] < self.lengths[index][:, None]).long()
        return ids, mask, self.labels[index, :width]


def _train_examples(cfg: DataConfig) -> list[tuple[str, str]]:
    """(prompt, completion) pairs; the prompt of free text is empty."""
    pairs = [
        (ex.prompt, ex.completion)
        for ex in task_examples(cfg.examples_per_task * len(TASKS), cfg.seed, split="train")
    ]
    pairs += [("", s) for s in free_text_sentences(cfg.free_text, cfg.seed)]
    random.Random(f"shuffle:{cfg.seed}").shuffle(pairs)
    return pairs


def tokenizer_corpus(seed: int) -> list[str]:
    """Texts the BPE is trained on: a seeded sample of every task (train split) plus free text."""
    texts = task_examples(300 * len(TASKS), seed + 1, split="train")
    return [ex.prompt + ex.completion for ex in texts] + free_text_sentences(600, seed + 1)


def build_training_data(tokenizer: PreTrainedTokenizerFast, cfg: DataConfig) -> TrainingData:
    import torch

    pairs = _train_examples(cfg)
    eos = tokenizer.eos_token_id
    prompts = tokenizer([p for p, _ in pairs], add_special_tokens=True)["input_ids"]
    answers = tokenizer([c for _, c in pairs], add_special_tokens=False)["input_ids"]
    rows: list[tuple[list[int], list[int]]] = []
    for (prompt_text, _), p_ids, a_ids in zip(pairs, prompts, answers, strict=True):
        ids = list(p_ids) + list(a_ids) + [eos]
        n_masked = len(p_ids) if prompt_text else 1  # free text: only BOS is not predicted
        rows.append((ids, [IGNORE] * n_masked + ids[n_masked:]))
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    lengths = torch.empty(len(rows), dtype=torch.long)
    for i, (ids, labs) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        labels[i, : len(labs)] = torch.tensor(labs)
        lengths[i] = len(ids)
    return TrainingData(input_ids=input_ids, labels=labels, lengths=lengths)
