"""The converter on hostile files: each is refused in one line, exit 2, within a CPU and memory bound.

Each file is small and uses only what the converter lets through (a vocabulary's plain opcodes;
torch.load's weights_only types), yet describes a structure too large to walk or a model too
large to build: a list fetched twice from the memo into the next list, sixty times (2^60 elements
to format), a list nested ten thousand deep, model_args naming sizes no tensor carries, a tensor
whose zero stride repeats one stored number into a terabyte. The command runs in a process of its
own with a CPU limit (so a regression fails instead of hanging) and reports its own CPU time and
peak memory.
"""

import json
import pickle
import resource
import subprocess
import sys

import pytest
import torch
from nanogpt_ref import ARGS, SYMBOLS, NanoGPT, save_like_train_py, save_meta

from gpt2viz.model.convert import ConvertError, read_plain_pickle
from gpt2viz.model.pickle_budget import PickleRefused, check_pickle

CPU_BOUND = 5.0  # seconds of CPU for the conversion itself (the refusal takes milliseconds)
RSS_BOUND = 600 * 2 ** 20  # bytes, the whole process's peak (Python, torch and the refusal)
# The peak is this process image's own (VmHWM): ru_maxrss carries the parent's peak across fork and exec,
# so under a pytest worker that once held 3.8 GB it read 3.8 GB before the converter ran.
RUNNER = """
import json, resource, sys
def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
import torch  # what the converter imports anyway: the refusal's own memory is what comes after it
from gpt2viz.cli import main
before, rss_before = resource.getrusage(resource.RUSAGE_SELF), peak()
rc = main(sys.argv[1:])
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(json.dumps({"cpu": cpu, "rss": peak(), "rss_before": rss_before}))
sys.exit(rc)
"""


def doubling(levels=60):
    """A list of two references to one list of two references to ... : 2^levels elements to walk."""
    x = []
    for _ in range(levels):
        x = [x, x]
    return x


def deep(levels=100):
    x = []
    for _ in range(levels):
        x = [x]
    return x


def convert(tmp_path, ckpt, meta=None):
    """The command line on the files: (exit code, stderr lines, {cpu, rss})."""
    argv = ["convert", "nanogpt", str(ckpt), "--out", str(tmp_path / "out")] + (["--meta", str(meta)] if meta else [])

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))  # a regression fails instead of running for hours

    r = subprocess.run([sys.executable, "-c", RUNNER, *argv], capture_output=True, text=True, timeout=300,
                       preexec_fn=limit)
    stats = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
    return r.returncode, r.stderr.strip().splitlines(), stats


def assert_refused(tmp_path, result, *words):
    rc, lines, stats = result
    assert rc == 2 and len(lines) == 1, (rc, lines[:3])
    assert all(w in lines[0] for w in words), lines[0]
    assert len(lines[0]) < 400, lines[0]
    assert stats["cpu"] < CPU_BOUND, stats
    # the refusal adds no memory to what Python and torch take to start
    assert stats["rss"] < RSS_BOUND and stats["rss"] - stats["rss_before"] < 100 * 2 ** 20, stats
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def nano():
    torch.manual_seed(0)
    return NanoGPT(ARGS).eval()


@pytest.fixture()
def ckpt(tmp_path, nano):
    save_like_train_py(nano, tmp_path / "ckpt.pt")
    return tmp_path / "ckpt.pt"


def save_ckpt(path, nano, **args):
    torch.save({"model": nano.state_dict(), "optimizer": {}, "model_args": dict(ARGS) | args, "iter_num": 1}, path)
    return path


# ---------------------------------------------------------------------------- meta.pkl
def test_a_meta_pkl_of_a_doubling_list_is_refused_before_it_is_walked(tmp_path, ckpt):
    meta = tmp_path / "meta.pkl"
    meta.write_bytes(pickle.dumps({"vocab_size": doubling(), "itos": dict(enumerate(SYMBOLS))}))
    assert meta.stat().st_size < 1500  # a small file: the memo holds each level once
    assert_refused(tmp_path, convert(tmp_path, ckpt, meta), "meta.pkl was refused without running it")


def test_a_meta_pkl_of_a_wide_shallow_list_is_refused_by_its_size(tmp_path, ckpt):
    a = ["x"] * 1000
    b = [a] * 1000  # one list, fetched from the memo a thousand times
    meta = tmp_path / "meta.pkl"
    meta.write_bytes(pickle.dumps({"vocab_size": [b] * 1000, "itos": dict(enumerate(SYMBOLS))}))
    assert meta.stat().st_size < 20_000  # 10^9 strings to walk
    assert_refused(tmp_path, convert(tmp_path, ckpt, meta), "meta.pkl was refused without running it",
                   "it builds an object of more than 1,000,000 elements")


def test_a_meta_pkl_nested_ten_thousand_deep_is_refused(tmp_path, ckpt):
    meta = tmp_path / "meta.pkl"
    meta.write_bytes(b"\x80\x02" + b"]" * 10_000 + b"a" * 9_999 + b".")  # [[[[...]]]], ten thousand deep
    assert_refused(tmp_path, convert(tmp_path, ckpt, meta), "meta.pkl was refused", "nests objects more than 4 deep")


def test_a_meta_pkl_that_changes_a_placed_list_is_refused():
    # [a, a] built first, a filled after: a stand-in's size would fall behind, so the order itself is refused
    data = (b"\x80\x02]q\x00]q\x01h\x00a" b"h\x00a" b"h\x00K\x01a.")
    with pytest.raises(PickleRefused, match="changes a container after placing it"):
        check_pickle(data, max_nodes=1000, max_depth=4)


def test_plain_opcodes_in_an_order_no_pickler_writes_say_so_in_one_line(tmp_path):
    path = tmp_path / "meta.pkl"
    path.write_bytes(b"\x80\x02}]K\x01s.")  # a dict whose key is a list
    with pytest.raises(ConvertError, match="is not a pickle a vocabulary is saved as") as e:
        read_plain_pickle(path)
    assert "\n" not in str(e.value)


def test_a_meta_pkl_with_a_huge_integer_is_refused(tmp_path):
    path = tmp_path / "meta.pkl"
    path.write_bytes(pickle.dumps({"vocab_size": 1 << 100_000, "itos": {}}))
    with pytest.raises(ConvertError, match="an integer of 100,001 bits"):
        read_plain_pickle(path)


def test_an_ordinary_meta_pkl_still_reads(tmp_path):
    save_meta(tmp_path / "meta.pkl")
    meta = read_plain_pickle(tmp_path / "meta.pkl")
    assert meta["vocab_size"] == len(SYMBOLS) == len(meta["itos"])


# ---------------------------------------------------------------------------- ckpt.pt
def test_model_args_of_a_doubling_list_is_refused_before_torch_load(tmp_path, nano):
    path = save_ckpt(tmp_path / "ckpt.pt", nano, n_layer=doubling())
    assert_refused(tmp_path, convert(tmp_path, path), "ckpt.pt was refused without loading it",
                   "more than 1,000,000 elements")
    b = [["x"] * 1000] * 1000
    path = save_ckpt(tmp_path / "ckpt.pt", nano, n_layer=[b] * 1000)
    assert_refused(tmp_path, convert(tmp_path, path), "ckpt.pt was refused without loading it",
                   "more than 1,000,000 elements")


def test_a_deeply_nested_checkpoint_is_refused(tmp_path, nano):
    torch.save({"model": nano.state_dict(), "model_args": dict(ARGS), "config": deep()}, tmp_path / "ckpt.pt")
    assert_refused(tmp_path, convert(tmp_path, tmp_path / "ckpt.pt"), "nests objects more than 32 deep")


@pytest.mark.parametrize("args, words", [
    ({"n_embd": 10 ** 9}, ("model_args says n_embd = 1000000000", "wte.weight is [65, 64]")),
    ({"n_layer": 10 ** 6, "block_size": 10 ** 9}, ("model_args says block_size = 1000000000", "128 rows")),
    ({"n_layer": 10 ** 6}, ("model_args says n_layer = 1000000", "blocks h.0 to h.1")),
    ({"vocab_size": 10 ** 12}, ("model_args says vocab_size = 1000000000000",)),
    ({"n_head": 10 ** 6}, ("n_head = 1000000", "more heads than the 64 dimensions")),
])
def test_model_args_no_tensor_carries_are_refused_before_a_model_is_built(tmp_path, nano, args, words):
    path = save_ckpt(tmp_path / "ckpt.pt", nano, **args)
    assert_refused(tmp_path, convert(tmp_path, path), "ckpt.pt: ", *words)


def test_an_integer_too_large_for_any_size_is_refused_before_torch_load(tmp_path, nano):
    path = save_ckpt(tmp_path / "ckpt.pt", nano, n_embd=10 ** 40)
    assert_refused(tmp_path, convert(tmp_path, path), "ckpt.pt was refused without loading it",
                   "it holds an integer of 133 bits")


def test_a_zero_stride_tensor_is_refused_before_it_is_copied(tmp_path, nano):
    state = nano.state_dict()
    state["transformer.h.0.mlp.c_fc.weight"] = torch.zeros(1).expand(10 ** 6, 10 ** 6)  # 4 TB as a copy
    torch.save({"model": state, "model_args": dict(ARGS)}, tmp_path / "ckpt.pt")
    assert_refused(tmp_path, convert(tmp_path, tmp_path / "ckpt.pt"), "h.0.mlp.c_fc.weight",
                   "has shape [1000000, 1000000], more numbers than its file stores (4 bytes)")


def test_a_checkpoint_not_saved_by_torch_save_s_zip_is_refused(tmp_path):
    (tmp_path / "ckpt.pt").write_bytes(pickle.dumps({"model_args": doubling()}))
    assert_refused(tmp_path, convert(tmp_path, tmp_path / "ckpt.pt"), "is not the zip archive torch.save writes")


def test_an_ordinary_checkpoint_still_converts(tmp_path, ckpt):
    save_meta(tmp_path / "meta.pkl")
    rc, lines, stats = convert(tmp_path, ckpt, tmp_path / "meta.pkl")
    assert rc == 0 and (tmp_path / "out" / "model.safetensors").is_file(), lines


def test_a_hostile_pickle_is_refused_before_torch_is_imported(tmp_path, ckpt):
    """The whole command, not only the refusal: the pickles' budgets run before the converter imports
    torch, so a hostile meta.pkl or ckpt.pt costs the process a fraction of a second and tens of MB."""
    meta = tmp_path / "meta.pkl"
    meta.write_bytes(pickle.dumps({"vocab_size": doubling(), "itos": dict(enumerate(SYMBOLS))}))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a zip at all")
    probe = ("import sys\nfrom gpt2viz.cli import main\nrc = main(sys.argv[1:])\n"
             "print('torch' in sys.modules)\nsys.exit(rc)")
    for argv in (["convert", "nanogpt", str(ckpt), "--meta", str(meta), "--out", str(tmp_path / "o1")],
                 ["convert", "nanogpt", str(bad), "--out", str(tmp_path / "o2")]):
        r = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stdout.strip() == "False"  # torch never imported
