"""The keyboard walk on the second half of the views (tests/test_browser_keyboard_walk.py walks the first)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_browser_keyboard as keyboard  # noqa: E402
import test_browser_keyboard_walk as first  # noqa: E402

context = keyboard.context  # the fixture: one server with a lesson key, one browser context at 1280x720
VIEWS = first.ALL[first.HALF:]


@pytest.mark.parametrize("path", [p for p, _ in VIEWS], ids=[i for _, i in VIEWS])
def test_tab_reaches_every_control_in_order_with_a_visible_ring(context, path):
    first.check_walk(context, path)
