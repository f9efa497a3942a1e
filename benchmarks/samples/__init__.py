"""Tiny sample models (hrm-tiny, llama-tiny) and the seeded task data they are trained on.

- `benchmarks.samples.tasks`: task generators, held-out split, scoring (also the benchmark's prompt sets).
- `benchmarks.samples.tokenizer`: the byte-level BPE shared by both models.
- `benchmarks.samples.data`: tokenized training rows (answer-only labels).
- `benchmarks.samples.train`: model specs and the deterministic training loop.
- `benchmarks.samples.evaluation`: held-out accuracy with transformers greedy generate.
- `benchmarks.samples.prepare`: `models_dir()`, `ensure_models()` (atomic, locked builds).

Nothing is imported here, so importing the package is free.
"""

__all__: list[str] = []
