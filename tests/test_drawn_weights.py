"""Random weights kept on the machine (model/drawn_weights.py): read back bit for bit, never stale, never trusted
when damaged, and never in the way when the folder cannot be written."""

import os

import pytest
import torch

from gpt2viz.model import drawn_weights
from gpt2viz.model.drawn_weights import cache_dir, drawn_model, file_for
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config

TINY = get_config("tiny")


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A folder of its own, written at once (not KEEP_AFTER_S later); drawn_model's env for it."""
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.0)
    return tmp_path, {drawn_weights.CACHE_ENV: str(tmp_path)}


def written() -> None:
    """Wait for the threads that keep drawn weights."""
    import threading

    for t in threading.enumerate():
        if t.name == "keep-drawn-weights":
            t.join(timeout=60)


def same(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def refuse_to_draw(monkeypatch):
    def drawn(*_):
        raise AssertionError("drew the weights again instead of reading them")
    monkeypatch.setattr(drawn_weights, "random_model", drawn)


def test_the_first_draw_is_kept_and_the_next_reads_the_same_values_back(kept, monkeypatch):
    folder, env = kept
    first = drawn_model(TINY, 3, env, write=True)
    written()
    path = file_for(TINY, 3, folder)
    assert path.is_file() and not list(folder.glob("*.part"))
    assert same(first, random_model(TINY, 3))
    refuse_to_draw(monkeypatch)
    again = drawn_model(TINY, 3, env, write=True)
    assert same(again, first) and again.config == TINY and not again.training


def test_one_writer_at_a_time_and_a_stale_claim_is_taken_over(kept, monkeypatch):
    folder, env = kept
    model = random_model(TINY, 0)
    path = file_for(TINY, 0, folder)
    part = path.with_name(path.name + ".part")
    part.write_bytes(b"")  # another process is writing it
    drawn_weights.keep(model, path).join(timeout=60)
    assert not path.exists() and part.read_bytes() == b""
    os.utime(part, (0, 0))  # ... and stopped long ago
    drawn_weights.keep(model, path).join(timeout=60)
    assert path.is_file() and not part.exists()
    refuse_to_draw(monkeypatch)
    assert same(drawn_model(TINY, 0, env), model)


def test_a_model_let_go_before_its_file_is_written_is_not_kept_alive_for_it(kept, monkeypatch):
    import gc
    import weakref

    folder, env = kept
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.5)
    model = drawn_model(TINY, 0, env, write=True)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
    written()
    assert not any(folder.iterdir())  # nothing left to write: the next server draws them again


def test_only_a_first_view_writes_and_the_folder_keeps_the_newest_few(kept):
    folder, env = kept
    held = [drawn_model(TINY, 0, env)]  # a later view: nothing written
    written()
    assert not any(folder.iterdir())
    for seed in range(drawn_weights.MAX_FILES + 2):
        held.append(drawn_model(TINY, seed, env, write=True))
        written()
    kept_files = sorted(f.name for f in folder.iterdir())
    newest = sorted(file_for(TINY, s, folder).name for s in range(2, drawn_weights.MAX_FILES + 2))
    assert kept_files == newest


def test_every_thing_that_decides_the_values_names_another_file(tmp_path):
    names = {file_for(cfg, seed, tmp_path) for cfg in (TINY, get_config("gpt2")) for seed in (0, 1)}
    assert len(names) == 4


@pytest.mark.parametrize("damage", ["truncated", "garbage", "another shape", "float16"])
def test_a_damaged_or_foreign_file_is_not_trusted_the_weights_are_drawn_again_and_kept_anew(kept, damage):
    from safetensors.torch import load_file, save_file

    folder, env = kept
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841 (held while its file is written)
    written()
    path = file_for(TINY, 0, folder)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 64)
    else:
        state = load_file(str(path))
        if damage == "another shape":
            state["wte.weight"] = state["wte.weight"][:-1].clone()
        else:
            state = {k: v.half() for k, v in state.items()}
        save_file(state, str(path))
    again = drawn_model(TINY, 0, env, write=True)
    assert same(again, random_model(TINY, 0))
    written()
    assert same(drawn_model(TINY, 0, env), again)  # the file written anew reads back whole


def test_the_mapped_file_is_not_written_by_what_the_process_does_with_the_model(kept):
    folder, env = kept
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841 (held while its file is written)
    written()
    path = file_for(TINY, 0, folder)
    before = path.read_bytes()
    model = drawn_model(TINY, 0, env)
    with torch.no_grad():
        model.wte.weight.add_(1.0)  # no page does this; the file keeps its values if one did
    assert path.read_bytes() == before
    assert same(drawn_model(TINY, 0, env), random_model(TINY, 0))


def test_off_keeps_nothing_and_sizes_beyond_the_limit_are_drawn_each_time(kept, monkeypatch, tmp_path):
    folder, env = kept
    sizes = {name: drawn_weights.kept_bytes(get_config(name)) for name in ("gpt2", "gpt2-medium")}
    assert sizes["gpt2"] <= drawn_weights.MAX_KEPT_BYTES < sizes["gpt2-medium"]  # gpt2 is kept, larger ones not
    assert cache_dir({drawn_weights.CACHE_ENV: "off"}) is None
    assert same(drawn_model(TINY, 0, {drawn_weights.CACHE_ENV: "off"}), random_model(TINY, 0))
    monkeypatch.setattr(drawn_weights, "MAX_KEPT_BYTES", drawn_weights.kept_bytes(TINY) - 1)
    held = drawn_model(TINY, 0, env, write=True)  # noqa: F841 (held while its file is written)
    written()
    assert not any(folder.iterdir())


def test_the_default_folder_is_the_users_cache():
    assert cache_dir({"XDG_CACHE_HOME": "/x/cache"}) == drawn_weights.Path("/x/cache/gpt2viz")
    assert cache_dir({}) == drawn_weights.Path(os.path.expanduser("~")) / ".cache" / "gpt2viz"


def test_a_folder_that_cannot_be_written_only_costs_the_file(kept, monkeypatch):
    folder, _ = kept
    warned = []
    monkeypatch.setattr(drawn_weights.log, "warning", lambda *a: warned.append(a[0] % a[1:]))
    blocked = folder / "a-file"
    blocked.write_text("")  # the folder's place is taken: mkdir fails as on a read-only home
    env = {drawn_weights.CACHE_ENV: str(blocked / "gpt2viz")}
    model = drawn_model(TINY, 0, env, write=True)
    written()
    assert same(model, random_model(TINY, 0))
    assert len(warned) == 1 and "could not be kept" in warned[0]
