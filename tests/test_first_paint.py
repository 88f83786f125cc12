"""A new server's first page before torch: the Overview's drawing from the URL alone (ui/first_paint.py),
the very drawing the page then draws; nothing of it imports torch; the weights drawn in a thread meanwhile
are the ones the model cache would have drawn, taken once."""

import subprocess
import sys
import threading
from pathlib import Path

import torch
from streamlit.testing.v1 import AppTest

from gpt2viz.anatomy import diagram
from gpt2viz.model.weights import random_model
from gpt2viz.spec.config import get_config
from gpt2viz.ui import first_paint

ROOT = Path(__file__).resolve().parents[1]


def test_the_preview_imports_no_torch():
    code = ("import sys; import gpt2viz.ui.first_paint as f; "
            "d = f.overview({'model': 'gpt2'}); "
            "print('torch' in sys.modules, 'pandas' in sys.modules, d is not None and 'gpt2 overview' in d[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["False", "False", "True"], out.stderr


def overview_svgs(at) -> list[str]:
    return [m.value for m in at.markdown if "overview\"" in m.value and "<svg" in m.value]


def test_the_preview_is_the_pages_own_drawing():
    """The same boxes, counts, shapes and links as the Overview draws once the model is there, for a view
    of another text, mode and size than the defaults."""
    query = {"model": "tiny", "mode": "decode", "text": "one two three four five"}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception
    title, svg = first_paint.overview(query)
    assert overview_svgs(at) == [diagram.scroll_box(svg)] and at.title[0].value == title  # as the page shows it
    assert "Starting: loading PyTorch" not in " ".join(c.value for c in at.caption)  # cleared once drawn


def test_no_preview_where_the_url_does_not_decide_the_weights():
    assert first_paint.overview({"weights": "demo"}) is None
    assert first_paint.overview({"model": "gpt2", "lesson": "x"}) is None
    assert first_paint.overview({"model": "gpt2-xl"}) is None  # not built for visitors of a class server
    assert first_paint.overview({"model": "tiny", "text": ""}) is None
    assert first_paint.overview({"model": "tiny", "seed": "-1"}) is None


def test_the_first_run_draws_the_preview_then_the_page():
    """In a fresh process (torch not imported), the first AppTest run goes through the preview and ends
    with the real page, the preview's line gone."""
    code = f"""
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=300)
at.query_params["model"] = "tiny"
assert "torch" not in sys.modules
at.run()
assert not at.exception, at.exception
from gpt2viz.ui import first_paint
assert first_paint._prebuilt == {{"done": None}}, first_paint._prebuilt  # drawn in the thread and taken
captions = " ".join(c.value for c in at.caption)
sys.path.insert(0, {str(ROOT / 'tests')!r})
from app_charts import charts
print("preview line left" if "Starting: loading PyTorch" in captions else "ok", len(charts(at)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.stdout.split() == ["ok", "2"], out.stderr[-2000:]


def test_the_weights_drawn_in_the_thread_are_the_seeds_taken_once(monkeypatch, tmp_path):
    from gpt2viz.model import drawn_weights

    monkeypatch.setattr(first_paint, "_prebuilt", {})
    monkeypatch.setenv(drawn_weights.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(drawn_weights, "KEEP_AFTER_S", 0.0)
    first_paint.prebuild("tiny", 3)
    first_paint.prebuild("tiny", 4)  # one a process: ignored
    model = first_paint.take("tiny", 3)
    fresh = random_model(get_config("tiny"), 3)
    assert model is not None and all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                                       fresh.state_dict().values()))
    assert first_paint.take("tiny", 3) is None  # taken once; and no second prebuild
    first_paint.prebuild("tiny", 3)
    assert first_paint.take("tiny", 3) is None
    for t in threading.enumerate():  # the first view's weights are kept for the next server, which maps them
        if t.name == "keep-drawn-weights":
            t.join(timeout=60)
    key = drawn_weights.key_of(get_config("tiny"), 3)
    kept = [f.name for f in tmp_path.iterdir() if not f.name.endswith(".lock")]
    assert kept == [drawn_weights.file_for(get_config("tiny"), 3, tmp_path, key).name]
    monkeypatch.setattr(first_paint, "_prebuilt", {})
    monkeypatch.setattr(drawn_weights, "random_model", None)  # a draw would fail: the file is read
    first_paint.prebuild("tiny", 3)
    again = first_paint.take("tiny", 3)
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), fresh.state_dict().values()))


def preview_then_page():
    import streamlit as st

    from gpt2viz.ui import first_paint

    first_paint.draw()
    st.title("the page")


def test_a_preview_that_fails_leaves_the_page_alone(monkeypatch):
    def broken(query):
        raise RuntimeError("no")

    monkeypatch.setattr(first_paint, "overview", broken)
    at = AppTest.from_function(preview_then_page, default_timeout=60).run()
    assert not at.exception and [t.value for t in at.title] == ["the page"] and not at.caption


def test_the_preview_starts_on_the_apps_default_text():
    from gpt2viz.ui.state import DEFAULT_TEXT

    assert first_paint.DEFAULT_TEXT == DEFAULT_TEXT


def test_the_preview_has_the_browser_load_plotlys_chunk_from_beside_streamlits_own():
    """ui/preload.py: the chunk the script imports is Streamlit's one Plotly chart chunk, a file its
    server serves next to its main script (static/js/), named as the script's regular expression expects."""
    import re

    import streamlit as st

    from gpt2viz.ui import preload
    chunk = preload.plotly_chunk()
    js = Path(st.__file__).parent / "static" / "static" / "js"
    assert chunk and (js / chunk).is_file() and re.fullmatch(r"PlotlyChart\.[\w-]+\.js", chunk)
    main = next(js.glob("index.*.js")).name
    script = preload.plotly_script()
    pattern = re.search(r"replace\(/(.*)/, \"", script).group(1)
    assert re.sub(pattern, chunk, f"http://host/base/static/js/{main}") == f"http://host/base/static/js/{chunk}"
