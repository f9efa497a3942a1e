"""Train the tiny sample models (deterministic: seeded, budgeted in steps, 2 CPU threads).

- ``hrm-tiny``: ``HrmTextForCausalLM`` (``model_type: "hrm_text"``, ``prefix_lm: false``).
- ``llama-tiny``: ``LlamaForCausalLM`` of similar size.

Both share one tokenizer and the same data (see `benchmarks.samples.data`). Each model dir
gets ``config.json``, ``generation_config.json``, ``model.safetensors`` and the tokenizer
files, and loads unchanged with ``AutoModelForCausalLM`` / ``AutoTokenizer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.samples.data import TrainingData

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

__all__ = ["ModelSpec", "build_model", "default_specs", "save_model", "train_model"]

ProgressFn = Callable[[int, int, float], None]  # (step, total_steps, loss)


@dataclass(frozen=True)
class ModelSpec:
    """What to build: an architecture kind, its config overrides and a step budget."""

    name: str
    kind: str  # key of `_builders()`: "hrm_text" | "llama"
    steps: int
    lr: float
    batch_size: int = 64
    warmup: int = 30
    weight_decay: float = 0.01
    config: dict[str, Any] = field(default_factory=dict)


def _common_config() -> dict[str, Any]:
    """Size settings shared by both models (hidden 128, 4 heads x 32, MLP 256)."""
    return {
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_attention_heads": 4,
        "head_dim": 32,
        "max_position_embeddings": 512,
        "tie_word_embeddings": False,
    }


def default_specs() -> dict[str, ModelSpec]:
    """The two sample models. HRM (H2L2, 1 layer per stack: 6 layer calls a forward against
    Llama's 4) is slower per step and learns slower per step, so it gets the larger time share."""
    common = _common_config()
    return {
        "hrm-tiny": ModelSpec(
            name="hrm-tiny",
            kind="hrm_text",
            steps=900,
            lr=3e-3,
            # embedding_scale 1.0: the default 1/initializer_range (50) makes the token
            # embeddings swamp the layers' residual updates; loss then stalls near 1.6.
            config={
                **common,
                "num_hidden_layers": 1,
                "H_cycles": 2,
                "L_cycles": 2,
                "prefix_lm": False,
                "embedding_scale": 1.0,
            },
        ),
        "llama-tiny": ModelSpec(
            name="llama-tiny",
            kind="llama",
            steps=600,
            lr=2e-3,
            config={**common, "num_hidden_layers": 4, "num_key_value_heads": 4},
        ),
    }


def _hrm(cfg: dict[str, Any]) -> PreTrainedModel:
    from transformers import HrmTextConfig, HrmTextForCausalLM

    return HrmTextForCausalLM(HrmTextConfig(**cfg))


def _llama(cfg: dict[str, Any]) -> PreTrainedModel:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**cfg))


def _builders() -> dict[str, Callable[[dict[str, Any]], PreTrainedModel]]:
    return {"hrm_text": _hrm, "llama": _llama}


def build_model(spec: ModelSpec, tokenizer: PreTrainedTokenizerFast, seed: int) -> PreTrainedModel:
    """A freshly (seeded) initialised model for ``spec`` with the tokenizer's special ids."""
    import torch

    builders = _builders()
    if spec.kind not in builders:
        raise ValueError(f"unknown model kind {spec.kind!r}; valid kinds: {', '.join(builders)}")
    torch.manual_seed(seed)
    cfg = {
        **spec.config,
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    model = builders[spec.kind](cfg)
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id
    gen.pad_token_id = tokenizer.pad_token_id
    gen.do_sample = False
    gen.max_new_tokens = 32
    return model


def _lr_at(step: int, spec: ModelSpec) -> float:
    if step < spec.warmup:
        return spec.lr * (step + 1) / spec.warmup
    progress = (step - spec.warmup) / max(1, spec.steps - spec.warmup)
    return spec.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def train_model(
    spec: ModelSpec,
    tokenizer: PreTrainedTokenizerFast,
    data: TrainingData,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> PreTrainedModel:
    """Train ``spec`` for exactly ``spec.steps`` steps (AdamW, warmup + cosine, clip 1.0)."""
    import torch

    torch.set_num_threads(2)
    model = build_model(spec, tokenizer, seed)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=spec.weight_decay, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(seed + 1)
    for step in range(spec.steps):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, spec)
        index = torch.randint(len(data), (spec.batch_size,), generator=gen)
        ids, mask, labels = data.batch(index)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if progress is not None:
            progress(step + 1, spec.steps, loss.item())
    model.eval()
    return model


def save_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, directory: Path) -> None:
    """``save_pretrained`` (safetensors) plus the tokenizer files, into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(directory), safe_serialization=True)
    tokenizer.save_pretrained(str(directory))
