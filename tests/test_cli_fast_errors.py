"""A bad argument is answered before torch is imported: one line, exit 2, and `torch` not in sys.modules
when the command line returns (so the answer costs a fraction of a second, not torch's 1-3 s of imports)."""

import subprocess
import sys

import pytest

PROBE = """
import sys
from gpt2viz.cli import main
rc = main(sys.argv[1:])
print("torch imported" if "torch" in sys.modules else "torch not imported")
sys.exit(rc)
"""


@pytest.mark.parametrize("args, needle", [
    (["trace", "--text", "x", "--model", "nope"], "unknown model 'nope'"),
    (["trace", "--text", "x", "--weights", "/no/such/model.safetensors"], "no weights file at"),
    (["trace", "--text", ""], "the text is empty"),
    (["trace", "--text", "a " * 1100, "--model", "tiny"], "the model reads at most 1,024"),
    (["heads", "--text", "x", "--model", "gpt2-huge"], "unknown model"),
    (["ablate", "--text", "x", "--block", "12"], "block must be between 0 and 11, got 12"),
    (["ablate", "--text", "x", "--block", "0", "--head", "-1"], "head must be between 0 and 11, got -1"),
    (["ablate", "--text", "x", "--block", "0", "--neuron", "3072"], "neuron must be between 0 and 3071"),
    (["patch", "--clean", "a", "--corrupt", "", "--model", "tiny"], "the text is empty"),
    (["attribute", "--text", "x", "--answer", " a", "--model", "nope"], "unknown model"),
    (["params", "--model", "nope"], "unknown model"),
    (["params", "--n-layer", "0"], "n_layer must be positive"),
    (["weights", "--model", "nope", "--out", "x.safetensors"], "unknown model"),
    (["train-demo", "--threads", "0"], "--threads must be at least 1"),
    (["class-server", "--processes", "0"], "--processes must be at least 1"),
    (["download", "nope"], "no published checkpoint called 'nope'"),
    (["convert", "nanogpt", "/no/such/ckpt.pt", "--out", "x"], "no checkpoint at"),
    (["trace", "--text", "x", "--modee", "full"], "unrecognized arguments"),
    (["trace", "--text", "x", "--mode", "sideways"], "invalid choice"),
])
def test_a_bad_argument_is_one_line_before_torch(args, needle, tmp_path):
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).parents[1]),
                                          "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert p.stdout.strip() == "torch not imported"
