"""Blocking transformers work for the `hf` kind (run in a worker thread by backends.hf):
batched `generate()`, streaming with `TextIteratorStreamer`, teacher-forced scoring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backends.scoring import continuation_start, split_context, truncate_at_stop
from backends.types import Completion, LoglikelihoodResult, SamplingParams

__all__ = ["HfModel", "generate_kwargs", "load_hf", "resolve_device_dtype"]


def resolve_device_dtype(device: str, dtype: str) -> tuple[Any, Any]:
    import torch

    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    dt = None if dtype == "auto" else getattr(torch, dtype)
    return dev, dt


def generate_kwargs(params: SamplingParams, tokenizer: Any) -> dict[str, Any]:
    """Normalization for the hf kind (see docs/normalization.md)."""
    kw: dict[str, Any] = {"max_new_tokens": params.max_tokens, "do_sample": not params.greedy}
    if not params.greedy:
        kw["temperature"] = params.temperature
        kw["top_p"] = params.top_p
        kw["top_k"] = 0  # transformers defaults to top_k=50; the contract has no top_k
    if params.stop:
        kw["stop_strings"] = list(params.stop)
        kw["tokenizer"] = tokenizer
    if params.ignore_eos:
        kw["min_new_tokens"] = params.max_tokens
    return kw


@dataclass
class HfModel:
    model: Any
    tokenizer: Any
    device: str
    model_id: str
    prefix_lm: bool
    max_context: int | None

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return set(eos if isinstance(eos, list) else [eos] if eos is not None else [])

    def _finish_row(self, gen: list[int], lps: list[float], prompt_len: int, params: SamplingParams) -> Completion:
        eos = self._eos_ids()
        finish = "length"
        cut = next((i for i, t in enumerate(gen) if t in eos), None)
        if cut is not None and not params.ignore_eos:
            gen, lps, finish = gen[: cut + 1], lps[: cut + 1], "eos"  # EOS counts, as on vLLM/TGI
        text = self.tokenizer.decode(gen, skip_special_tokens=True)
        if params.stop:
            text, hit = truncate_at_stop(text, params.stop)
            if hit:
                n = next(n for n in range(1, len(gen) + 1)
                         if truncate_at_stop(self.tokenizer.decode(gen[:n], skip_special_tokens=True), params.stop)[1])
                gen, lps, finish = gen[:n], lps[:n], "stop"
        return Completion(text=text, prompt_tokens=prompt_len, completion_tokens=len(gen),
                          finish_reason=finish, token_ids=gen, token_logprobs=lps)  # type: ignore[arg-type]

    def generate(self, prompts: list[str], params: SamplingParams, streamer: Any = None) -> list[Completion]:
        import torch

        self.tokenizer.padding_side = "left"
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        pad = self.tokenizer.pad_token_id
        pad = pad if pad is not None else next(iter(self._eos_ids()), 0)
        with torch.inference_mode():
            out = self.model.generate(
                **enc, **generate_kwargs(params, self.tokenizer), pad_token_id=pad,
                return_dict_in_generate=True, output_logits=True, streamer=streamer,
            )
        width = enc["input_ids"].shape[1]
        seqs = out.sequences[:, width:]
        logprobs = torch.stack(out.logits, dim=1).float().log_softmax(-1)
        chosen = logprobs.gather(-1, seqs[:, : logprobs.shape[1], None])[..., 0]
        lens = enc["attention_mask"].sum(-1).tolist()
        return [self._finish_row(seqs[i].tolist(), chosen[i].tolist(), int(lens[i]), params)
                for i in range(len(prompts))]

    def score(self, pairs: list[tuple[str, str]]) -> list[LoglikelihoodResult]:
        import torch

        rows: list[tuple[list[int], int]] = []
        for context, continuation in pairs:
            ctx, cont = split_context(context, continuation)
            enc = self.tokenizer(ctx + cont, return_offsets_mapping=True)
            ids = list(enc["input_ids"])
            start = continuation_start([tuple(o) for o in enc["offset_mapping"]], len(ctx))
            if start == 0:  # no context token: condition on BOS/EOS as lm-eval does
                bos = self.tokenizer.bos_token_id
                ids, start = [bos if bos is not None else next(iter(self._eos_ids()))] + ids, 1
            rows.append((ids, start))
        width = max(len(ids) for ids, _ in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in rows], device=self.device)
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in rows], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=mask).logits.float()
        logprobs = logits.log_softmax(-1)
        note = ("loglikelihood: prefix-LM model scored causally (transformers applies the bidirectional "
                "prefix only with token_type_ids)")
        notes = [note] if self.prefix_lm else []
        results = []
        for r, (ids, start) in enumerate(rows):
            pos = torch.arange(start, len(ids), device=self.device)
            target = input_ids[r, pos]
            lp = logprobs[r, pos - 1]
            token_lps = lp.gather(-1, target[:, None])[:, 0]
            greedy = bool((lp.argmax(-1) == target).all())
            results.append(LoglikelihoodResult(ll=float(token_lps.sum()), token_logprobs=token_lps.tolist(),
                                               is_greedy=greedy, approximations=list(notes)))
        return results


def load_hf(model_id: str, device: str, dtype: str) -> HfModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev, dt = resolve_device_dtype(device, dtype)
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    if tokenizer.pad_token is None:  # batching needs a pad token; EOS is the usual stand-in
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dt).to(dev).eval()
    cfg = model.config
    ctx = getattr(cfg, "max_position_embeddings", None)
    return HfModel(model=model, tokenizer=tokenizer, device=dev, model_id=model_id,
                   prefix_lm=bool(getattr(cfg, "prefix_lm", False)), max_context=ctx)
