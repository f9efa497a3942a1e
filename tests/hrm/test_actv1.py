"""AI-OS ACTV1 brain bundles: our forward against an independent reference, and the engine on top.

The reference below re-states AI-OS `hrm_act_v1.py` / `layers.py` / `moe_layer.py` with plain
nn.Modules named like AI-OS's (so its `state_dict()` has the keys AI-OS writes to
`actv1_student.safetensors`), runs one unpadded row at a time with explicit softmax
attention, and is what the synthetic bundles are written from.
"""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from hrm.engine import HrmEngine
from hrm.errors import CheckpointError
from hrm.loglik import ScoreItem
from hrm.params import SamplingParams
from tests.hrm.conftest import _tokenizer

# -- the reference (AI-OS semantics, written out longhand) -------------------------------


def ref_rms_norm(x: Tensor, eps: float) -> Tensor:
    x32 = x.to(torch.float32)
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class CastedEmbedding(nn.Module):
    def __init__(self, n: int, d: int):
        super().__init__()
        # std 1 rather than AI-OS's 1/sqrt(d) init: the input must dominate a random model's output
        self.embedding_weight = nn.Parameter(torch.randn(n, d))


class RefAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.qkv_proj = nn.Linear(hidden, 3 * hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: Tensor, cos_sin: tuple[Tensor, Tensor] | None) -> Tensor:
        S = x.shape[0]  # one unbatched row (S, hidden)
        qkv = self.qkv_proj(x).view(S, 3 * self.heads, self.hd)
        q, k, v = qkv[:, : self.heads], qkv[:, self.heads : 2 * self.heads], qkv[:, 2 * self.heads :]
        if cos_sin is not None:
            cos, sin = cos_sin[0][:S].unsqueeze(-2), cos_sin[1][:S].unsqueeze(-2)

            def rotate_half(t: Tensor) -> Tensor:
                return torch.cat((-t[..., self.hd // 2 :], t[..., : self.hd // 2]), dim=-1)

            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # (heads, S, hd)
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.hd), dim=-1)  # no causal mask
        return self.o_proj((weights @ v).transpose(0, 1).reshape(S, -1))


def intermediate(hidden: int, expansion: float) -> int:
    return -(round(expansion * hidden * 2 / 3) // -256) * 256


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, expansion: float):
        super().__init__()
        inter = intermediate(hidden, expansion)
        self.gate_up_proj = nn.Linear(hidden, 2 * inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class FeedForward(nn.Module):
    def __init__(self, hidden: int, inter: int):
        super().__init__()
        self.w1 = nn.Linear(hidden, inter, bias=False)
        self.w2 = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(nn.GELU()(self.w1(x)))


class TopKRouter(nn.Module):
    def __init__(self, hidden: int, experts: int):
        super().__init__()
        self.gate = nn.Linear(hidden, experts, bias=False)


class MoELayer(nn.Module):
    def __init__(self, hidden: int, inter: int, experts: int, k: int):
        super().__init__()
        self.k = k
        self.router = TopKRouter(hidden, experts)
        self.experts = nn.ModuleList([FeedForward(hidden, inter) for _ in range(experts)])

    def forward(self, x: Tensor) -> Tensor:
        top_logits, top_idx = torch.topk(self.router.gate(x), self.k, dim=-1)
        top_w = F.softmax(top_logits, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            routed = (top_idx == e).any(dim=-1)
            if routed.any():
                w = top_w[routed][top_idx[routed] == e].unsqueeze(-1)
                out[routed] += expert(x[routed]) * w
        return out


class MoESwiGLU(nn.Module):
    def __init__(self, hidden: int, expansion: float, experts: int, k: int):
        super().__init__()
        self.moe = MoELayer(hidden, intermediate(hidden, expansion), experts, k)

    def forward(self, x: Tensor) -> Tensor:
        return self.moe(x)


class Block(nn.Module):
    def __init__(self, a: dict[str, Any]):
        super().__init__()
        self.self_attn = RefAttention(a["hidden_size"], a["num_heads"])
        self.mlp = (
            MoESwiGLU(a["hidden_size"], a["expansion"], a["num_experts"], a["num_experts_per_tok"])
            if a["use_moe"]
            else SwiGLU(a["hidden_size"], a["expansion"])
        )

    def forward(self, h: Tensor, cos_sin: tuple[Tensor, Tensor] | None) -> Tensor:
        h = ref_rms_norm(h + self.self_attn(h, cos_sin), 1e-5)
        return ref_rms_norm(h + self.mlp(h), 1e-5)


class ReasoningModule(nn.Module):
    def __init__(self, a: dict[str, Any], n: int):
        super().__init__()
        self.layers = nn.ModuleList([Block(a) for _ in range(n)])

    def forward(self, h: Tensor, injection: Tensor, cos_sin: tuple[Tensor, Tensor] | None) -> Tensor:
        h = h + injection
        for layer in self.layers:
            h = layer(h, cos_sin)
        return h


class Inner(nn.Module):
    def __init__(self, a: dict[str, Any]):
        super().__init__()
        self.a = a
        H = a["hidden_size"]
        self.embed_tokens = CastedEmbedding(a["vocab_size"], H)
        self.lm_head = nn.Linear(H, a["vocab_size"], bias=False)
        self.q_head = nn.Linear(H, 2, bias=True)
        if a["pos_encodings"] == "learned":
            self.embed_pos = CastedEmbedding(a["seq_len"], H)
        self.H_level = ReasoningModule(a, a["H_layers"])
        self.L_level = ReasoningModule(a, a["L_layers"])
        self.register_buffer("H_init", torch.randn(H).clamp(-2, 2))
        self.register_buffer("L_init", torch.randn(H).clamp(-2, 2))
        with torch.no_grad():
            self.lm_head.weight.normal_(0.0, 1.5 / math.sqrt(H))  # peaked distributions: no greedy ties

    def forward(self, ids: Tensor, z_H: Tensor) -> tuple[Tensor, Tensor]:
        a, S, H = self.a, ids.shape[0], self.a["hidden_size"]
        emb = self.embed_tokens.embedding_weight[ids]
        if a["pos_encodings"] == "learned":
            emb = 0.707106781 * (emb + self.embed_pos.embedding_weight[:S])
        emb = torch.clamp((math.sqrt(H) if H >= 512 else 1.0) * emb, -10.0, 10.0)
        cos_sin = None
        if a["pos_encodings"] == "rope":
            hd = H // a["num_heads"]
            inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            freqs = torch.outer(torch.arange(a["seq_len"], dtype=torch.float32), inv_freq)
            table = torch.cat((freqs, freqs), dim=-1)
            cos_sin = (table.cos(), table.sin())
        Hc, Lc = a["H_cycles"], a["L_cycles"]
        z_L = z_H
        for h in range(Hc):  # AI-OS's loop shape, last step split out
            z_L = torch.ones_like(z_H) * self.L_init
            for l_step in range(Lc):
                if not (h == Hc - 1 and l_step == Lc - 1):
                    z_L = self.L_level(z_L, z_H + emb, cos_sin)
            if h != Hc - 1:
                z_H = self.H_level(z_H, z_L, cos_sin)
        z_L = self.L_level(z_L, z_H + emb, cos_sin)
        z_H = self.H_level(z_H, z_L, cos_sin)
        return z_H, torch.clamp(self.lm_head(z_H), -20.0, 20.0).float()


class RefACTV1(nn.Module):
    def __init__(self, a: dict[str, Any]):
        super().__init__()
        self.inner = Inner(a)

    @torch.no_grad()
    def forward(self, ids: list[int], segments: int = 1) -> tuple[Tensor, Tensor]:
        """(z_H, logits) of one row; `segments` ACT steps from a fresh (halted) carry."""
        t = torch.tensor(ids)
        z_H = self.inner.H_init.expand(len(ids), -1)
        for _ in range(segments):
            z_H, logits = self.inner(t, z_H)
        return z_H, logits


# -- synthetic bundles ----------------------------------------------------------------------

BASE: dict[str, Any] = {
    "vocab_size": 320, "hidden_size": 64, "num_heads": 4, "H_layers": 1, "L_layers": 2, "H_cycles": 2,
    "L_cycles": 2, "expansion": 2.0, "pos_encodings": "rope", "seq_len": 64, "use_moe": False,
    "num_experts": 4, "num_experts_per_tok": 2,
}
VARIANTS = {
    "rope": {},
    "moe": {"use_moe": True},
    "learned": {"pos_encodings": "learned", "L_cycles": 3},
    "wide": {"hidden_size": 512, "num_heads": 8, "expansion": 1.0, "H_layers": 1, "L_layers": 1},
}


def brain_json(a: dict[str, Any], tokenizer_model: str) -> dict[str, Any]:
    """The fields AI-OS's GUI writes at creation plus what finalize_training adds."""
    return {
        "name": "tiny", "type": "actv1", "checkpoint_file": "actv1_student.safetensors",
        "checkpoint_format": "safetensors", "tokenizer_id": "tiny-bpe", "tokenizer_model": tokenizer_model,
        "vocab_size": a["vocab_size"], "max_seq_len": a["seq_len"], "halt_max_steps": 2,
        "use_moe": a["use_moe"], "num_experts": a["num_experts"], "num_experts_per_tok": a["num_experts_per_tok"],
        "moe_capacity_factor": 1.25, "hidden_size": None, "h_layers": None, "l_layers": None,
        "num_heads": None, "expansion": None, "training_steps": 10, "log_file": "metrics.jsonl",
        "arch": {
            "H_layers": a["H_layers"], "L_layers": a["L_layers"], "hidden_size": a["hidden_size"],
            "num_heads": a["num_heads"], "expansion": a["expansion"], "H_cycles": a["H_cycles"],
            "L_cycles": a["L_cycles"], "pos_encodings": a["pos_encodings"], "vocab_size": a["vocab_size"],
        },
    }


def write_bundle(path: Path, a: dict[str, Any], seed: int = 0, tokenizer_in_bundle: bool = True,
                 tokenizer_model: str = "artifacts/hf_implant/tokenizers/tiny") -> RefACTV1:
    torch.manual_seed(seed)
    ref = RefACTV1(a).eval()
    path.mkdir(parents=True)
    sd = {k: v.contiguous() for k, v in ref.state_dict().items()}
    save_file(sd, str(path / "actv1_student.safetensors"))
    (path / "brain.json").write_text(json.dumps(brain_json(a, tokenizer_model), indent=2))
    if tokenizer_in_bundle:
        _tokenizer().save_pretrained(str(path))
    return ref


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, RefACTV1]]:
    root = tmp_path_factory.mktemp("actv1")
    out = {}
    for i, (name, over) in enumerate(VARIANTS.items()):
        a = {**BASE, **over}
        out[name] = (root / name, write_bundle(root / name, a, seed=i))
    return out


@pytest.fixture(scope="module")
def eng(bundles: dict[str, tuple[Path, RefACTV1]]) -> HrmEngine:
    return HrmEngine.from_pretrained(bundles["rope"][0], device="cpu", dtype="float32", max_batch_size=8)


def ref_greedy(ref: RefACTV1, ids: list[int], n: int, eos: int) -> list[int]:
    out: list[int] = []
    for _ in range(n):
        tok = int(ref(ids + out)[1][-1].argmax())
        out.append(tok)
        if tok == eos:
            break
    return out


# -- (a) forward parity ------------------------------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_forward_matches_reference(bundles, variant: str):
    path, ref = bundles[variant]
    e = HrmEngine.from_pretrained(path, device="cpu", dtype="float32")
    g = torch.Generator().manual_seed(7)
    rows = [torch.randint(3, 320, (n,), generator=g).tolist() for n in (9, 1, 17, 12)]
    ours_z = e.runner.full_hidden(rows, None)  # right-padded batch, padding masked out
    ours_last = e.runner.last_logits(rows)
    for r, ids in enumerate(rows):
        z, logits = ref(ids)
        assert (ours_z[r, : len(ids)] - z).abs().max().item() <= 1e-5
        assert (e.runner.logits(ours_z[r, : len(ids)]) - logits).abs().max().item() <= 1e-5
        assert (ours_last[r] - logits[-1]).abs().max().item() <= 1e-5


def test_act_segments_carry_z_H(bundles):
    from hrm.actv1 import load_bundle

    path, ref = bundles["rope"]
    model, _ = load_bundle(path, torch.device("cpu"), "float32", act_segments=3)
    ids = list(range(5, 20))
    ours = model.logits(model.hidden(torch.tensor([ids])))[0]
    assert (ours - ref(ids, segments=3)[1]).abs().max().item() <= 1e-5
    assert (ours - ref(ids, segments=1)[1]).abs().max().item() > 1e-3  # segments matter


# -- (b), (c) generation -------------------------------------------------------------------------

PROMPTS = ["hello world", "the quick brown fox jumps", "copy: abc ->", "sort: 3 1 2"]


def test_greedy_generation_matches_reference_loop(eng, bundles):
    ref = bundles["rope"][1]
    outs = eng.generate(PROMPTS, SamplingParams(max_tokens=10, temperature=0.0))
    eos = eng.tokenizer.eos_token_id
    for prompt, out in zip(PROMPTS, outs, strict=True):
        ids = eng.tokenizer(prompt)["input_ids"]
        assert out.prompt_tokens == len(ids)
        assert out.token_ids == ref_greedy(ref, ids, 10, eos)
    assert len({tuple(o.token_ids) for o in outs}) > 1


def test_greedy_generation_moe_and_learned(bundles):
    for name in ("moe", "learned"):
        path, ref = bundles[name]
        e = HrmEngine.from_pretrained(path, device="cpu", dtype="float32", max_batch_size=2)
        outs = e.generate(PROMPTS, SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True))
        for prompt, out in zip(PROMPTS, outs, strict=True):
            assert out.token_ids == ref_greedy(ref, e.tokenizer(prompt)["input_ids"], 6, eos=-1)


def test_seeded_sample_same_alone_and_in_batch(eng):
    params = SamplingParams(max_tokens=12, temperature=1.0, top_p=0.9, seed=1234, ignore_eos=True)
    alone = eng.generate(["hello world"], params)[0]
    others = [SamplingParams(max_tokens=3 + 2 * i, temperature=0.8, seed=i) for i in range(5)]
    batch = eng.generate([*PROMPTS, "hello world", "the end"], [*others[:4], params, others[4]])
    assert batch[4].token_ids == alone.token_ids
    assert alone.token_logprobs == pytest.approx(batch[4].token_logprobs, abs=1e-5)


def test_stop_strings_and_async_engine(eng):
    import asyncio

    from hrm.async_engine import AsyncHrmEngine

    greedy = SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)
    sync = eng.generate(PROMPTS, greedy)

    async def run() -> list[list[int]]:
        a = AsyncHrmEngine(eng, max_queue=16)
        await a.start()
        try:
            outs = await asyncio.gather(*(a.generate(p, greedy) for p in PROMPTS))
        finally:
            await a.stop()
        return [o.token_ids for o in outs]

    assert asyncio.run(run()) == [o.token_ids for o in sync]
    full = sync[0].text
    if len(full) > 2:
        stopped = eng.generate([PROMPTS[0]], SamplingParams(max_tokens=10, temperature=0.0, stop=(full[1:3],)))
        assert stopped[0].text == full[: full.index(full[1:3])]


# -- (d) log-likelihood ----------------------------------------------------------------------


def test_loglikelihood_matches_reference(eng, bundles):
    ref = bundles["rope"][1]
    tok = eng.tokenizer
    prompts = ["hello", "the quick brown", "copy: abc"]
    conts = [" world", " fox jumps", " -> abc"]
    outs = eng.loglikelihood(prompts, conts)
    for p, c, out in zip(prompts, conts, outs, strict=True):
        ctx = tok(p)["input_ids"]
        cont = tok(p + c)["input_ids"][len(ctx) :]
        lps, greedy = [], True
        for i, t in enumerate(cont):  # token i is scored where generation would sample it
            logp = torch.log_softmax(ref(ctx + cont[:i])[1][-1], dim=-1)
            lps.append(float(logp[t]))
            greedy &= int(logp.argmax()) == t
        assert out.num_tokens == len(cont)
        assert out.token_logprobs == pytest.approx(lps, abs=1e-4)
        assert out.is_greedy == greedy


def test_greedy_continuation_scores_as_greedy(eng):
    ids = eng.tokenizer("the quick brown fox")["input_ids"]
    gen = eng.generate(["the quick brown fox"], SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True))[0]
    scored = eng.score_items([ScoreItem(ctx_ids=ids, cont_ids=gen.token_ids)])[0]
    assert scored.is_greedy
    assert scored.token_logprobs == pytest.approx(gen.token_logprobs, abs=1e-5)


# -- (e), (f) loading errors -------------------------------------------------------------------


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_missing_key_names_key_and_file(bundles, tmp_path):
    d = _copy(bundles["rope"][0], tmp_path / "b")
    f = d / "actv1_student.safetensors"
    sd = load_file(str(f))
    del sd["inner.L_level.layers.1.mlp.down_proj.weight"]
    sd["inner.extra.weight"] = torch.zeros(2)
    save_file(sd, str(f))
    with pytest.raises(CheckpointError) as err:
        HrmEngine.from_pretrained(d, device="cpu")
    msg = str(err.value)
    assert str(f) in msg
    assert "inner.L_level.layers.1.mlp.down_proj.weight" in msg and "inner.extra.weight" in msg


def test_shape_mismatch_with_brain_json(bundles, tmp_path):
    d = _copy(bundles["rope"][0], tmp_path / "b")
    meta = json.loads((d / "brain.json").read_text())
    meta["arch"]["expansion"] = 8.0
    (d / "brain.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="shape mismatch.*gate_up_proj"):
        HrmEngine.from_pretrained(d, device="cpu")


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m["arch"].pop("H_cycles"), "H_cycles (arch.H_cycles or h_cycles)"),
        (lambda m: m["arch"].pop("hidden_size"), "hidden_size"),
        (lambda m: m.pop("type"), "'type' is None, expected 'actv1'"),
        (lambda m: m["arch"].update(pos_encodings="alibi"), "pos_encodings 'alibi'"),
    ],
)
def test_bad_brain_json_is_a_clear_error(bundles, tmp_path, edit, needle):
    d = _copy(bundles["rope"][0], tmp_path / "b")
    meta = json.loads((d / "brain.json").read_text())
    edit(meta)
    (d / "brain.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError) as err:
        HrmEngine.from_pretrained(d, device="cpu")
    assert needle in str(err.value) and str(d / "brain.json") in str(err.value)


def test_top_level_fields_fill_in_for_arch(bundles, tmp_path):
    """A brain.json with only the GUI's top-level spellings loads the same model."""
    d = _copy(bundles["rope"][0], tmp_path / "b")
    meta = json.loads((d / "brain.json").read_text())
    arch = meta.pop("arch")
    meta.update(hidden_size=arch["hidden_size"], h_layers=arch["H_layers"], l_layers=arch["L_layers"],
                num_heads=arch["num_heads"], expansion=arch["expansion"], h_cycles=arch["H_cycles"],
                l_cycles=arch["L_cycles"], pos_encoding=arch["pos_encodings"])
    (d / "brain.json").write_text(json.dumps(meta))
    e = HrmEngine.from_pretrained(d, device="cpu", dtype="float32")
    ids = [[5, 6, 7, 8]]
    orig = HrmEngine.from_pretrained(bundles["rope"][0], device="cpu", dtype="float32")
    assert torch.equal(e.runner.last_logits(ids), orig.runner.last_logits(ids))


# -- tokenizer resolution ------------------------------------------------------------------------


def test_tokenizer_from_tokenizer_model_or_override(bundles, tmp_path):
    tok_dir = tmp_path / "tok"
    _tokenizer().save_pretrained(str(tok_dir))
    d = tmp_path / "b"
    a = {**BASE}
    write_bundle(d, a, seed=0, tokenizer_in_bundle=False, tokenizer_model=str(tok_dir))
    e = HrmEngine.from_pretrained(d, device="cpu")
    assert e.tokenizer("hello")["input_ids"] == _tokenizer()("hello")["input_ids"]
    assert e.eos_ids == {2}

    meta = json.loads((d / "brain.json").read_text())
    meta["tokenizer_model"] = "artifacts/hf_implant/tokenizers/nope"
    (d / "brain.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="tokenizer_model 'artifacts/hf_implant/tokenizers/nope' not found"):
        HrmEngine.from_pretrained(d, device="cpu")
    assert HrmEngine.from_pretrained(d, device="cpu", tokenizer_path=tok_dir).tokenizer is not None


def test_runner_rows_follow_scheduler_moves(eng):
    """Rows retire out of order (different max_tokens): the histories must move with them."""
    plist = [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for n in (2, 9, 4, 7)]
    batched = eng.generate(PROMPTS, plist)
    for p, sp, out in zip(PROMPTS, plist, batched, strict=True):
        assert out.token_ids == eng.generate([p], copy.copy(sp))[0].token_ids


def test_server_serves_a_bundle_from_model_path(bundles):
    """The server's own load path (no injected engine): generate and loglikelihood over HTTP."""
    import httpx

    from hrm.server import ServerConfig, create_server_app
    from tests.router.fakes import serve_app

    path, _ = bundles["rope"]
    app = create_server_app(ServerConfig(model_path=str(path), device="cpu", max_new_tokens=8))
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        deadline = time.monotonic() + 60
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        r = client.post("/generate", json={"prompts": ["ab", "abc"], "max_tokens": 4, "temperature": 0})
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["completions"]) == 2
        assert all(1 <= u["completion_tokens"] <= 4 for u in body["prompt_usage"])
        r = client.post("/loglikelihood", json={"prompts": ["ab"], "continuations": ["c"]})
        assert r.status_code == 200, r.text
        assert r.json()["ll"][0] < 0
