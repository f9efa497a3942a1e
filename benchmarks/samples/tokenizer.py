"""The sample models' tokenizer: a small byte-level BPE trained with `tokenizers`.

- Byte-level (any UTF-8 text encodes; nothing is unknown), digits isolated one per token
  (``Digits(individual_digits=True)``) so arithmetic stays learnable.
- Special tokens: ``<pad>`` = 0, ``<s>`` (BOS) = 1, ``</s>`` (EOS) = 2.
- A ``TemplateProcessing`` post-processor adds BOS to every encoded text (no EOS), so
  ``tokenizer(prompt)`` gives exactly what generation starts from.
- Saved as ``tokenizer.json`` + ``tokenizer_config.json``; loads with
  ``AutoTokenizer.from_pretrained(dir)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

__all__ = ["BOS", "EOS", "PAD", "VOCAB_SIZE", "save_tokenizer", "train_tokenizer"]

PAD, BOS, EOS = "<pad>", "<s>", "</s>"
VOCAB_SIZE = 384
# Joins the messages of a chat request into one prompt (the sample models are not chat models).
_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['content'] }}{% if not loop.last %}\n{% endif %}{% endfor %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int = VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train the BPE on ``texts`` (deterministic for the same texts) and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, bos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        padding_side="right",
        model_max_length=512,
        clean_up_tokenization_spaces=False,
        chat_template=_CHAT_TEMPLATE,
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, directory: Path) -> None:
    """Write ``tokenizer.json`` + ``tokenizer_config.json`` (+ special tokens map) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(directory))
