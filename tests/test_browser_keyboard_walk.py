"""The keyboard walk of tests/test_browser_keyboard.py (its docstring says what it holds) on every page of
the registry and on four presented: a file of its own, so that the suite's two workers (which take whole
files) can balance it against the other browser files (about 3 s a view)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_browser_keyboard as keyboard  # noqa: E402
from browser_tabs import leave  # noqa: E402
from test_browser_keyboard import open_view, problems, walk  # noqa: E402

from gpt2viz.spec.pages import PAGES, href  # noqa: E402

context = keyboard.context  # the fixture: one server with a lesson key, one browser context at 1280x720

# every page plain; presented, the pages whose presented layout differs most (a diagram, the first chart
# filling the screen, a lesson's bar, a page of columns)
PRESENTED = ("overview", "attention", "whatif", "lesson")
ALL = [(href(row.url), row.url) for row in PAGES] + [(href(url) + "?present=1", url + "-presented")
                                                      for url in PRESENTED]
VIEWS = ALL


@pytest.mark.parametrize("path", [p for p, _ in VIEWS], ids=[i for _, i in VIEWS])
def test_tab_reaches_every_control_in_order_with_a_visible_ring(context, path):
    check_walk(context, path)


def check_walk(context, path: str) -> None:
    page = open_view(context, path + ("&" if "?" in path else "?") + "model=tiny")
    try:
        found = walk(page)
        print(f"{path}: {len(found['controls'])} controls, {len(found['stops'])} stops")
        found_problems = problems(found)
        assert not found_problems, f"{path}: " + "\n".join(found_problems)
    finally:
        leave(page)


