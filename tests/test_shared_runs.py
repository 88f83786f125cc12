"""Runs shared by a host's processes. A run one process computed is mapped by another from
the host's folder, every tensor as it was (derived ones too); two processes asking for one run at
once compute it once; the folder's budget evicts the oldest file no process maps, and keeps a run
that would not fit its process's own."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from gpt2viz.model.modes import Mode, run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.server.shared_runs import SUFFIX, SharedRuns, digest, plain
from gpt2viz.spec.config import get_config

TEXT = "The cat sat on the mat because it was warm."


@pytest.fixture(scope="module")
def model():
    return random_model(get_config("tiny"), 0)


def key(mode: Mode, text: str = TEXT) -> tuple:
    return (("random", "tiny", 0), tuple(encode(text)), mode.value, None, None)


def refuse():
    raise AssertionError("ran again: the other process's run was not mapped")


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.TRAINING, Mode.PREFILL, Mode.DECODE])
def test_a_run_one_process_wrote_another_maps_whole(tmp_path, model, mode):
    ids = encode(TEXT)
    first = SharedRuns(tmp_path, 64 * 2**20).get_or_run(key(mode), lambda: run(model, ids, mode), model)
    other = SharedRuns(tmp_path, 64 * 2**20)  # another process's view of the folder
    mapped = other.get_or_run(key(mode), refuse, model)
    assert other.read == 1 and mapped.shared_file is not None
    assert (mapped.mode, mapped.token_ids, mapped.tokens, mapped.P, mapped.T, mapped.names) == \
        (first.mode, first.token_ids, first.tokens, first.P, first.T, first.names)
    for name in first.names:  # stored and derived alike
        assert torch.equal(mapped[name], first[name]), name
    assert os.path.getsize(tmp_path / f"{digest(key(mode))}{SUFFIX}") >= sum(
        t.numel() * t.element_size() for t in first.tensors.values())


def test_only_keys_alike_in_every_process_are_shared():
    assert plain(key(Mode.FULL)) and not plain((("upload", object()), (1, 2)))
    assert digest(key(Mode.FULL)) == digest(key(Mode.FULL)) != digest(key(Mode.FULL, "Another text."))


def ask(folder: str) -> None:
    """One process of the host: asks for the run; prints 'ran' if it computed it, 'mapped' if it read it,
    and the logits' sum."""
    m = random_model(get_config("tiny"), 0)
    ran = []

    def slow():
        ran.append(True)
        time.sleep(1.0)  # the other process asks meanwhile
        return run(m, encode(TEXT), Mode.FULL)
    t = SharedRuns(folder, 64 * 2**20).get_or_run(key(Mode.FULL), slow, m)
    print("ran" if ran else "mapped", float(t["logits"].sum()))


def test_two_processes_asking_one_run_at_once_compute_it_once(tmp_path):
    # new interpreters, not multiprocessing's spawn: that re-runs the worker's __main__, which an AppTest
    # earlier in the same pytest process may have left pointing at app.py
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import test_shared_runs as t; t.ask(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    answers = [p.communicate(timeout=180)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs), answers
    assert sorted(a for a, _ in answers) == ["mapped", "ran"] and answers[0][1] == answers[1][1]


def test_the_folder_evicts_the_oldest_file_no_process_maps(tmp_path, model):
    runs = {t: run(model, encode(t), Mode.FULL) for t in ("The first text.", "The second text.", "The third text.")}
    assert len({len(r.token_ids) for r in runs.values()}) == 1  # three files of one size
    size = max(sum(t.numel() * t.element_size() for t in r.tensors.values()) for r in runs.values())
    folder = SharedRuns(tmp_path, int(2.5 * size))  # room for two (and their headers)
    texts = list(runs)
    folder.get_or_run(key(Mode.FULL, texts[0]), lambda: runs[texts[0]], model)
    time.sleep(0.01)
    folder.get_or_run(key(Mode.FULL, texts[1]), lambda: runs[texts[1]], model)
    held = SharedRuns(tmp_path, folder.budget).get_or_run(key(Mode.FULL, texts[0]), refuse, model)  # mapped: read now
    os.utime(tmp_path / f"{digest(key(Mode.FULL, texts[0]))}{SUFFIX}", (0, 0))  # and the oldest, all the same
    folder.get_or_run(key(Mode.FULL, texts[2]), lambda: runs[texts[2]], model)
    files = {p.name for p in tmp_path.glob(f"*{SUFFIX}")}
    assert files == {f"{digest(key(Mode.FULL, t))}{SUFFIX}" for t in (texts[0], texts[2])}  # the unmapped one went
    assert held["logits"].shape[-1] == model.config.vocab_size
    del held  # its file is no longer mapped: the next run may evict it
    tiny = SharedRuns(tmp_path, size // 4)  # a run larger than the folder stays its process's own
    tiny.get_or_run(key(Mode.FULL, "Not written."), lambda: run(model, encode("Not written."), Mode.FULL), model)
    assert tiny.written == 0 and len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2
