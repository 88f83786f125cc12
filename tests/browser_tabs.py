"""Tabs that browser tests reuse. Opening the next view in a tab an earlier view left costs chromium
half what a new tab does (12 page loads: 22.7 against 47.9 CPU-s, 17 s against 34 s); the page is
still a new document and a new Streamlit session. A test that needs a browser that never saw the
app makes a context of its own."""

_LEFT: dict[int, list] = {}  # a context's tabs that a view has left
_SIZE: dict[int, dict] = {}  # a context's window size, as its first tab had it


def tab(context):
    """A tab of `context` for a new view, at the context's window size: one an earlier view left,
    else a new one."""
    left = _LEFT.setdefault(id(context), [])
    while left:
        page = left.pop()
        if not page.is_closed():
            page.set_viewport_size(_SIZE[id(context)])
            return page
    page = context.new_page()
    _SIZE.setdefault(id(context), page.viewport_size)
    return page


def leave(page) -> None:
    """End the view in `page` (its Streamlit session closes) and keep the tab for the next view."""
    try:
        page.goto("about:blank")
    except Exception:  # a tab that crashed or hung is not worth keeping
        page.close()
        return
    _LEFT.setdefault(id(page.context), []).append(page)
