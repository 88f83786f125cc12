"""The sweeps' sample (tests/sweep.py): a name outside the sweep fails, the sample keeps the sweep's order, and
GPT2VIZ_FULL=1 keeps every item."""

import importlib

import pytest
import sweep as sweep_module


def test_a_sample_keeps_its_items_in_the_sweeps_order_and_refuses_a_name_it_does_not_hold(monkeypatch):
    monkeypatch.delenv("GPT2VIZ_FULL", raising=False)
    sweep = importlib.reload(sweep_module).sweep
    assert sweep(["a", "b", "c"], {"c", "a"}) == ["a", "c"]
    assert sweep([(1, "x"), (2, "y")], {2}, key=lambda item: item[0]) == [(2, "y")]
    with pytest.raises(AssertionError, match="'d'"):
        sweep(["a", "b"], {"a", "d"})


def test_the_full_run_keeps_every_item(monkeypatch):
    monkeypatch.setenv("GPT2VIZ_FULL", "1")
    try:
        assert importlib.reload(sweep_module).sweep(["a", "b", "c"], {"b"}) == ["a", "b", "c"]
    finally:
        monkeypatch.delenv("GPT2VIZ_FULL")
        importlib.reload(sweep_module)
