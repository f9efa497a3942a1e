"""The OpenAI `/v1/completions` wire format: request bodies and response parsing."""

from __future__ import annotations

from typing import Any

from backends.errors import BackendProtocolError
from backends.types import Completion, SamplingParams

__all__ = ["completion_body", "echo_scores", "parse_choice", "parse_usage"]


def completion_body(model: str, prompt: str | list[int], params: SamplingParams, *, logprobs: bool) -> dict[str, Any]:
    """Normalization for the vllm kind (see docs/normalization.md)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,  # 0 means greedy in vLLM
        "top_p": params.top_p,
    }
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.ignore_eos:
        body["ignore_eos"] = True  # vLLM extension
    if logprobs:
        body["logprobs"] = 1
    return body


def parse_usage(backend: str, usage: Any) -> tuple[int | None, int | None]:
    try:
        return int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    except (KeyError, TypeError, ValueError):
        raise BackendProtocolError(backend, f"usage has no prompt_tokens/completion_tokens: {usage!r}") from None


def _finish(choice: dict[str, Any]) -> Any:
    reason = choice.get("finish_reason")
    if reason == "length":
        return "length"
    if reason == "stop" and "stop_reason" in choice and choice["stop_reason"] is None:
        return "eos"  # vLLM: finished on EOS (stop_reason names the stop string otherwise)
    return "stop" if reason is not None else None


def parse_choice(backend: str, answer: Any) -> Completion:
    try:
        choice = answer["choices"][0]
        text = choice["text"]
        if not isinstance(text, str):
            raise TypeError("text is not a string")
    except (KeyError, TypeError, IndexError) as exc:
        raise BackendProtocolError(backend, f"completion response lacks choices[0].text ({exc})") from None
    usage = parse_usage(backend, answer["usage"]) if answer.get("usage") else (None, None)
    token_logprobs = None
    if isinstance(choice.get("logprobs"), dict) and choice["logprobs"].get("token_logprobs") is not None:
        token_logprobs = [float(x) for x in choice["logprobs"]["token_logprobs"]]
    return Completion(
        text=text, prompt_tokens=usage[0], completion_tokens=usage[1], finish_reason=_finish(choice),
        token_logprobs=token_logprobs,
    )


def echo_scores(
    backend: str, answer: Any, context_chars: int, whole: str | None, n_cont: int | None
) -> tuple[list[float], bool | None]:
    """Continuation log-probs from an `echo: true, max_tokens: 1, logprobs: 1` answer.

    The prompt part is every echoed entry but the generated ones. With `n_cont` known
    (local tokenizer) the continuation is its last n_cont entries, which also holds when
    the server drops BOS from the echo; otherwise the boundary comes from `text_offset`.
    """
    try:
        choice = answer["choices"][0]
        lp = choice["logprobs"]
        values = lp["token_logprobs"]
        generated = int((answer.get("usage") or {}).get("completion_tokens") or 1)
        n_prompt = len(values) - generated
        if n_cont is None:
            assert whole is not None
            offsets = lp["text_offset"]
            end_of_prompt = offsets[n_prompt] if len(offsets) > n_prompt else offsets[-1] + len(lp["tokens"][-1])
            cont_chars = len(whole) - context_chars
            first = next(i for i in range(n_prompt) if offsets[i + 1] > end_of_prompt - cont_chars)
            n_cont = n_prompt - first
        positions = range(n_prompt - n_cont, n_prompt)
        if n_cont <= 0 or positions.start < 1:
            raise ValueError(f"{n_cont} continuation tokens of {n_prompt} echoed")
        scores = [float(values[i]) for i in positions]
        tops = lp.get("top_logprobs")
        greedy = None
        if tops:
            greedy = all(scores[j] >= max(tops[i].values()) - 1e-5 for j, i in enumerate(positions))
        return scores, greedy
    except (KeyError, TypeError, IndexError, ValueError, StopIteration, AssertionError) as exc:
        raise BackendProtocolError(backend, f"echoed log-probs unusable: {exc!r}") from None
