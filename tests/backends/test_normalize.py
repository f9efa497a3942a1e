"""The per-kind request normalizations and the shared scoring/stop helpers (pure functions)."""

from __future__ import annotations

from backends.hf_compute import generate_kwargs
from backends.openai_wire import completion_body
from backends.scoring import continuation_start, split_context, truncate_at_stop
from backends.stops import StopScanner
from backends.tgi_wire import parse_generate, tgi_request
from backends.types import SamplingParams


def test_tgi_greedy_is_do_sample_false_without_temperature() -> None:
    req = tgi_request(SamplingParams(max_tokens=7, temperature=0.0), 4)
    assert req.parameters["do_sample"] is False
    assert "temperature" not in req.parameters and "top_p" not in req.parameters
    assert req.parameters["max_new_tokens"] == 7
    assert req.approximations == []


def test_tgi_top_p_one_is_omitted_and_below_one_is_sent() -> None:
    assert "top_p" not in tgi_request(SamplingParams(temperature=0.7, top_p=1.0), 4).parameters
    p = tgi_request(SamplingParams(temperature=0.7, top_p=0.9, seed=3), 4).parameters
    assert p == {"max_new_tokens": 128, "details": True, "decoder_input_details": True, "do_sample": True,
                 "temperature": 0.7, "top_p": 0.9, "seed": 3}


def test_tgi_extra_stops_are_client_side_and_reported() -> None:
    stops = ("a", "b", "c", "d", "e", "f")
    req = tgi_request(SamplingParams(stop=stops), 4)
    assert req.parameters["stop"] == ["a", "b", "c", "d"]
    assert req.client_stops == list(stops)
    assert len(req.approximations) == 1 and "at most 4 stop sequences" in req.approximations[0]
    assert "2 client-side" in req.approximations[0]


def test_tgi_seed_zero_and_ignore_eos_are_reported() -> None:
    req = tgi_request(SamplingParams(temperature=0.5, seed=0, ignore_eos=True), None)
    assert "seed" not in req.parameters
    assert any(n.startswith("seed:") for n in req.approximations)
    assert any(n.startswith("ignore_eos:") for n in req.approximations)


def test_tgi_parse_cuts_the_stop_sequence_tgi_keeps() -> None:
    answer = {"generated_text": "ab STOP", "details": {
        "finish_reason": "stop_sequence", "generated_tokens": 3, "prefill": [{"id": 1, "text": "", "logprob": None}],
        "tokens": [{"id": 5, "text": "ab", "logprob": -1.0, "special": False},
                   {"id": 6, "text": " ", "logprob": -2.0, "special": False},
                   {"id": 7, "text": "STOP", "logprob": -3.0, "special": False}]}}
    c = parse_generate("t", answer, ["STOP"])
    assert (c.text, c.finish_reason, c.prompt_tokens) == ("ab ", "stop", 1)
    assert c.completion_tokens == 2 and c.token_logprobs == [-1.0, -2.0]


def test_vllm_body_passes_temperature_zero_and_seed() -> None:
    body = completion_body("m", "hi", SamplingParams(max_tokens=3, temperature=0.0, seed=0, stop=("x",)),
                           logprobs=True)
    assert body == {"model": "m", "prompt": "hi", "max_tokens": 3, "temperature": 0.0, "top_p": 1.0, "seed": 0,
                    "stop": ["x"], "logprobs": 1}


def test_hf_kwargs_greedy_and_sampling() -> None:
    assert generate_kwargs(SamplingParams(max_tokens=4, temperature=0.0), None) == {
        "max_new_tokens": 4, "do_sample": False}
    kw = generate_kwargs(SamplingParams(temperature=0.8, top_p=0.5, stop=("\n",)), "TOK")
    assert kw["do_sample"] and kw["temperature"] == 0.8 and kw["top_p"] == 0.5 and kw["top_k"] == 0
    assert kw["stop_strings"] == ["\n"] and kw["tokenizer"] == "TOK"


def test_split_context_moves_trailing_whitespace() -> None:
    assert split_context("Q: 2+2 = ", "4") == ("Q: 2+2 =", " 4")
    assert split_context("abc", " d") == ("abc", " d")


def test_continuation_start_uses_span_ends_and_skips_special_tokens() -> None:
    offsets = [(0, 0), (0, 3), (3, 5), (5, 8)]  # BOS, "abc", "de", "fgh"
    assert continuation_start(offsets, 5) == 3
    assert continuation_start(offsets, 4) == 2  # a token straddling the boundary is continuation
    assert continuation_start(offsets, 8) == 4


def test_stop_scanner_holds_back_partial_stops() -> None:
    s = StopScanner(["END"])
    assert s.feed("hello E") == "hello"
    assert s.feed("N") == " "
    assert s.feed("D more") == "" and s.stopped
    assert s.text == "hello "
    t = StopScanner([])
    assert t.feed("abc") == "abc" and t.flush() == ""


def test_truncate_at_stop_picks_earliest() -> None:
    assert truncate_at_stop("a.b,c", [",", "."]) == ("a", True)
    assert truncate_at_stop("abc", ["x"]) == ("abc", False)
