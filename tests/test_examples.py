"""The notebook examples run as scripts, and the API they use says what the app says."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script,says", [
    ("count_the_parameters.py", ["by hand: 124,439,808", "accounting: 124,439,808", "tensors: 124,439,808"]),
    ("find_the_induction_head.py", ["induction head: (1,", "previous-token head: (0, 0)"]),
])
def test_examples_run(script, says):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    for line in says:
        assert line in done.stdout, done.stdout


def test_api_names_shapes_and_weights():
    import gpt2viz.anatomy.params  # noqa: F401  (the accounting module: its name must not hide the API's)

    model = gpt2viz.load("random:tiny:seed=3")
    assert model.label == "random tiny weights (seed 3)"
    run = model.run("Hello there world", mode="decode")
    assert run.shape("blocks.1.attn.z") == ("[B, nh, T, dh]", (1, 4, 1, 16))
    assert tuple(run["blocks.1.attn.z"].shape) == (1, 4, 1, 16) and "logits" in run
    with pytest.raises(KeyError, match="not recorded"):
        run.shape("loss")
    assert gpt2viz.parameters("gpt2").total == 124_439_808
    assert gpt2viz.attention_figure(model.run("Hello there world"), 1, 2).layout.title.text.startswith(
        "Attention · block 1 head 2")
    with pytest.raises(AttributeError):
        gpt2viz.nothing_here  # noqa: B018
