"""TransformerLens' hook names and layouts for the recorded tensors, in a run and in a
saved file; each layout checked against what it must equal in our own recording."""

import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

import gpt2viz
from gpt2viz.anatomy.hooks import HOOKS, from_hook

ROOT = Path(__file__).resolve().parents[1]


def test_hook_layouts_agree_with_the_recording():
    run = gpt2viz.load("random:tiny").run("Hello there big world")
    eps = run.config.layer_norm_epsilon
    assert torch.equal(run["blocks.1.attn.hook_z"].reshape(1, 4, -1), run["blocks.1.attn.merged"])  # [B, T, nh·dh]
    assert torch.equal(run["blocks.1.attn.hook_q"], run["blocks.1.attn.q"].transpose(1, 2))
    scores = run["blocks.0.attn.hook_attn_scores"]  # [B, nh, T, T], masked
    assert torch.isinf(scores[0, :, 0, 1:]).all() and torch.isfinite(scores[0, :, -1]).all()
    assert torch.allclose(torch.softmax(scores, -1), run["blocks.0.attn.hook_pattern"], atol=1e-6)
    assert torch.equal(run["blocks.0.ln1.hook_scale"], (run["blocks.0.ln1.var"] + eps).sqrt())
    assert run["hook_pos_embed"].shape == (1, 4, 64) and run["blocks.1.hook_resid_post"] is run["blocks.1.resid_post"]
    assert "blocks.1.attn.hook_z" in run and "blocks.9.attn.hook_z" not in run


def test_every_hook_name_maps_back():
    for ours, (theirs, _) in HOOKS.items():
        assert from_hook(f"blocks.3.{theirs}") == f"blocks.3.{ours}"
    assert from_hook("blocks.3.attn.z") is None


def test_trace_out_with_hook_names(tmp_path):
    out = tmp_path / "hooks.safetensors"
    done = subprocess.run([sys.executable, "-m", "gpt2viz", "trace", "--model", "tiny", "--text", "Hello there",
                           "--out", str(out), "--hook-names"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    saved = load_file(str(out))
    assert saved["blocks.0.attn.hook_z"].shape == (1, 2, 4, 16) and "logits" in saved and "hook_embed" in saved
    assert "blocks.0.attn.z" not in saved
    printed = {line.split()[0] for line in done.stdout.splitlines()[1:]}  # the names it lists: the file's
    assert printed == set(saved) and "blocks.0.attn.hook_z" in printed
    bad = subprocess.run([sys.executable, "-m", "gpt2viz", "trace", "--model", "tiny", "--text", "Hi", "--hook-names"],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--hook-names is for --out" in bad.stderr
