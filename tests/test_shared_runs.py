"""Runs shared by a host's processes. A run one process computed is mapped by another from
the host's folder, every tensor as it was (derived ones too); two processes asking for one run at
once compute it once; the folder's budget evicts the oldest file no process maps, and keeps a run
that would not fit its process's own.

Bit for bit, and why that is legitimate here: the product promises a mapped run equals the run it
stores, derived tensors included. The derived attention scores are a matrix product whose rounding
MKL may take from its operands' alignment (on this kind of AMD CPU, q @ kᵀ rounds otherwise when an
operand starts 4, 8 or 12 bytes past a 16-byte boundary) and layout. The product keeps the promise by
construction: the file places every tensor on a 64-byte boundary, as torch's allocator does, and the
scores are computed from contiguous q and k on every path. So these tests check the construction (the
offsets, the pointers) as well as the values, and compare the values bitwise only between the app's own
two paths: a run in memory, and the same run written by one process and mapped by another."""

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import save_file

from gpt2viz.model import derive
from gpt2viz.model.modes import Mode, run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import random_model
from gpt2viz.server import shared_runs
from gpt2viz.server.shared_runs import (
    ALIGN,
    PAD,
    SUFFIX,
    SharedRuns,
    as_stored,
    digest,
    plain,
    read_mapped,
    write_aligned,
)
from gpt2viz.spec.config import GPT2Config, get_config

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
    first = run(model, ids, mode)  # the run in memory
    writer = SharedRuns(tmp_path, 64 * 2**20)
    own = writer.get_or_run(key(mode), lambda: first, model)
    # the writer maps its file too, its copy let go: each page of the run in memory once for the host
    assert writer.written == 1 and own.shared_file is not None and own.ran_here
    other = SharedRuns(tmp_path, 64 * 2**20)  # another process's view of the folder
    mapped = other.get_or_run(key(mode), refuse, model)
    assert other.read == 1 and mapped.shared_file is not None and not mapped.ran_here
    assert other.find(key(mode), model) is not None and other.find(key(mode, "Not run."), model) is None
    assert (mapped.mode, mapped.token_ids, mapped.tokens, mapped.P, mapped.T, mapped.names) == \
        (first.mode, first.token_ids, first.tokens, first.P, first.T, first.names)
    for name in first.names:  # stored and derived alike
        assert torch.equal(mapped[name], first[name]), name
    # tensors that share memory in the run (q, k, v of a qkv) share it in the file: each page once
    size, one_by_one = os.path.getsize(tmp_path / f"{digest(key(mode))}{SUFFIX}"), sum(
        t.numel() * t.element_size() for t in first.tensors.values())
    assert first.stored_bytes <= size <= first.stored_bytes + ALIGN * (len(first.tensors) + 1) + 2**16
    written = sum(a.nbytes for a in as_stored(first.tensors)[0].values())
    assert mapped.stored_bytes == first.stored_bytes == written < one_by_one


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


def offsets(path) -> dict[str, int]:
    """Each tensor's first byte in the file, read from the header as the format defines it."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return {name: 8 + n + e["data_offsets"][0] for name, e in header.items()}


ODD = {"one": np.ones(1, np.float32), "three": np.arange(3, dtype=np.float32), "mask": np.array([True, False, True]),
       "ids": np.arange(5, dtype=np.int64), "empty": np.zeros((0, 4), np.float32),
       "matrix": np.arange(35, dtype=np.float32).reshape(5, 7)}


def test_every_tensor_of_a_shared_file_starts_at_a_64_byte_boundary_and_the_file_opens_with_safe_open(tmp_path):
    path = tmp_path / "odd.safetensors"
    size = write_aligned(path, ODD, {"note": "sizes of 4, 12, 3, 40, 0 and 140 bytes"})
    assert os.path.getsize(path) == size
    at = offsets(path)
    assert {n: at[n] % ALIGN for n in ODD} == dict.fromkeys(ODD, 0), at
    assert any(n.startswith(PAD) for n in at)  # the gaps are filler tensors: the format has no gaps
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"note": "sizes of 4, 12, 3, 40, 0 and 140 bytes"}
        for name, a in ODD.items():
            got = f.get_tensor(name)
            assert got.dtype == a.dtype and got.shape == a.shape and np.array_equal(got, a), name
    with open(path, "rb") as f:
        mapped, meta = read_mapped(f)
    assert set(mapped) == set(ODD) and meta["note"].startswith("sizes")  # the fillers are not tensors of the run
    assert {n: t.data_ptr() % ALIGN for n, t in mapped.items() if t.numel()} == dict.fromkeys(set(ODD) - {"empty"}, 0)
    assert all(np.array_equal(mapped[n].numpy(), a) for n, a in ODD.items())


def test_a_file_packed_without_gaps_is_not_mapped_but_run_again(tmp_path, model):
    # safetensors' own writer packs the tensors: after a 4-byte tensor, the next starts 4 bytes past a boundary
    path = tmp_path / f"{digest(key(Mode.PREFILL))}{SUFFIX}"
    first = run(model, encode(TEXT), Mode.PREFILL)
    meta = first.metadata() | {"order": json.dumps(list(first.order)), "derived_cache_bytes": "0"}
    save_file({"aaa": np.ones(1, np.float32)} | {n: np.ascontiguousarray(t.numpy()) for n, t in first.tensors.items()},
              str(path), metadata=meta)
    assert {o % ALIGN for o in offsets(path).values()} - {0}  # misaligned tensors: what the old writer wrote
    with open(path, "rb") as f, pytest.raises(ValueError, match="not a multiple of 64"):
        read_mapped(f)
    ran = []
    folder = SharedRuns(tmp_path, 64 * 2**20)
    folder.get_or_run(key(Mode.PREFILL), lambda: ran.append(1) or run(model, encode(TEXT), Mode.PREFILL), model)
    assert ran == [1] and folder.read == 0  # run here rather than mapped at another alignment


@pytest.mark.parametrize("mode", [Mode.FULL, Mode.PREFILL, Mode.DECODE])
def test_a_mapped_run_s_tensors_sit_where_the_allocator_puts_in_memory_ones(tmp_path, mode):
    # d_head 5: the heads' views of qkv start 20, 40, ... bytes into it, and a packed file 4 bytes off
    odd = random_model(GPT2Config("odd", n_layer=1, n_head=4, n_embd=20, vocab_size=50257, n_positions=64), 1)
    k = (("random", "odd", 1), tuple(encode(TEXT)), mode.value, None, None)
    first = run(odd, encode(TEXT), mode)  # in memory
    assert SharedRuns(tmp_path, 64 * 2**20).get_or_run(k, lambda: first, odd).shared_file is not None
    mapped = SharedRuns(tmp_path, 64 * 2**20).get_or_run(k, refuse, odd)
    assert mapped.shared_file is not None
    # each tensor where the run had it: a storage's first byte on a boundary, a view as far into it
    def where(tensors):
        return {n: (t.data_ptr() % ALIGN, t.storage_offset(), t.stride()) for n, t in tensors.items() if t.numel()}
    assert where(mapped.tensors) == where(first.tensors)
    assert any(t.storage_offset() for t in first.tensors.values())  # (the heads' views of qkv)
    arrays, _ = as_stored(first.tensors)
    assert {n: o % ALIGN for n, o in offsets(tmp_path / f"{digest(k)}{SUFFIX}").items() if not n.startswith(PAD)} == \
        dict.fromkeys(arrays, 0)
    for name in first.names:  # the app's two paths: the run in memory, and the same run mapped (see the module)
        assert torch.equal(mapped[name], first[name]), name


def derived_bytes(folder: str, mode: str) -> None:
    """Another process of the host: maps the run of `mode` and prints the digest of every derived tensor."""
    import hashlib
    m = random_model(get_config("tiny"), 0)
    t = SharedRuns(folder, 64 * 2**20).get_or_run(key(Mode(mode)), refuse, m)
    assert t.shared_file is not None
    print(json.dumps({n: hashlib.sha256(t[n].numpy().tobytes()).hexdigest() for n in derive.derivations(
        m, t.mode, t.tensors, t.rows)}))


@pytest.mark.parametrize("mode", [Mode.PREFILL])
def test_another_process_derives_from_the_mapped_run_what_the_writer_derives_in_memory(tmp_path, model, mode):
    import hashlib
    first = run(model, encode(TEXT), mode)  # in memory (the writer itself maps its file from then on)
    SharedRuns(tmp_path, 64 * 2**20).get_or_run(key(mode), lambda: first, model)
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import test_shared_runs as t; t.derived_bytes(*sys.argv[1:])"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), mode.value], capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout)
    assert "blocks.0.attn.scores" in theirs  # the one MKL's alignment reached
    assert theirs == {n: hashlib.sha256(first[n].numpy().tobytes()).hexdigest() for n in theirs}


@pytest.mark.parametrize("fault", ["short", "full"])
def test_a_write_to_a_full_folder_never_puts_a_short_file_under_a_run_s_name(tmp_path, model, monkeypatch, fault):
    real = shared_runs._put
    calls = []

    def put(f, data):
        calls.append(len(memoryview(data).cast("B")))
        if len(calls) == 3:  # a tensor's bytes, after the header and the first
            if fault == "full":
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(f, memoryview(data).cast("B")[: calls[-1] // 2])  # a short write that did not raise
        return real(f, data)
    monkeypatch.setattr(shared_runs, "_put", put)
    folder = SharedRuns(tmp_path, 64 * 2**20)
    trace = folder.get_or_run(key(Mode.FULL), lambda: run(model, encode(TEXT), Mode.FULL), model)
    assert len(calls) >= 3 and folder.written == 0 and trace.shared_file is None  # the run stays this process's
    assert list(tmp_path.glob(f"*{SUFFIX}")) == [] and list(tmp_path.glob("*.tmp")) == []
    monkeypatch.setattr(shared_runs, "_put", real)
    other = SharedRuns(tmp_path, 64 * 2**20)
    ran = []
    other.get_or_run(key(Mode.FULL), lambda: ran.append(1) or run(model, encode(TEXT), Mode.FULL), model)
    assert ran == [1] and other.written == 1 and (tmp_path / f"{digest(key(Mode.FULL))}{SUFFIX}").exists()


def many_mapped(folder: str, n: int) -> None:
    """Another process of the host, at an open-file limit of 256, asked in turn for the n one-token runs
    the test wrote, with a class server's cache (512 MiB); then, at its limit, for a run no one wrote.
    Prints what it kept, its open files, and how many runs it mapped or ran."""
    import gc
    import resource

    from gpt2viz.server.trace_cache import TraceCache, max_mapped
    m = random_model(get_config("tiny"), 0)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    shared, cache, ran = SharedRuns(folder, 2**30), TraceCache(512 * 2**20), []

    def here(ids):
        ran.append(ids)
        return run(m, ids, Mode.FULL)
    for i in range(n):
        k = (("random", "tiny", 0), (i,), "full", None, None)
        cache.get_or_compute(k, lambda k=k, i=i: shared.get_or_run(k, lambda: here([i]), m))
    run(m, [n], Mode.FULL)  # the tokenizer's files read once, as a server has long done
    gc.collect()  # the traces let go close their files now, not in the middle of the last ask
    fds, kept, most = len(os.listdir("/proc/self/fd")), len(cache), max_mapped()
    # at its limit: the limit bounds a descriptor's number, so the numbers closed below it are taken too
    resource.setrlimit(resource.RLIMIT_NOFILE, (fds, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    filler = []
    while True:
        try:
            filler.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            break
    k = (("random", "tiny", 0), (n,), "full", None, None)
    # asked of the folder itself: through the cache, the lower limit lets mapped traces go (max_mapped) first
    last = shared.get_or_run(k, lambda: here([n]), m)
    print(json.dumps({"kept": kept, "max": most, "fds": fds, "read": shared.read, "ran": len(ran),
                      "last": last.shared_file is None and last.token_ids == (n,) and shared.written == 0}))


def test_a_process_asked_for_many_shared_runs_keeps_its_open_files_within_its_limit(tmp_path, model):
    """The attack: many one-token texts, run on one process of the host, then asked of another in turn.
    Each mapped run holds two open files, and its bytes (14 KB) let a cache keep thousands: at a limit of
    256 files, the 125th failed its view ("Too many open files"). The cache keeps max_mapped() of them
    (mapping one again costs milliseconds), and a run asked when no file can be opened is run here."""
    writer = SharedRuns(tmp_path, 2**30)
    n = 200
    for i in range(n):
        writer.get_or_run((("random", "tiny", 0), (i,), "full", None, None), lambda i=i: run(model, [i], Mode.FULL),
                          model)
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import test_shared_runs as t; t.many_mapped(sys.argv[1], {n})"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["max"] == 256 // 8 and got["kept"] == got["max"]
    assert got["read"] == n and got["ran"] == 1 and got["last"]  # every written run mapped, none failed
    assert got["fds"] < 256 // 2


def test_two_writers_at_once_keep_the_folder_within_its_budget(tmp_path, model, monkeypatch):
    """Two processes that each found room for one file wrote two, past the folder's budget: each looked
    for room under the folder's lock and wrote its file after letting it go. A writer now holds it until
    its file is in place, and removes a part-written file a dead writer left."""
    texts = ("The first text.", "The second text.")
    runs = {t: run(model, encode(t), Mode.FULL) for t in texts}
    probe = tmp_path / "probe"
    probe.mkdir()
    SharedRuns(probe, 2**30).get_or_run(key(Mode.FULL, texts[0]), lambda: runs[texts[0]], model)
    budget = int(1.5 * max(p.stat().st_size for p in probe.glob(f"*{SUFFIX}")))  # room for one file
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "dead.1.tmp").write_bytes(bytes(1000))  # a writer that died part way
    real = shared_runs.write_aligned

    def slow(path, arrays, meta):
        time.sleep(0.5)  # the other writer looks for room meanwhile
        return real(path, arrays, meta)
    monkeypatch.setattr(shared_runs, "write_aligned", slow)
    writers = [threading.Thread(target=lambda t=t: SharedRuns(folder, budget).get_or_run(
        key(Mode.FULL, t), lambda: runs[t], model)) for t in texts]
    writers[0].start()
    time.sleep(0.1)
    writers[1].start()
    for w in writers:
        w.join()
    files = list(folder.glob(f"*{SUFFIX}"))
    assert len(files) == 1 and files[0].stat().st_size <= budget and not list(folder.glob("*.tmp"))


def test_a_process_that_cannot_map_a_run_leaves_its_file_whole(tmp_path, model, monkeypatch):
    """A process that could not map a run's file (no file could be opened) runs it itself. Writing its
    own over the file would leave the pages other processes map outside the folder, counted nowhere."""
    first = SharedRuns(tmp_path, 64 * 2**20)
    first.get_or_run(key(Mode.FULL), lambda: run(model, encode(TEXT), Mode.FULL), model)
    path = tmp_path / f"{digest(key(Mode.FULL))}{SUFFIX}"
    held = SharedRuns(tmp_path, 64 * 2**20).get_or_run(key(Mode.FULL), refuse, model)  # another maps it
    inode = path.stat().st_ino
    other = SharedRuns(tmp_path, 64 * 2**20)
    monkeypatch.setattr(other, "_map", lambda *args, **kwargs: None)
    ran = []
    trace = other.get_or_run(key(Mode.FULL), lambda: ran.append(1) or run(model, encode(TEXT), Mode.FULL), model)
    assert ran == [1] and other.written == 0 and trace.shared_file is None  # its own, counted whole
    assert path.stat().st_ino == inode and torch.equal(held["logits"], trace["logits"])


def test_views_of_one_storage_are_written_once_and_mapped_as_views_and_any_other_tensor_by_its_name(tmp_path):
    """as_stored / as_viewed: the views that make up their storage (q, k and v of one qkv) become one
    array; views of a larger buffer (two of its three parts) are written one by one, never the buffer."""
    qkv = torch.arange(24, dtype=torch.float32).reshape(2, 12)
    part = torch.arange(30, dtype=torch.float32).reshape(3, 10)
    tensors = {"q": qkv[:, :4], "k": qkv[:, 4:8], "v": qkv[:, 8:], "part a": part[0], "part b": part[2, 1:],
               "mask": torch.tensor([True, False]), "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5)}
    arrays, placing = as_stored(tensors)
    assert sorted(placing["views"]) == ["k", "q", "v"] and sum(a.nbytes for a in arrays.values()) == \
        qkv.nbytes + 4 * (10 + 9) + 2 + 0 + 4
    path = tmp_path / "run.safetensors"
    write_aligned(path, arrays, {"layout": json.dumps(placing)})
    with open(path, "rb") as f:
        stored, meta = read_mapped(f)
        back = shared_runs.as_viewed(stored, json.loads(meta["layout"]))
        assert list(back) == list(tensors)  # the run's order
        for name, t in tensors.items():
            assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
        assert back["q"].untyped_storage().data_ptr() == back["v"].untyped_storage().data_ptr()
        assert (back["k"].storage_offset(), back["k"].stride()) == (4, (12, 1))
        del stored, back


def test_the_folder_counts_a_file_s_header_and_gaps_in_its_budget(tmp_path, model):
    """The room a writer looks for is the file's size, not only its tensors' bytes: a one-token run's
    header and gaps about double it, and the folder went past its budget by that much."""
    trace = run(model, encode("Hi"), Mode.FULL)
    folder = SharedRuns(tmp_path, trace.stored_bytes + ALIGN)  # its tensors fit; its file does not
    folder.get_or_run(key(Mode.FULL, "Hi"), lambda: trace, model)
    assert folder.written == 0 and not list(tmp_path.glob(f"*{SUFFIX}"))
