"""Throwaway tiny models for tests: random-init HRM-Text and Llama plus a BPE tokenizer
trained in a fraction of a second. Used when the shared sample-model fixtures are absent."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CORPUS", "build_tiny_models"]

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Q: 2+2 = A: 4", "reverse: abc -> cba", "sort: 3 1 2 -> 1 2 3", "copy: hello -> hello",
    "Once upon a time there was a tiny model that learned to count.",
    "Paris is the capital of France. Berlin is the capital of Germany.",
]


def _tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 20, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    fast.save_pretrained(out)


def build_tiny_models(root: Path) -> dict[str, Path]:
    """Write `hrm-tiny` and `llama-tiny` under root (idempotent) and return their paths."""
    import torch
    from transformers import HrmTextConfig, HrmTextForCausalLM, LlamaConfig, LlamaForCausalLM

    paths = {"hrm-tiny": root / "hrm-tiny", "llama-tiny": root / "llama-tiny"}
    if all((p / "config.json").exists() for p in paths.values()):
        return paths
    torch.manual_seed(0)
    common = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
              "head_dim": 32, "max_position_embeddings": 256, "pad_token_id": 0, "bos_token_id": 1,
              "eos_token_id": 2}
    hrm = HrmTextForCausalLM(HrmTextConfig(num_hidden_layers=1, H_cycles=2, L_cycles=1, prefix_lm=False, **common))
    llama = LlamaForCausalLM(LlamaConfig(num_hidden_layers=2, num_key_value_heads=2, **common))
    for name, model in (("hrm-tiny", hrm), ("llama-tiny", llama)):
        model.generation_config.pad_token_id = 0
        model.generation_config.eos_token_id = 2
        model.save_pretrained(paths[name])
        _tokenizer(paths[name])
    return paths
