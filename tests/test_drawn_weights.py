"""Random weights kept on the machine (model/drawn_weights.py): mapped back bit for bit, never stale, never
trusted when damaged or another's, bounded on disk, and never in the way when the folder cannot be written."""

import os
import threading

import pytest
import torch

from gpt2viz.model import drawn_weights
from gpt2viz.model.drawn_weights import cache_dir, drawn_model, key_of
from gpt2viz.model.weights import load_safetensors, random_model
from gpt2viz.spec.config import get_config

TINY = get_config("tiny")


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A folder of its own, written at once (not KEEP_AFTER_S later); drawn_model's env for it; the
    warnings the module logs."""
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.0)
    warned = []
    monkeypatch.setattr(drawn_weights.log, "warning", lambda *a: warned.append(a[0] % a[1:]))
    return tmp_path, {drawn_weights.CACHE_ENV: str(tmp_path)}, warned


def kept_files(folder) -> list[str]:
    """The folder's files but the writers' locks (empty files that stay)."""
    return sorted(f.name for f in folder.iterdir() if not f.name.endswith(".lock"))


def path_of(folder, seed=0, cfg=TINY):
    return drawn_weights.file_for(cfg, seed, folder, key_of(cfg, seed))


def written() -> None:
    """Wait for the threads that keep drawn weights."""
    for t in threading.enumerate():
        if t.name == "keep-drawn-weights":
            t.join(timeout=60)


def same(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def refuse_to_draw(monkeypatch):
    def drawn(*_):
        raise AssertionError("drew the weights again instead of mapping them")
    monkeypatch.setattr(drawn_weights, "random_model", drawn)


def test_the_first_draw_is_kept_and_the_next_maps_the_same_values(kept, monkeypatch):
    folder, env, warned = kept
    first = drawn_model(TINY, 3, env, write=True)
    written()
    assert kept_files(folder) == [path_of(folder, 3).name]
    assert same(first, random_model(TINY, 3))
    assert same(load_safetensors(path_of(folder, 3)).model, first)  # a safetensors file any reader reads
    refuse_to_draw(monkeypatch)
    again = drawn_model(TINY, 3, env)
    assert same(again, first) and again.config == TINY and not again.training and warned == []


def test_the_mapped_file_is_not_written_by_what_the_process_does_with_the_model(kept):
    folder, env, _ = kept
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841 (held while its file is written)
    written()
    before = path_of(folder).read_bytes()
    model = drawn_model(TINY, 0, env)
    with torch.no_grad():
        model.wte.weight.add_(1.0)  # no page does this; the file keeps its values if one did
    assert path_of(folder).read_bytes() == before
    assert same(drawn_model(TINY, 0, env), random_model(TINY, 0))


def test_what_decides_the_values_names_the_file_and_without_the_code_nothing_is_kept(kept, monkeypatch):
    folder, env, _ = kept
    keys = {key_of(cfg, seed) for cfg in (TINY, get_config("gpt2")) for seed in (0, 1)}
    assert len(keys) == 4
    before = key_of(TINY, 0)
    monkeypatch.setattr(drawn_weights, "_CODE", "the model's code, changed")
    assert key_of(TINY, 0) != before
    monkeypatch.setattr(drawn_weights, "_CODE", None)  # an install without sources
    assert same(drawn_model(TINY, 0, env, write=True), random_model(TINY, 0))
    written()
    assert kept_files(folder) == []


@pytest.mark.parametrize("damage", ["truncated", "garbage", "another shape", "float16", "another seed's values"])
def test_a_damaged_or_foreign_file_is_not_trusted_the_weights_are_drawn_again_and_kept_anew(kept, damage):
    from safetensors.torch import load_file, save_file

    folder, env, warned = kept
    held = [drawn_model(TINY, 0, env, write=True), drawn_model(TINY, 1, env, write=True)]
    written()
    path = path_of(folder)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 64)
    elif damage == "another seed's values":
        path.write_bytes(path_of(folder, 1).read_bytes())
    else:
        state = load_file(str(path))
        if damage == "another shape":
            state["wte.weight"] = state["wte.weight"][:-1].clone()
        else:
            state = {k: v.half() for k, v in state.items()}
        save_file(state, str(path))
    again = drawn_model(TINY, 0, env, write=True)
    assert same(again, random_model(TINY, 0)) and len(warned) == 1
    written()
    assert same(drawn_model(TINY, 0, env), again) and len(warned) == 1  # the file written anew maps whole
    del held


def test_a_file_that_cannot_be_mapped_is_left_as_it_is(kept, monkeypatch):
    folder, env, warned = kept
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841
    written()

    def refused(*_, **__):
        raise PermissionError("another user's file")
    monkeypatch.setattr(drawn_weights, "mapped", refused)
    assert same(drawn_model(TINY, 0, env), random_model(TINY, 0))
    assert path_of(folder).is_file() and "could not be mapped" in warned[0]


def test_one_writer_a_file_what_a_stopped_writer_left_goes_and_a_failed_write_leaves_nothing(kept, monkeypatch):
    import fcntl

    folder, env, warned = kept
    model = random_model(TINY, 0)
    path = path_of(folder)
    left = path.with_name(path.name + ".abc123.part")
    left.write_bytes(b"half a file")  # a writer stopped while writing
    with open(path.with_name(path.name + ".lock"), "w") as lock:  # another process writes it now
        fcntl.flock(lock, fcntl.LOCK_EX)
        drawn_weights.keep(model, path, key_of(TINY, 0)).join(timeout=60)
    assert kept_files(folder) == [left.name] and warned == []

    def full_disk(_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(drawn_weights.os, "fsync", full_disk)
    drawn_weights.keep(model, path, key_of(TINY, 0)).join(timeout=60)
    assert kept_files(folder) == [] and "could not be kept" in warned[0]  # its own part and the one left
    monkeypatch.undo()
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.0)
    drawn_weights.keep(model, path, key_of(TINY, 0)).join(timeout=60)
    assert kept_files(folder) == [path.name]
    refuse_to_draw(monkeypatch)
    assert same(drawn_model(TINY, 0, env), model)


def test_a_file_gone_before_it_is_mapped_is_drawn_and_another_in_its_place_is_not_deleted(kept, monkeypatch):
    folder, env, warned = kept
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841
    written()
    path = path_of(folder)
    good = path.read_bytes()
    real = drawn_weights.mapped

    def replaced_meanwhile(p, cfg, key):  # another server renames a good file into place as this one reads
        p.unlink()
        p.write_bytes(good)
        return real(p.with_name("gone"), cfg, key)
    monkeypatch.setattr(drawn_weights, "mapped", replaced_meanwhile)
    assert same(drawn_model(TINY, 0, env), random_model(TINY, 0))
    assert path.read_bytes() == good and len(warned) == 1


def test_only_a_first_view_writes_and_the_folder_keeps_the_most_recently_used(kept):
    folder, env, _ = kept
    held = [drawn_model(TINY, 0, env)]  # a later view: nothing written
    written()
    assert kept_files(folder) == []
    for seed in range(drawn_weights.MAX_FILES):
        held.append(drawn_model(TINY, seed, env, write=True))
        written()
        os.utime(path_of(folder, seed), (1000 + seed, 1000 + seed))
    held.append(drawn_model(TINY, 0, env))  # seed 0 mapped again: used last
    held.append(drawn_model(TINY, 9, env, write=True))
    written()
    kept_now = sorted(path_of(folder, s).name for s in (0, 2, 9))
    assert sorted(f.name for f in folder.iterdir()) == sorted(kept_now + [name + ".lock" for name in kept_now])


def test_off_keeps_nothing_and_sizes_beyond_the_limit_are_drawn_each_time(kept, monkeypatch):
    folder, env, _ = kept
    sizes = {name: drawn_weights.params_bytes(get_config(name)) for name in ("gpt2", "gpt2-medium")}
    assert sizes["gpt2"] <= drawn_weights.MAX_KEPT_BYTES < sizes["gpt2-medium"]  # gpt2 is kept, larger ones not
    assert cache_dir({drawn_weights.CACHE_ENV: "off"}) is None
    assert same(drawn_model(TINY, 0, {drawn_weights.CACHE_ENV: "off"}, write=True), random_model(TINY, 0))
    monkeypatch.setattr(drawn_weights, "MAX_KEPT_BYTES", drawn_weights.params_bytes(TINY) - 1)
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841
    written()
    assert kept_files(folder) == []


def test_the_default_folder_is_the_users_cache():
    assert cache_dir({"XDG_CACHE_HOME": "/x/cache"}) == drawn_weights.Path("/x/cache/gpt2viz")
    assert cache_dir({}) == drawn_weights.Path(os.path.expanduser("~")) / ".cache" / "gpt2viz"


def test_a_model_let_go_before_its_file_is_written_is_not_kept_alive_for_it(kept, monkeypatch):
    import gc
    import weakref

    folder, env, _ = kept
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.5)
    model = drawn_model(TINY, 0, env, write=True)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
    written()
    assert kept_files(folder) == []  # nothing left to write: the next server draws them again


def test_a_folder_that_cannot_be_written_only_costs_the_file(kept):
    folder, _, warned = kept
    blocked = folder / "a-file"
    blocked.write_text("")  # the folder's place is taken: mkdir fails as on a read-only home
    env = {drawn_weights.CACHE_ENV: str(blocked / "gpt2viz")}
    model = drawn_model(TINY, 0, env, write=True)
    written()
    assert same(model, random_model(TINY, 0))
    assert len(warned) == 1 and "could not be kept" in warned[0]
