"""The model a test double serves: transformers in-process, one request at a time."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DoubleLM", "Generated"]


@dataclass
class Generated:
    ids: list[int]
    logprobs: list[float]
    text: str
    finish: str  # "length" | "eos" | "stop"
    stop_hit: str | None = None
    token_texts: list[str] = field(default_factory=list)


class DoubleLM:
    def __init__(self, model_dir: str | Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)
        self.model_id = str(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        self.max_context = int(getattr(self.model.config, "max_position_embeddings", 2048))
        eos = self.model.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [self.tokenizer.eos_token_id])
        self._lock = threading.Lock()

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tokenizer(text, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.decode([token_id])

    def is_special(self, token_id: int) -> bool:
        return token_id in self.tokenizer.all_special_ids

    def prompt_scores(self, ids: list[int]) -> tuple[list[float | None], list[int | None], list[float | None]]:
        """log p(ids[i] | ids[:i]) for each position i (None at 0), and the argmax id and
        its log-prob at each position i (None at 0)."""
        import torch

        with self._lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0].float()
        lp = logits.log_softmax(-1)
        scores: list[float | None] = [None] + [float(lp[i - 1, ids[i]]) for i in range(1, len(ids))]
        best, arg = lp.max(-1)
        return scores, [None] + arg.tolist()[:-1], [None] + best.tolist()[:-1]

    def generate(self, ids: list[int], *, max_new: int, temperature: float | None, top_p: float | None,
                 seed: int | None, stops: list[str], ignore_eos: bool = False) -> Generated:
        """Token-by-token decoding; sampling when temperature is set, greedy otherwise."""
        import torch

        gen: list[int] = []
        lps: list[float] = []
        finish, hit = "length", None
        rng = torch.Generator().manual_seed(seed if seed is not None else torch.seed() % 2**63)
        with self._lock, torch.inference_mode():
            seq = list(ids)
            for _ in range(max_new):
                logits = self.model(input_ids=torch.tensor([seq])).logits[0, -1].float()
                logprobs = logits.log_softmax(-1)
                if temperature:
                    probs = (logits / temperature).softmax(-1)
                    if top_p is not None and top_p < 1.0:
                        sorted_p, order = probs.sort(descending=True)
                        keep = sorted_p.cumsum(0) - sorted_p < top_p
                        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
                    nxt = int(torch.multinomial(probs / probs.sum(), 1, generator=rng))
                else:
                    nxt = int(logits.argmax())
                if nxt in self.eos and not ignore_eos:
                    finish = "eos"
                    gen.append(nxt)
                    lps.append(float(logprobs[nxt]))
                    break
                gen.append(nxt)
                lps.append(float(logprobs[nxt]))
                seq.append(nxt)
                text = self.tokenizer.decode(gen, skip_special_tokens=True)
                hit = next((s for s in stops if text.endswith(s) or s in text), None)
                if hit:
                    finish = "stop"
                    break
        text = self.tokenizer.decode(gen, skip_special_tokens=True)
        return Generated(ids=gen, logprobs=lps, text=text, finish=finish, stop_hit=hit,
                         token_texts=[self.token_text(t) for t in gen])

    def info(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "max_context": self.max_context}
