"""TGI's native wire format: request parameters (the tgi normalization) and responses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backends.errors import BackendProtocolError
from backends.scoring import truncate_at_stop
from backends.types import Completion, SamplingParams

__all__ = ["FINISH", "TgiRequest", "parse_generate", "tgi_request"]

FINISH = {"length": "length", "eos_token": "eos", "stop_sequence": "stop"}
DEFAULT_MAX_STOP = 4


@dataclass
class TgiRequest:
    parameters: dict[str, Any]
    # Every stop string, cut client-side: TGI keeps the matched stop sequence in its text,
    # and stops beyond `max_stop_sequences` are not sent at all.
    client_stops: list[str] = field(default_factory=list)
    approximations: list[str] = field(default_factory=list)


def tgi_request(params: SamplingParams, max_stop_sequences: int | None) -> TgiRequest:
    """Normalization for the tgi kind (see docs/normalization.md)."""
    p: dict[str, Any] = {"max_new_tokens": params.max_tokens, "details": True, "decoder_input_details": True}
    notes: list[str] = []
    if params.greedy:
        p["do_sample"] = False  # TGI rejects temperature 0: greedy is do_sample=false, temperature omitted
    else:
        p["do_sample"] = True
        p["temperature"] = params.temperature
        if params.top_p < 1.0:
            p["top_p"] = params.top_p  # TGI rejects top_p=1.0; omitting it means no nucleus filtering
    if params.seed is not None:
        if params.seed > 0:
            p["seed"] = params.seed
        else:
            notes.append("seed: TGI requires seed > 0, so seed 0 was not sent (server picks a random seed)")
    limit = DEFAULT_MAX_STOP if max_stop_sequences is None else max_stop_sequences
    stops = list(params.stop)
    if stops:
        sent, unsent = stops[:limit], stops[limit:]
        if sent:
            p["stop"] = sent
        if unsent:
            notes.append(
                f"stop: TGI accepts at most {limit} stop sequences; sent the first {len(sent)}, "
                f"applied the other {len(unsent)} client-side (the server kept generating past them, "
                "so latency includes that extra work)"
            )
    if params.ignore_eos:
        notes.append("ignore_eos: TGI has no such parameter; generation may stop at EOS")
    return TgiRequest(parameters=p, client_stops=stops, approximations=notes)


def parse_generate(backend: str, answer: Any, client_stops: list[str]) -> Completion:
    try:
        text = answer["generated_text"]
        details = answer["details"]
        finish = FINISH[details["finish_reason"]]
        tokens = details["tokens"]
        ids = [int(t["id"]) for t in tokens]
        lps = [float(t["logprob"]) for t in tokens if t.get("logprob") is not None]
        prompt_tokens = len(details.get("prefill") or []) or None
        completion_tokens = int(details["generated_tokens"])
        if not isinstance(text, str):
            raise TypeError("generated_text is not a string")
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendProtocolError(backend, f"/generate response lacks {exc} (need generated_text, details)") from None
    if client_stops:
        text, hit = truncate_at_stop(text, client_stops)
        if hit:
            finish = "stop"
            kept, n = 0, 0
            for t in tokens:
                if kept >= len(text):
                    break
                kept += len(t["text"])
                n += 1
            ids, lps, completion_tokens = ids[:n], lps[:n], n
    return Completion(
        text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        finish_reason=finish, token_ids=ids, token_logprobs=lps if len(lps) == len(ids) else None,  # type: ignore[arg-type]
    )
