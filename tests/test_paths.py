"""Path patching against a GPT-2 forward written here, in float64, from the state dict alone (not the
project's blocks): for every receiver of a sender, the sender's output is removed from that
receiver's input only and the rest is run again; zero and mean; the demo model, a random tiny
model with biases (drawn non-zero) and one without, an untied head. Then the issue's acceptance
through the CLI, and its bad input."""

import json
import math

import pytest
import torch

import gpt2viz
from gpt2viz import cli
from gpt2viz.analysis import whatif
from gpt2viz.analysis.attribution import one_token
from gpt2viz.analysis.paths import after, parse_receiver, parse_sender, path_patch, receivers_of
from gpt2viz.model import tokenizer
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import custom_config

DEMO_TEXT = " people play one good game after work people play one good game"
PROB_TOL = 1e-4


# ---------------------------------------------------------------------------- the reference forward
def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps) * w
    return y if b is None else y + b


def _gelu(x, exact):
    if exact:
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


class Reference:
    """GPT-2 in float64 from a state dict, with one sender's output removed where asked."""

    def __init__(self, model):
        self.cfg = model.config
        self.w = {k: v.detach().double() for k, v in model.state_dict().items()}

    def g(self, key):
        return self.w.get(key)

    def lin(self, x, prefix):
        y = x @ self.w[prefix + ".weight"]
        b = self.g(prefix + ".bias")
        return y if b is None else y + b

    def forward(self, ids, sender=None, delta=None, receiver=None):
        """logits [T, V] and every head's output and MLP output [T, d] per block. `receiver`: None (clean),
        "total" (the sender's output replaced everywhere), or a receiver name."""
        cfg, eps = self.cfg, self.cfg.layer_norm_epsilon
        nh, dh, d = cfg.n_head, cfg.d_head, cfg.n_embd
        T = len(ids)
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][:T]
        outs = {}
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        for b in range(cfg.n_layer):
            p = f"h.{b}."

            def ln1(stream):
                return _ln(stream, self.w[p + "ln_1.weight"], self.g(p + "ln_1.bias"), eps)
            qkv = self.lin(ln1(x), p + "attn.c_attn")  # [T, 3d]
            removed = self.lin(ln1(x - delta), p + "attn.c_attn") if delta is not None else None
            w_o = self.w[p + "attn.c_proj.weight"]
            attn = torch.zeros(T, d, dtype=torch.float64)
            for h in range(nh):
                cols = [slice(i * d + h * dh, i * d + (h + 1) * dh) for i in range(3)]
                q, k, v = (qkv[:, c] for c in cols)
                if receiver is not None and receiver.startswith(f"blocks.{b}.attn.head.{h}."):
                    which = "qkv".index(receiver[-1])
                    q, k, v = (removed[:, cols[i]] if i == which else t for i, t in enumerate((q, k, v)))
                s = (q @ k.T) / math.sqrt(dh)
                s = s.masked_fill(mask, float("-inf")).softmax(-1)
                out = (s @ v) @ w_o[h * dh:(h + 1) * dh]
                outs[f"blocks.{b}.attn.head.{h}"] = out
                if receiver == "total" and sender == f"blocks.{b}.attn.head.{h}":
                    out = out - delta
                attn = attn + out
            if self.g(p + "attn.c_proj.bias") is not None:
                attn = attn + self.w[p + "attn.c_proj.bias"]
            x = x + attn
            mlp_in = x - delta if receiver == f"blocks.{b}.mlp" else x
            ln2 = _ln(mlp_in, self.w[p + "ln_2.weight"], self.g(p + "ln_2.bias"), eps)
            hidden = _gelu(self.lin(ln2, p + "mlp.c_fc"), cfg.activation == "gelu")
            m = self.lin(hidden, p + "mlp.c_proj")
            outs[f"blocks.{b}.mlp"] = m
            if receiver == "total" and sender == f"blocks.{b}.mlp":
                m = m - delta
            x = x + m
        final = x - delta if receiver == "logits" else x
        final = _ln(final, self.w["ln_f.weight"], self.g("ln_f.bias"), eps)
        w_u = self.w["wte.weight"] if cfg.tied else self.w["lm_head.weight"]
        return final @ w_u.T, outs

    def paths(self, ids, sender, ablation, receivers):
        """{receiver or "clean"/"total": logits [T, V]}."""
        clean, outs = self.forward(ids)
        out = outs[sender]
        delta = out if ablation == "zero" else out - out.mean(0, keepdim=True)
        got = {"clean": clean, "total": self.forward(ids, sender, delta, "total")[0]}
        for r in receivers:
            got[r] = self.forward(ids, sender, delta, r)[0]
        return got


def check_against_reference(model, ids, sender, answer, ablation, position=None, versus=None):
    p = path_patch(model, ids, sender, answer, versus, position, ablation)
    names = [part.name for part, _ in p.rows]
    assert names == [r.name for r in receivers_of(model.config, parse_sender(sender, model.config))]
    ref = Reference(model).paths(ids, sender, ablation, names)
    pos = len(ids) - 1 if position is None else position
    got = {"clean": p.clean, "total": p.total} | {part.name: r for part, r in p.rows}
    for name, logits in ref.items():
        prob = float(logits[pos].softmax(-1)[answer])
        logit = float(logits[pos, answer] - (0 if versus is None else logits[pos, versus]))
        assert got[name].prob == pytest.approx(prob, abs=PROB_TOL), name
        assert got[name].logit == pytest.approx(logit, abs=2e-3 * max(1.0, abs(logit))), name
    return p, ref


# ---------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def demo():
    model = gpt2viz.load("demo").model
    before = tokenizer.current()
    tokenizer.use(tokenizer.vocabulary_of(model))
    ids, answer = tokenizer.encode(DEMO_TEXT), one_token(" after")
    tokenizer.use(before)
    return model, ids, answer


def _noisy(cfg, seed):
    """Random weights with every bias and LayerNorm drawn away from its init, so each takes part."""
    model = random_model(cfg, seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln_" in name or name.startswith("ln_f"):
                p.add_(0.3 * torch.randn(p.shape, generator=g))
            elif p.dim() == 2:
                p.mul_(8.0)  # larger than the init's 0.02, so the heads attend sharply and effects are visible
    return model


def _tiny(bias, tied=True, activation_exact=False, seed=1):
    cfg = custom_config(vocab_size=97, n_positions=32, n_embd=32, n_layer=3, n_head=4, bias=bias, tied=tied)
    if activation_exact:
        from dataclasses import replace
        cfg = replace(cfg, activation="gelu")
    return _noisy(cfg, seed)


TINY_IDS = [5, 17, 3, 44, 9, 5, 17, 3, 44, 60, 2]


# ---------------------------------------------------------------------------- against the reference
@pytest.mark.parametrize("ablation", ["zero", "mean"])
@pytest.mark.parametrize("sender", ["blocks.0.attn.head.0", "blocks.0.attn.head.3", "blocks.0.mlp"])
def test_demo_every_receiver_agrees_with_float64_forward(demo, sender, ablation):
    model, ids, answer = demo
    check_against_reference(model, ids, sender, answer, ablation)


@pytest.mark.parametrize("ablation", ["zero", "mean"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("sender", ["blocks.0.attn.head.1", "blocks.1.attn.head.2", "blocks.1.mlp",
                                    "blocks.2.attn.head.0", "blocks.2.mlp"])
def test_tiny_every_receiver_agrees_with_float64_forward(bias, sender, ablation):
    model = _tiny(bias)
    p, ref = check_against_reference(model, TINY_IDS, sender, 17, ablation)
    # the removal changes something: not a test that passes because nothing moved
    moved = max(float((ref[r.name][-1] - ref["clean"][-1]).abs().max()) for r, _ in p.rows)
    assert moved > 1e-2


@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_middle_position_versus_untied_exact_gelu(ablation):
    model = _tiny(True, tied=False, activation_exact=True, seed=4)
    check_against_reference(model, TINY_IDS, "blocks.0.attn.head.2", 44, ablation, position=6, versus=3)


def test_one_token_text(demo):
    model, ids, answer = demo
    check_against_reference(model, ids[:1], "blocks.0.attn.head.1", answer, "mean")


def test_total_is_what_ifs_knockout(demo):
    model, ids, answer = demo
    for ablation in ("zero", "mean"):
        p = path_patch(model, ids, "blocks.0.attn.head.0", answer, ablation=ablation)
        knocked = whatif.knockout(model, ids, whatif.Target(0, "head", 0), ablation)
        assert p.total.prob == pytest.approx(float(whatif.log_probs(knocked).exp()[answer]), abs=1e-5)


def test_demo_route_is_through_mlp_0(demo):
    model, ids, answer = demo
    p = path_patch(model, ids, "blocks.0.attn.head.0", answer, ablation="zero")
    assert p.clean.prob > 0.9 and p.total.prob < 0.01
    assert p.reading("blocks.0.mlp").prob < 0.01
    assert all(p.reading(f"blocks.1.attn.head.{h}.k").prob > 0.85 for h in range(4))


def test_receivers_chosen_and_order(demo):
    model, ids, answer = demo
    p = path_patch(model, ids, "blocks.0.attn.head.0", answer, receivers=["logits", "blocks.1.attn.head.2.k"])
    assert [r.name for r, _ in p.rows] == ["logits", "blocks.1.attn.head.2.k"]
    full = path_patch(model, ids, "blocks.0.attn.head.0", answer)
    for part, r in p.rows:
        assert r.prob == pytest.approx(full.reading(part.name).prob, abs=1e-6)


def test_names_and_order():
    cfg = _tiny(True).config
    head = parse_sender("blocks.1.attn.head.2", cfg)
    mlp = parse_sender("blocks.1.mlp", cfg)
    assert [r.name for r in receivers_of(cfg, head)][:2] == ["blocks.1.mlp", "blocks.2.attn.head.0.q"]
    assert [r.name for r in receivers_of(cfg, mlp)][0] == "blocks.2.attn.head.0.q"
    assert receivers_of(cfg, parse_sender("blocks.2.mlp", cfg))[-1].name == "logits"
    assert len(receivers_of(cfg, parse_sender("blocks.2.mlp", cfg))) == 1
    assert not after(head, parse_receiver("blocks.1.attn.head.0.k", cfg))
    assert not after(mlp, parse_receiver("blocks.1.mlp", cfg))
    for bad in ("blocks.9.mlp", "blocks.0.attn.head.7", "blocks.0.attn", "embed"):
        with pytest.raises(ValueError):
            parse_sender(bad, cfg)


# ---------------------------------------------------------------------------- the CLI
ACCEPT = ["paths", "--weights", "demo", "--text", DEMO_TEXT, "--answer", " after", "--sender",
          "blocks.0.attn.head.0", "--ablation", "zero", "--json"]


def test_cli_acceptance(capsys, demo):
    assert cli.main(list(ACCEPT)) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r) == {"sender", "ablation", "answer", "versus", "position", "clean", "total", "rows"}
    assert (r["sender"], r["ablation"], r["answer"], r["versus"], r["position"]) == (
        "blocks.0.attn.head.0", "zero", " after", None, 11)
    assert r["total"]["prob"] < 0.01
    rows = {row["receiver"]: row for row in r["rows"]}
    assert rows["blocks.0.mlp"]["prob"] < 0.01
    assert all(rows[f"blocks.1.attn.head.{h}.k"]["prob"] > 0.85 for h in range(4))
    model, ids, answer = demo
    ref = Reference(model).paths(ids, "blocks.0.attn.head.0", "zero", list(rows))
    for name, logits in ref.items():
        got = r[name] if name in ("clean", "total") else rows[name]
        assert set(got) == {"logit", "prob"} | ({"receiver"} if name in rows else set())
        assert got["prob"] == pytest.approx(float(logits[-1].softmax(-1)[answer]), abs=PROB_TOL), name


@pytest.mark.parametrize("extra, needle", [
    (["--sender", "blocks.1.attn.head.0", "--receiver", "blocks.0.mlp"], "before"),
    (["--sender", "blocks.0.attn.head.9"], "no head 9"),
    (["--sender", "blocks.0.attn"], "unknown sender"),
    (["--sender", "blocks.0.mlp", "--receiver", "blocks.1.attn.head.0.x"], "unknown receiver"),
    (["--sender", "blocks.0.mlp", "--answer", " after work"], "2 tokens"),
    (["--sender", "blocks.0.mlp", "--position", "13"], "position"),
    (["--sender", "blocks.0.mlp", "--ablation", "half"], "invalid choice"),
])
def test_cli_bad_input_is_one_line(capsys, extra, needle):
    args = ["paths", "--weights", "demo", "--text", DEMO_TEXT, "--answer", " after", *extra]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_cli_text_output(capsys):
    assert cli.main(["paths", "--weights", "demo", "--text", DEMO_TEXT, "--answer", " after",
                     "--sender", "blocks.0.attn.head.0", "--ablation", "mean"]) == 0
    out = capsys.readouterr().out
    assert "blocks.0.mlp" in out and "total" in out and "logits" in out


def test_notebook_api_is_the_cli_json(capsys):
    m = gpt2viz.load("demo")
    r = m.paths(DEMO_TEXT, "blocks.0.attn.head.0", " after", receivers=["blocks.0.mlp", "logits"])
    assert [row["receiver"] for row in r["rows"]] == ["blocks.0.mlp", "logits"]
    assert cli.main([*ACCEPT, "--receiver", "blocks.0.mlp", "--receiver", "logits"]) == 0
    assert json.loads(capsys.readouterr().out) == r
