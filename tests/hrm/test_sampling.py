"""Sampling functions (pure tensors) and seed/batch invariance of sampled completions."""

from __future__ import annotations

import torch

from hrm.params import SamplingParams
from hrm.sampling import sample_tokens, splitmix64, token_logprobs, uniforms


def test_splitmix64_known_values():
    # Reference values of SplitMix64 (Vigna) for state 0: the first outputs of the generator.
    out = splitmix64(torch.tensor([0], dtype=torch.int64)).item() & (2**64 - 1)
    assert out == 0xE220A8397B1DCDAF


def test_uniforms_deterministic_and_in_range():
    seeds = torch.tensor([0, 1, 2**62, 12345], dtype=torch.int64)
    steps = torch.tensor([0, 0, 5, 7], dtype=torch.int64)
    u1, u2 = uniforms(seeds, steps), uniforms(seeds, steps)
    assert torch.equal(u1, u2)
    assert ((u1 >= 0) & (u1 < 1)).all()
    many = uniforms(torch.full((20000,), 7, dtype=torch.int64), torch.arange(20000))
    assert abs(many.mean().item() - 0.5) < 0.01
    assert len(set(many.tolist())) > 19000


def test_greedy_rows_take_argmax():
    logits = torch.randn(4, 50)
    temp = torch.tensor([0.0, 0.0, 1.0, 0.0])
    out = sample_tokens(logits, temp, torch.ones(4), torch.rand(4))
    for r in (0, 1, 3):
        assert out[r].item() == logits[r].argmax().item()


def test_tiny_top_p_is_argmax():
    logits = torch.randn(8, 100)
    out = sample_tokens(logits, torch.ones(8), torch.full((8,), 1e-6), torch.rand(8))
    assert torch.equal(out, logits.argmax(-1))


def test_sampling_matches_distribution():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2, 0.0]]).clamp_min(1e-30)).repeat(30000, 1)
    u = uniforms(torch.full((30000,), 3, dtype=torch.int64), torch.arange(30000))
    out = sample_tokens(logits, torch.ones(30000), torch.ones(30000), u, any_top_p=False)
    freq = torch.bincount(out, minlength=4).float() / 30000
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.2, 0.0]), atol=0.015)
    # top_p = 0.6 keeps {0.5, 0.3} renormalised -> 0.625 / 0.375
    out = sample_tokens(logits, torch.ones(30000), torch.full((30000,), 0.6), u)
    freq = torch.bincount(out, minlength=4).float() / 30000
    assert torch.allclose(freq, torch.tensor([0.625, 0.375, 0.0, 0.0]), atol=0.015)


def test_temperature_sharpens():
    logits = torch.tensor([[2.0, 1.0, 0.0]]).repeat(20000, 1)
    u = uniforms(torch.full((20000,), 9, dtype=torch.int64), torch.arange(20000))
    hot = sample_tokens(logits, torch.full((20000,), 2.0), torch.ones(20000), u, any_top_p=False)
    cold = sample_tokens(logits, torch.full((20000,), 0.3), torch.ones(20000), u, any_top_p=False)
    assert (cold == 0).float().mean() > (hot == 0).float().mean() + 0.2


def test_token_logprobs_are_raw_log_softmax():
    logits = torch.randn(3, 10)
    toks = torch.tensor([1, 5, 9])
    ref = torch.log_softmax(logits, -1)[torch.arange(3), toks]
    assert torch.allclose(token_logprobs(logits, toks), ref)


def test_same_seed_alone_and_in_batch_of_16(engine):
    params = SamplingParams(max_tokens=16, temperature=1.0, top_p=0.9, seed=1234)
    alone = engine.generate(["hello world"], params)[0]
    others = [f"the quick brown fox {i}" for i in range(16)]
    mixed = [SamplingParams(max_tokens=8 + i, temperature=0.8, seed=i) for i in range(16)]
    batch = engine.generate(others[:7] + ["hello world"] + others[7:], mixed[:7] + [params] + mixed[7:])
    assert batch[7].token_ids == alone.token_ids
    assert batch[7].text == alone.text
    again = engine.generate(["hello world"], params)[0]
    assert again.token_ids == alone.token_ids
    other_seed = engine.generate(["hello world"], SamplingParams(max_tokens=16, temperature=1.0, seed=99))[0]
    assert other_seed.token_ids != alone.token_ids


def test_token_logprobs_recorded_for_generated_tokens(engine):
    out = engine.generate(["hello"], SamplingParams(max_tokens=6, temperature=0.0))[0]
    assert len(out.token_logprobs) == len(out.token_ids) == 6
    assert all(lp <= 0.0 for lp in out.token_logprobs)
