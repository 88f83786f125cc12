"""Tabs that browser tests reuse. Opening the next view in a tab an earlier view left costs chromium
half what a new tab does (12 page loads: 22.7 against 47.9 CPU-s, 17 s against 34 s); the page is
still a new document and a new Streamlit session. A test that needs a browser that never saw the
app makes a context of its own. What a context left is kept on the context itself, so that a later
context never finds an earlier one's tabs or window size."""

import contextlib


def tab(context):
    """A tab of `context` for a new view, at the context's window size: one an earlier view left,
    else a new one."""
    left = getattr(context, "gpt2viz_left", [])
    while left:
        page = left.pop()
        if not page.is_closed():
            page.set_viewport_size(context.gpt2viz_size)
            return page
    page = context.new_page()
    if not hasattr(context, "gpt2viz_size"):
        context.gpt2viz_size = page.viewport_size  # the size the context was made with
    return page


def leave(page) -> None:
    """End the view in `page` (its Streamlit session closes) and keep the tab for the next view."""
    try:
        page.goto("about:blank")
    except Exception:  # a tab that crashed or hung is not worth keeping
        page.close()
        return
    context = page.context
    if not hasattr(context, "gpt2viz_left"):
        context.gpt2viz_left = []
    context.gpt2viz_left.append(page)


@contextlib.contextmanager
def app_context(root, width: int, height: int):
    """The app (`root`/app.py) on a server of its own and a browser context at width x height, for a test module;
    the server's address is the context's `gpt2viz_base`. Skips or fails without chromium (streamlit_server)."""
    from streamlit_server import StreamlitServer, chromium_for_tests, new_context

    with chromium_for_tests() as b, StreamlitServer("app.py", cwd=root) as server:
        server.wait_healthy(timeout=60)
        context = new_context(b, width, height)
        context.gpt2viz_base = server.base
        try:
            yield context
        finally:
            context.close()
