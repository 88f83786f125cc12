"""Attribution patching (analysis/estimate.py): each cell's estimate is the metric's derivative along
the patch, checked against finite differences of the metric computed with the patch itself (a float64
model, the patch scaled by ε); on the demo pair it sits beside the exact patching with a correlation
and a worst cell; the CLI's patch --estimate prints them."""

import copy
import json

import pytest
import torch

import gpt2viz
from gpt2viz import cli
from gpt2viz.analysis.estimate import agreement, estimate
from gpt2viz.analysis.whatif import last_logits, logit_diff, patch
from gpt2viz.model.interventions import Intervention
from gpt2viz.model.record import Recorder
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import custom_config
from gpt2viz.spec.schema import block_name

A = [5, 17, 3, 44, 9, 5, 17, 3]
B = [5, 17, 3, 44, 9, 5, 60, 3]


def _tiny64():
    cfg = custom_config(vocab_size=97, n_positions=16, n_embd=32, n_layer=3, n_head=4)
    model = random_model(cfg, 2)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.mul_(6.0) if p.dim() == 2 else p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator()
                                                                        .manual_seed(len(name))))
    return copy.deepcopy(model).double()


def _acts(model, ids) -> dict[str, torch.Tensor]:
    names = [block_name(x, b) for b in range(model.config.n_layer) for x in ("resid_pre", "attn.z")]
    rec = Recorder(names=(), keep_graph=names)
    with torch.no_grad():
        model(torch.tensor([ids]), rec)
    return rec.live


@pytest.mark.parametrize("answers", [(44, 60), (3, 9)])
def test_each_cell_is_the_derivative_along_its_patch(answers):
    model = _tiny64()
    est = estimate(model, A, B, answers)
    gap = est.clean_diff - est.corrupt_diff
    m_b = float(logit_diff(last_logits(model, B, ())[0], answers))
    assert m_b == pytest.approx(est.corrupt_diff, abs=1e-9)
    # float64 activations (a trace stores float32, whose rounding, over ε, would swamp the difference)
    source, corrupt = _acts(model, A), _acts(model, B)
    eps = 1e-5
    checked = 0
    for b in range(3):
        name = block_name("resid_pre", b)
        for p in (0, 4, 6, 7):
            nudged = corrupt[name] + eps * (source[name] - corrupt[name])
            iv = Intervention(name, "patch", position=p, source=nudged)
            m = float(logit_diff(last_logits(model, B, [iv])[0], answers))
            assert (m - m_b) / eps / gap == pytest.approx(float(est.resid[b, p]), abs=1e-4, rel=1e-3), (b, p)
            checked += abs(float(est.resid[b, p])) > 1e-3
        name = block_name("attn.z", b)
        for h in range(4):
            nudged = corrupt[name] + eps * (source[name] - corrupt[name])
            iv = Intervention(name, "patch", head=h, source=nudged)
            m = float(logit_diff(last_logits(model, B, [iv])[0], answers))
            assert (m - m_b) / eps / gap == pytest.approx(float(est.heads[b, h]), abs=1e-4, rel=1e-3), (b, h)
    assert checked >= 3  # cells that move: not a test that passes on zeros


def test_agreement_names_the_worst_cell():
    exact = torch.tensor([[0.0, 1.0], [0.5, float("nan")]])
    est = torch.tensor([[0.05, 0.5], [0.5, 0.2]])
    a = agreement(exact, est)
    assert a.worst == (0, 1) and (a.exact, a.estimated) == (1.0, 0.5) and a.misses == 1 and a.cells == 3
    assert -1 <= a.correlation <= 1


def test_on_the_demo_pair_the_estimate_sits_beside_the_exact_grid():
    m = gpt2viz.load("demo").model
    from gpt2viz.model import tokenizer
    from gpt2viz.teaching.prompts import prompts_for

    pair = prompts_for("demo")["pair"]
    a, b = tokenizer.encode(pair.text), tokenizer.encode(pair.text_b)
    exact = patch(m, a, b)
    est = estimate(m, a, b, exact.answers)
    assert est.resid.shape == exact.resid.shape and est.heads.shape == exact.heads.shape
    assert est.clean_diff == pytest.approx(exact.clean_diff, abs=1e-4)
    # the last block's resid_pre at the last position: the metric is linear in it but for ln_f's scale
    r = agreement(exact.resid, est.resid)
    assert r.correlation > 0.5, r


def test_cli_patch_estimate(capsys):
    assert cli.main(["patch", "--weights", "demo", "--clean", " people play one good game after work people play one "
                     "good game", "--corrupt", " people play one good game after work people play one good point",
                     "--estimate", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    e = r["estimate"]
    assert len(e["resid_pre"]) == len(r["restored"]["resid_pre"]) and len(e["attn_z"][0]) == 4
    assert set(e["resid_pre_agreement"]) == {"correlation", "worst", "exact", "estimate", "misses", "cells",
                                             "miss_above"}

