"""Our forward equals transformers' HrmTextForCausalLM (fp32, max abs diff <= 1e-4)."""

from __future__ import annotations

import pytest
import torch

from hrm.params import SamplingParams

TOL = 1e-4


def _random_batch(vocab: int, B: int, T: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (B, T), generator=g)


def test_logits_match_transformers_causal(engine, hf_causal):
    ids = _random_batch(engine.model.cfg.vocab_size, 3, 17)
    with torch.inference_mode():
        ref = hf_causal(input_ids=ids).logits
        ours = engine.runner.logits(engine.runner.full_hidden(ids.tolist(), None))
    assert ref.shape == ours.shape
    assert (ref - ours).abs().max().item() <= TOL


def test_logits_match_transformers_prefix_lm(prefix_engine, hf_prefix):
    assert prefix_engine.prefix_lm
    ids = _random_batch(prefix_engine.model.cfg.vocab_size, 2, 15, seed=1)
    plen = [9, 9]
    tt = torch.zeros_like(ids)
    tt[:, :9] = 1
    with torch.inference_mode():
        ref = hf_prefix(input_ids=ids, token_type_ids=tt).logits
        causal_ref = hf_prefix(input_ids=ids).logits
        ours = prefix_engine.runner.logits(prefix_engine.runner.full_hidden(ids.tolist(), plen))
    assert (ref - ours).abs().max().item() <= TOL
    # The prefix really is bidirectional: it differs from the causal reading.
    assert (causal_ref - ours).abs().max().item() > 1e-3


@pytest.mark.parametrize("prefix", [False, True])
def test_incremental_decode_equals_full_recompute(engine, prefix_engine, prefix):
    eng = prefix_engine if prefix else engine
    runner = eng.runner
    ids = _random_batch(eng.model.cfg.vocab_size, 2, 14, seed=2)
    lens = [6, 9]  # right-padded prompts of different lengths, then per-row decode
    rows = [ids[0, :14].tolist(), ids[1, :14].tolist()]
    with torch.inference_mode():
        runner.ensure_cache(4, 32)
        last = runner.prefill([rows[0][: lens[0]], rows[1][: lens[1]]], 0, prefix)
        full = [
            runner.logits(runner.full_hidden([r], [n] if prefix else None))[0] for r, n in zip(rows, lens)
        ]
        assert (last[0] - full[0][lens[0] - 1]).abs().max() <= TOL
        assert (last[1] - full[1][lens[1] - 1]).abs().max() <= TOL
        pos = torch.tensor(lens)
        for _ in range(4):
            tok = torch.tensor([rows[0][pos[0]], rows[1][pos[1]]])
            out = runner.decode(tok, pos, int(pos.max()) + 1)
            for b in range(2):
                assert (out[b] - full[b][pos[b]]).abs().max() <= TOL
            pos = pos + 1
    runner.release_cache()


def _hf_greedy(hf, tok, prompt: str, n: int, prefix: bool = False) -> list[int]:
    enc = tok(prompt, return_tensors="pt")
    kwargs = {"token_type_ids": torch.ones_like(enc["input_ids"])} if prefix else {}
    with torch.inference_mode():
        out = hf.generate(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            **kwargs,
        )
    return out[0, enc["input_ids"].shape[1] :].tolist()


PROMPTS = ["hello world", "the quick brown fox", "copy: abc ->", "sort: 3 1 2 ->", "héllo ✓"]


def test_greedy_equals_transformers_generate_random_model(engine, hf_causal):
    outs = engine.generate(PROMPTS, SamplingParams(max_tokens=12, temperature=0.0))
    for prompt, out in zip(PROMPTS, outs):
        ref = _hf_greedy(hf_causal, engine.tokenizer, prompt, 12)
        assert out.token_ids == ref, prompt


def test_greedy_equals_transformers_generate_prefix_lm(prefix_engine, hf_prefix):
    outs = prefix_engine.generate(PROMPTS[:3], SamplingParams(max_tokens=10, temperature=0.0))
    for prompt, out in zip(PROMPTS[:3], outs):
        assert out.token_ids == _hf_greedy(hf_prefix, prefix_engine.tokenizer, prompt, 10, prefix=True), (
            prompt
        )


def test_greedy_equals_transformers_generate_sample_model(hrm_tiny, sample_engine):
    from transformers import AutoTokenizer, HrmTextForCausalLM

    from benchmarks.samples.tasks import task_examples

    eng = sample_engine
    hf = HrmTextForCausalLM.from_pretrained(str(hrm_tiny), dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(str(hrm_tiny))
    prompts = [ex.prompt for ex in task_examples(6, seed=3)]
    outs = eng.generate(prompts, SamplingParams(max_tokens=24, temperature=0.0))
    for prompt, out in zip(prompts, outs):
        ref = _hf_greedy(hf, tok, prompt, 24)
        assert out.token_ids == ref, prompt
        if ref and ref[-1] == tok.eos_token_id:
            assert out.finish_reason == "eos"
    assert any(o.finish_reason == "eos" for o in outs)  # the trained model stops by itself


def test_batched_greedy_equals_single(engine):
    params = SamplingParams(max_tokens=10, temperature=0.0)
    batched = engine.generate(PROMPTS, params)
    for prompt, out in zip(PROMPTS, batched):
        assert engine.generate([prompt], params)[0].token_ids == out.token_ids


def test_more_prompts_than_max_batch_size(engine):
    from hrm.engine import HrmEngine

    small = HrmEngine(engine.model, engine.tokenizer, max_batch_size=3)
    prompts = [f"{p} {i}" for i, p in enumerate(PROMPTS * 2)]
    params = [SamplingParams(max_tokens=4 + i, temperature=0.0 if i % 2 else 0.9, seed=i) for i in range(10)]
    outs = small.generate(prompts, params)
    assert small.runner.cache is not None and small.runner.cache.rows <= 3
    ref = engine.generate(prompts, params)
    assert [o.token_ids for o in outs] == [o.token_ids for o in ref]
    assert [len(o.token_ids) for o in outs] == [4 + i for i in range(10)] or any(
        o.finish_reason == "eos" for o in outs
    )
