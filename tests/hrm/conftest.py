"""Fixtures for the engine tests: tiny random-init HRM-Text checkpoints (prefix_lm false/true)
with a byte-level BPE tokenizer, built in seconds into a session temp dir.

Random weights make parity tests sharp (no training needed); `initializer_range` is large
enough that next-token distributions are peaked, so greedy decoding is not decided by ties.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "copy: abc -> abc",
    "reverse: abc -> cba",
    "sort: 3 1 2 -> 1 2 3",
    "héllo wörld ünïcode ✓ 日本語",
    "hello world, hello there; general kenobi",
] * 20


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        clean_up_tokenization_spaces=False,
    )


def build_tiny(path: Path, prefix_lm: bool, seed: int = 0, vocab: int = 320) -> Path:
    from transformers import HrmTextConfig, HrmTextForCausalLM

    torch.manual_seed(seed)
    cfg = HrmTextConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        head_dim=16,
        H_cycles=2,
        L_cycles=2,
        prefix_lm=prefix_lm,
        max_position_embeddings=128,
        initializer_range=0.1,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = HrmTextForCausalLM(cfg).eval()
    with torch.no_grad():
        model.model.z_L_init.normal_(0.0, 1.0)
    model.save_pretrained(str(path))
    _tokenizer().save_pretrained(str(path))
    return path


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Intra-op threads > 1 on this loaded 2-core box make every op wait for a descheduled
    OpenMP thread (measured: 8 s instead of 0.02 s for the same generate call)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("hrm") / "causal", prefix_lm=False)


@pytest.fixture(scope="session")
def tiny_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("hrm") / "prefix", prefix_lm=True, seed=1)


@pytest.fixture(scope="session")
def engine(tiny_causal: Path):
    from hrm.engine import HrmEngine

    return HrmEngine.from_pretrained(tiny_causal, device="cpu", dtype="float32", max_batch_size=32)


@pytest.fixture(scope="session")
def prefix_engine(tiny_prefix: Path):
    from hrm.engine import HrmEngine

    return HrmEngine.from_pretrained(tiny_prefix, device="cpu", dtype="float32", max_batch_size=32)


@pytest.fixture(scope="session")
def hf_causal(tiny_causal: Path):
    from transformers import HrmTextForCausalLM

    return HrmTextForCausalLM.from_pretrained(str(tiny_causal), dtype=torch.float32).eval()


@pytest.fixture(scope="session")
def hf_prefix(tiny_prefix: Path):
    from transformers import HrmTextForCausalLM

    return HrmTextForCausalLM.from_pretrained(str(tiny_prefix), dtype=torch.float32).eval()


@pytest.fixture(scope="session")
def sample_engine(hrm_tiny: Path):
    """The trained sample model (shared `hrm_tiny` fixture): sensible text, emits EOS."""
    from hrm.engine import HrmEngine

    return HrmEngine.from_pretrained(hrm_tiny, device="cpu", dtype="float32")
