"""CUDA parity (fp32 and bf16) against transformers; skipped cleanly without a GPU."""

from __future__ import annotations

import pytest
import torch

from hrm.params import SamplingParams

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize(("dtype", "tol"), [("float32", 1e-4), ("bfloat16", 0.1)])
@pytest.mark.parametrize("prefix", [False, True])
def test_cuda_logits_match_transformers(tiny_causal, tiny_prefix, dtype, tol, prefix):
    from transformers import HrmTextForCausalLM

    from hrm.engine import HrmEngine

    path = tiny_prefix if prefix else tiny_causal
    eng = HrmEngine.from_pretrained(path, device="cuda", dtype=dtype)
    assert eng.device.type == "cuda" and eng.dtype == getattr(torch, dtype)
    hf = HrmTextForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype)).to("cuda").eval()
    ids = torch.randint(3, eng.model.cfg.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))
    tt = torch.zeros_like(ids)
    tt[:, :7] = 1
    with torch.inference_mode():
        kw = {"token_type_ids": tt.cuda()} if prefix else {}
        ref = hf(input_ids=ids.cuda(), **kw).logits.float()
        ours = eng.runner.logits(eng.runner.full_hidden(ids.tolist(), [7, 7] if prefix else None)).float()
    scale = 1.0 if dtype == "float32" else ref.abs().max().item()
    assert (ref - ours).abs().max().item() <= tol * scale


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cuda_generate_and_incremental_decode(tiny_causal, dtype):
    from hrm.engine import HrmEngine

    eng = HrmEngine.from_pretrained(tiny_causal, device="cuda", dtype=dtype)
    greedy = SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)
    batch = eng.generate(["hello world", "the quick brown fox", "a"], greedy)
    assert all(len(o.token_ids) == 10 for o in batch)
    if dtype == "float32":
        cpu = HrmEngine.from_pretrained(tiny_causal, device="cpu", dtype="float32")
        assert [o.token_ids for o in batch] == [
            o.token_ids for o in cpu.generate(["hello world", "the quick brown fox", "a"], greedy)
        ]
    seeded = SamplingParams(max_tokens=10, temperature=1.0, seed=5)
    alone = eng.generate(["hello"], seeded)[0]
    assert eng.generate(["x", "hello", "yy"], [greedy, seeded, greedy])[1].token_ids == alone.token_ids
