"""`HrmEngine`: synchronous HRM-Text inference (generation and log-likelihood scoring).

`generate()` runs all prompts through the continuous-batching step loop (`step()`),
at most `max_batch_size` rows at a time; `AsyncHrmEngine` drives the same `step()` from
a worker thread. Requests are validated up front and errors name the offending field.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from collections.abc import Sequence as Seq
from pathlib import Path
from typing import Any

import torch

from hrm.actv1 import Actv1Runner, is_bundle, load_bundle
from hrm.actv1_model import Actv1Model
from hrm.errors import InvalidRequestError
from hrm.loader import load_model, resolve_device, resolve_dtype
from hrm.loglik import ScoreItem, encode_pair, score_batch
from hrm.model import HrmForCausalLM
from hrm.params import CompletionOutput, LoglikelihoodOutput, SamplingParams
from hrm.runner import ModelRunner
from hrm.sampling import sample_tokens, token_logprobs, uniforms
from hrm.scheduler import Scheduler
from hrm.sequence import Sequence

__all__ = ["HrmEngine", "validate_params"]

_CACHE_SEQ_ROUND = 64


def validate_params(p: SamplingParams) -> None:
    if not 0.0 <= p.temperature <= 2.0:
        raise InvalidRequestError(f"temperature must be in [0, 2], got {p.temperature}", field="temperature")
    if not 0.0 < p.top_p <= 1.0:
        raise InvalidRequestError(f"top_p must be in (0, 1], got {p.top_p}", field="top_p")
    if p.max_tokens < 1:
        raise InvalidRequestError(f"max_tokens must be >= 1, got {p.max_tokens}", field="max_tokens")
    if p.seed is not None and not 0 <= p.seed < 2**63:
        raise InvalidRequestError(f"seed must be in [0, 2**63), got {p.seed}", field="seed")
    if any(not s for s in p.stop):
        raise InvalidRequestError("stop strings must be non-empty", field="stop")


class HrmEngine:
    def __init__(
        self,
        model: HrmForCausalLM | Actv1Model,
        tokenizer: Any,
        *,
        model_id: str = "hrm",
        max_batch_size: int = 32,
        max_tokens_cap: int = 1024,
        context_window: int | None = None,
    ):
        cfg = model.cfg
        self.model, self.tokenizer, self.model_id = model, tokenizer, model_id
        self.max_batch_size, self.max_tokens_cap = max_batch_size, max_tokens_cap
        self.max_context = int(context_window or cfg.max_position_embeddings)
        self.prefix_lm = bool(cfg.prefix_lm)
        eos = set(cfg.eos_token_ids)
        if getattr(tokenizer, "eos_token_id", None) is not None:
            eos.add(int(tokenizer.eos_token_id))
        self.eos_ids = frozenset(eos)
        self._fallback_ctx = next(
            (
                t
                for t in (getattr(tokenizer, "bos_token_id", None), cfg.bos_token_id, *sorted(eos))
                if t is not None
            ),
            0,
        )
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
        self.runner: ModelRunner | Actv1Runner
        if isinstance(model, Actv1Model):  # AI-OS ACTV1 brain: bidirectional, recomputed each step
            self.runner = Actv1Runner(model, self.max_context, pad_id=pad)
        else:
            self.runner = ModelRunner(model, self.max_context, pad_id=pad)
        self.scheduler = Scheduler(max_batch_size)
        self.lock = threading.RLock()
        self._ids = itertools.count()
        self._rng = random.SystemRandom()
        self.driver: object | None = None  # the AsyncHrmEngine running this engine's step loop

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        device: str = "auto",
        dtype: str | torch.dtype = "auto",
        max_batch_size: int = 32,
        max_tokens_cap: int = 1024,
        context_window: int | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> HrmEngine:
        """Load a checkpoint directory: HRM-Text (config.json) or an AI-OS ACTV1 brain bundle
        (brain.json, see docs/actv1.md). `tokenizer_path` overrides where the tokenizer is
        loaded from. Torch's thread count is the caller's choice (see `hrm.threads`)."""
        from transformers import AutoTokenizer

        from hrm.config import HrmConfig

        root = Path(path)
        dev = resolve_device(device)
        model: HrmForCausalLM | Actv1Model
        if is_bundle(root):
            model, tokenizer = load_bundle(root, dev, dtype, tokenizer_path=tokenizer_path)
        else:
            dt = resolve_dtype(dtype, HrmConfig.from_file(root / "config.json"), dev)
            model = load_model(root, dev, dt)
            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path or root))
        return cls(
            model,
            tokenizer,
            model_id=root.name,
            max_batch_size=max_batch_size,
            max_tokens_cap=max_tokens_cap,
            context_window=context_window,
        )

    @property
    def device(self) -> torch.device:
        return self.runner.device

    @property
    def dtype(self) -> torch.dtype:
        return self.runner.dtype

    # -- requests ---------------------------------------------------------------------
    def _encode(self, text: str, special: bool = True) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    def make_sequence(
        self,
        prompt: str,
        params: SamplingParams,
        index: int = 0,
        *,
        incremental: bool = False,
        on_token: Callable[[Sequence, str], None] | None = None,
    ) -> Sequence:
        """Validate and tokenize one request (errors name `prompts[index]` or the param)."""
        validate_params(params)
        field = f"prompts[{index}]"
        if not isinstance(prompt, str) or not prompt:
            raise InvalidRequestError(f"{field} is empty", field=field)
        ids = self._encode(prompt)
        if not ids or len(ids) + 1 > self.max_context:
            raise InvalidRequestError(
                f"{field} has {len(ids)} tokens; the context window is {self.max_context} "
                "(prompt tokens + 1 must fit)",
                field=field,
            )
        max_tokens = min(params.max_tokens, self.max_tokens_cap, self.max_context - len(ids))
        seed = params.seed if params.seed is not None else self._rng.getrandbits(63)
        return Sequence(
            seq_id=next(self._ids),
            prompt_ids=ids,
            params=params,
            max_tokens=max_tokens,
            seed=seed,
            eos_ids=self.eos_ids,
            tokenizer=self.tokenizer,
            incremental=incremental or on_token is not None,
            on_token=on_token,
        )

    # -- the step loop ------------------------------------------------------------------
    def step(self) -> list[Sequence]:
        """Run one prefill or decode step; return the sequences that finished."""
        with self.lock, torch.inference_mode():
            sched = self.scheduler
            batch = sched.schedule()
            if not batch.seqs:
                return []
            if batch.is_prefill:
                self._reserve(len(sched.running), max(s.capacity for s in sched.running))
                logits = self.runner.prefill([s.prompt_ids for s in batch.seqs], batch.row0, self.prefix_lm)
            else:
                dev = self.device
                pos = [s.last_pos for s in batch.seqs]
                hi = max(pos)
                logits = self.runner.decode(
                    torch.tensor([s.output_ids[-1] for s in batch.seqs], device=dev),
                    torch.tensor(pos, device=dev),
                    hi + 1,
                    uniform=min(pos) == hi,
                )
            tokens, logprobs = self._sample(batch.seqs, logits)
            result = sched.postprocess(batch, tokens, logprobs)
            for src, dst in result.moves:
                self.runner.move_row(src, dst)
            return result.finished

    def _reserve(self, rows: int, seq: int) -> None:
        """Grow the KV cache in coarse steps (rows to a power of two, seq to a multiple of 64)."""
        rows = min(self.max_batch_size, 1 << (rows - 1).bit_length())
        self.runner.ensure_cache(rows, -(-seq // _CACHE_SEQ_ROUND) * _CACHE_SEQ_ROUND)

    def _sample(self, seqs: list[Sequence], logits: torch.Tensor) -> tuple[list[int], list[float]]:
        if all(s.params.temperature == 0.0 for s in seqs):
            tokens = logits.argmax(dim=-1)
        else:
            dev = logits.device
            temp = torch.tensor([s.params.temperature for s in seqs], device=dev)
            top_p = torch.tensor([s.params.top_p for s in seqs], device=dev)
            u = uniforms(
                torch.tensor([s.seed for s in seqs], device=dev),
                torch.tensor([len(s.output_ids) for s in seqs], device=dev),
            )
            any_top_p = any(s.params.top_p < 1.0 for s in seqs)
            tokens = sample_tokens(logits, temp, top_p, u, any_top_p=any_top_p)
        return tokens.tolist(), token_logprobs(logits, tokens).tolist()

    def release_cache(self) -> None:
        with self.lock:
            if not self.scheduler.has_work():
                self.runner.release_cache()

    # -- public API ---------------------------------------------------------------------
    def generate(
        self, prompts: list[str], params: SamplingParams | Seq[SamplingParams]
    ) -> list[CompletionOutput]:
        if not prompts:
            raise InvalidRequestError("prompts must be a non-empty list", field="prompts")
        plist = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
        if len(plist) != len(prompts):
            raise InvalidRequestError(f"{len(plist)} params for {len(prompts)} prompts", field="params")
        seqs = [self.make_sequence(p, sp, i) for i, (p, sp) in enumerate(zip(prompts, plist, strict=True))]
        with self.lock:
            if self.scheduler.has_work():  # an AsyncHrmEngine is mid-work on this engine
                raise RuntimeError("HrmEngine.generate() called while the step loop has work in flight")
            self._reserve(min(len(seqs), self.max_batch_size), max(s.capacity for s in seqs))
            for s in seqs:
                self.scheduler.add(s)
            while self.scheduler.has_work():
                self.step()
        return [s.output() for s in seqs]

    def loglikelihood(self, prompts: list[str], continuations: list[str]) -> list[LoglikelihoodOutput]:
        if not prompts:
            raise InvalidRequestError("prompts must be a non-empty list", field="prompts")
        if len(prompts) != len(continuations):
            raise InvalidRequestError(
                f"continuations has {len(continuations)} items but prompts has {len(prompts)}",
                field="continuations",
            )
        items = [
            encode_pair(self._encode, p, c, i, self.max_context, self._fallback_ctx)
            for i, (p, c) in enumerate(zip(prompts, continuations, strict=True))
        ]
        order = sorted(range(len(items)), key=lambda i: -len(items[i].ctx_ids) - len(items[i].cont_ids))
        results: list[LoglikelihoodOutput | None] = [None] * len(items)
        with self.lock, torch.inference_mode():
            for start in range(0, len(order), self.max_batch_size):
                chunk = order[start : start + self.max_batch_size]
                for i, out in zip(chunk, score_batch(self.runner, [items[i] for i in chunk], self.prefix_lm)):
                    results[i] = out
        return [r for r in results if r is not None]

    def score_items(self, items: list[ScoreItem]) -> list[LoglikelihoodOutput]:
        with self.lock, torch.inference_mode():
            return score_batch(self.runner, items, self.prefix_lm)
