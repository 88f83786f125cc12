"""The app through Streamlit's AppTest: every page in every mode on the tiny model, controls that
change what is shown, and bad input that gives a message instead of a traceback."""

import html
import json
import re

import pytest
from app_charts import charts, kind
from streamlit.testing.v1 import AppTest

from gpt2viz.anatomy.components import component_tree
from gpt2viz.model.modes import Mode
from gpt2viz.model.trace import Trace
from gpt2viz.spec.config import get_config
from gpt2viz.spec.pages import BY_URL, PAGES, home
from gpt2viz.ui.chart_element import STREAMLITS_FIRST
from gpt2viz.ui.layout import TABLE_CLASS, table_html


def h1_ok(url: str, h1: str) -> bool:
    """A component page's h1 is its component's title (the LayerNorm page names the one it shows);
    another page's h1 begins with its navigation title ("Logit lens" -> "Logit lens and ...")."""
    row = BY_URL[url]
    if row.component is None:
        return h1.startswith(row.title)
    cat = component_tree(get_config("tiny"))
    return h1 in [cat[cid].title for cid in (row.component, *row.hosts)] or h1 == row.title


def first_run(**params) -> AppTest:
    """app.py as a browser's first visit runs it: the sidebar from the URL, then the default page."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in {"model": "tiny", **params}.items():
        at.query_params[key] = str(value)
    return at.run()


def open_page(url: str, **params) -> AppTest:
    at = first_run(**params)
    at.switch_page(BY_URL[url].file)
    return at.run()


def titles(at) -> list[str]:
    return [t.value for t in at.title]


@pytest.mark.parametrize("mode", [m.value for m in Mode])
@pytest.mark.parametrize("url", [row.url for row in PAGES])
def test_every_page_in_every_mode(url, mode):
    at = open_page(url, mode=mode)
    assert not at.exception, at.exception[0].value
    assert h1_ok(url, titles(at)[0]), titles(at)
    drawn = charts(at)
    assert len(drawn) >= BY_URL[url].charts
    # Streamlit's element draws a page's charts from its first that needs it on (one Plotly a tab), and the
    # pages whose first chart it draws load the app's bundle late (ui/chart_element.py)
    streamlits = [c.streamlits for c in drawn]
    assert streamlits == sorted(streamlits) and streamlits[:1] in ([], [url in STREAMLITS_FIRST])


def test_sidebar_says_which_weights_are_in_use():
    at = first_run()
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "random tiny weights (seed 0)" in captions and "not trained" in captions


def test_charts_carry_their_look_and_no_template():
    at = open_page("mlp")
    for chart in charts(at):
        layout = chart.figure["layout"]
        assert layout.get("template") is None  # Streamlit's theme: drawn twice
        assert layout["datarevision"] and layout["font"]["family"].startswith('"Source Sans"')


def test_changing_block_changes_the_plots():
    def heads_title(block):
        at = open_page("attention", block=block)
        return [c.spec for c in charts(at)]
    assert heads_title(0) != heads_title(1)


def test_changing_mode_changes_what_is_shown():
    def shown(mode):
        at = open_page("attention", mode=mode)
        return [s.value for s in at.subheader], [c.spec for c in charts(at)]
    (full_heads, full_plots), (decode_heads, decode_plots) = shown("full"), shown("decode")
    assert "Intermediate states · Full sequence" in full_heads
    assert "Intermediate states · Decode (KV cache)" in decode_heads
    assert full_plots != decode_plots


def test_out_of_range_url_values_fall_back_and_say_so_at_the_top():
    """The notes stand above the page's title, where the reader looks, not at the
    bottom of the sidebar."""
    at = first_run(block=99, head=-3, mode="sideways")
    assert not at.exception
    warnings = " ".join(w.value for w in at.main.warning)
    assert "block=`'99'`" in warnings and "head=`'-3'`" in warnings and "mode=`'sideways'`" in warnings
    kinds = [type(e).__name__ for e in at.main.children.values()]
    assert kinds.index("Warning") < kinds.index("Title") and not at.sidebar.warning


def test_one_token_cannot_be_trained_on():
    at = open_page("attention", text="Hi", mode="training")
    assert not at.exception
    assert "at least 2 tokens" in " ".join(w.value for w in at.warning)  # said, not crashed


def test_a_one_token_text_is_not_given_a_training_row_or_a_second_token():
    """The trial's /modes?text=a: "the last of these 2 tokens", and training shapes with T = 2."""
    at = open_page("modes", text="a", mode="decode")
    assert not at.exception
    said = " ".join(m.value for m in at.markdown)
    assert "these **2** tokens" not in said and "this one has 1" in said
    frames = [d.value for d in at.dataframe]
    summary = next(f for f in frames if "T (positions computed)" in f.columns)
    assert "needs 2 tokens" in summary.to_string()
    shapes = next(f for f in frames if "symbolic" in f.columns)
    assert "[1, 2, " not in shapes.to_string()  # no training column of an invented second token


def test_an_empty_text_is_refused_and_spaces_are_run():
    """Whitespace-only text was refused, though GPT-2 tokenizes spaces."""
    at = open_page("tokens", text="   \n")
    assert not at.exception and not at.warning
    assert "".join(at.dataframe[0].value["token"]) == "␣␣␣↵"
    at.sidebar.text_area(key="text").input("").run()
    assert "the text is empty" in " ".join(w.value for w in at.warning)


def test_endoftext_typed_in_the_text_is_said_to_be_one_special_token():
    """`<|endoftext|>` typed in the text silently became token 50256."""
    at = open_page("tokens", text="One.<|endoftext|>Two.")
    assert not at.exception
    note = " ".join(i.value for i in at.info)
    assert "<|endoftext|>" in note and "50,256" in note and "not its 13 characters" in note
    assert 50256 in list(at.dataframe[0].value["id"])
    assert not any("endoftext" in i.value for i in open_page("tokens", text="One. Two.").info)


def test_generation_says_the_kv_column_is_after_the_step_and_one_step_reads_1():
    at = open_page("generation", steps=1)
    assert not at.exception
    assert "KV cache after the step (fp32)" in at.dataframe[0].value.columns
    growth = charts(at)[0].figure["layout"]["xaxis"]
    assert growth["tickvals"] == [1] and growth["range"] == [0.5, 1.5]


def test_one_position_is_not_a_mean_over_1_positions():
    mlp = open_page("mlp", mode="decode")
    assert "mean over 1 positions" not in " ".join(c.spec for c in charts(mlp))
    from gpt2viz.analysis.whatif import Target
    from gpt2viz.ui.whatif_view import what_is_replaced

    assert "1 positions" not in what_is_replaced(Target(0, "mlp"), "mean", 1)
    lens = open_page("lens", block=0, lens_depth=0)
    assert any("Sum of the 1 part minus" in m.value for m in lens.markdown)
    assert "mean over this text's 2 positions" in what_is_replaced(Target(0, "mlp"), "mean", 2)


def test_over_long_text_is_cut_and_says_how_much():
    at = open_page("tokens", text="word " * 1100)
    assert not at.exception
    assert any("77 tokens at the end" in i.value for i in at.info)


def test_weights_from_the_hugging_face_cache(hf_cache_tiny):
    at = first_run(weights="hf-cache")
    assert not at.exception
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "tiny from model.safetensors" in captions and "random" not in captions.split("·")[0]


def test_local_path_source_is_off_unless_enabled(monkeypatch):
    monkeypatch.delenv("GPT2VIZ_ALLOW_LOCAL_PATH", raising=False)
    at = first_run(weights="path")
    assert "path" not in at.sidebar.radio[0].options
    assert any("weights=`'path'`" in w.value for w in at.warning)


def test_a_corrupt_local_file_is_refused_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GPT2VIZ_ALLOW_LOCAL_PATH", "1")
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x00\x01 not a safetensors file")
    at = first_run(weights="path")
    at.sidebar.text_input(key="path").input(str(bad)).run()
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and r"model\.safetensors is not a safetensors file" in errors[0] and "\n" not in errors[0]
    assert any("Using random gpt2 weights" in c.value for c in at.sidebar.caption)


def test_exercise_is_checked_on_submit_with_the_worked_answer():
    from gpt2viz.teaching import exercises as ex

    at = open_page("exercises", set=3, questions=2)
    first = ex.exercise_set(3, 2)[0]
    at.text_input(key=f"answer-{first.id}").input(first.answer_text)
    at.button[0].click().run()
    assert any("Correct" in s.value for s in at.success)
    assert any(first.worked.splitlines()[0] in m.value for m in at.markdown)


def test_every_answer_keeps_its_feedback_and_the_score_runs():
    from gpt2viz.teaching import exercises as ex

    at = open_page("exercises", set=3, questions=3)
    first, second, _ = ex.exercise_set(3, 3)
    assert any("Score: 0 of 3" in m.value for m in at.markdown)
    at.text_input(key=f"answer-{first.id}").input(first.answer_text)
    at.button[0].click().run()
    for _ in range(2):  # a hint and a second try, then "ask your lecturer", never the answer
        at.text_input(key=f"answer-{second.id}").input("7")
        at.button[1].click().run()
    assert [s.value for s in at.success] == [f"Correct: {first.answer_text}."]  # the first answer's feedback stays
    assert any("Ask your lecturer" in e.value for e in at.error)
    assert not any(second.answer_text in e.value for e in at.error)
    assert any("Score: 1 of 3** correct · 2 answered" in m.value for m in at.markdown)


def test_the_answer_key_is_for_the_operator_only(monkeypatch):
    def downloads(**params):
        at = open_page("exercises", set=3, questions=4, **params)
        assert not at.exception and not at.main.get("toggle")  # the sidebar's is presentation mode
        return [b.proto.label for b in at.main.get("download_button")], " ".join(m.value for m in at.markdown)
    from gpt2viz.teaching import exercises as ex

    answer = ex.exercise_set(3, 4)[0].answer_text
    labels, text = downloads(teacher="true")
    assert labels == ["Worksheet (Markdown)"] and "**Answer:**" not in text and "answer key" not in text
    monkeypatch.setenv("GPT2VIZ_TEACHER", "1")
    labels, text = downloads()
    assert labels == ["Worksheet (Markdown)", "Answer key (Markdown)"] and f"**Answer:** {answer}" in text


def test_worksheet_questions_read_as_english():
    from gpt2viz.teaching import exercises as ex

    assert ex.params_exercise("gpt2-medium", "model").question == "How many parameters does **gpt2-medium** have?"
    mlp = ex.params_exercise("gpt2", "block.mlp").question
    assert mlp == "How many parameters does the MLP have in one block of **gpt2**?"
    questions = [ex.params_exercise("gpt2", c).question for c in ex.PARAM_COMPONENTS]
    assert all(" of **" in q or "have?" in q for q in questions) and not any("**GPT-2** of" in q for q in questions)


def test_generation_is_reproducible_from_the_url():
    def continuation(**params):
        at = open_page("generation", steps=5, **params)
        assert not at.exception
        return [m.value for m in at.markdown if m.value.startswith("**Continuation:**")]
    sampled = continuation(temperature=1.2, top_k=40, gen_seed=7)
    assert sampled == continuation(temperature=1.2, top_k=40, gen_seed=7)
    assert sampled != continuation(temperature=1.2, top_k=40, gen_seed=8)


def test_about_checks_decode_against_full_live():
    at = open_page("about")
    text = " ".join(m.value for m in at.markdown)
    assert "agree" in text and "DISAGREE" not in text


def test_a_long_text_on_a_small_budget_records_what_the_page_shows_in_every_block(monkeypatch):
    """A full trace of 300 tokens on tiny (1.8 MiB: full mode derives its logits) does not fit a
    share of the cache set small for the test (1/100 of 150 MiB); the attention names of every block
    (1.0 MiB) do: another block is a view of the same run."""
    from gpt2viz.ui import cache as ui_cache
    from gpt2viz.ui.cache import trace_cache

    monkeypatch.setenv("GPT2VIZ_TRACE_BUDGET_MB", "200")
    monkeypatch.setattr(ui_cache, "FULL_TRACE_SHARE", 100)
    trace_cache.clear()
    try:
        at = open_page("attention", text="word " * 300, block=1)
        cache = trace_cache()
        runs_before = cache.misses
        at.slider(key="block").set_value(0).run()  # the student moves the Block slider
        assert not at.exception
        assert any("this page keeps what it shows, in every block" in c.value for c in at.caption)
        assert len(charts(at)) >= BY_URL["attention"].charts
        assert cache.budget == 200 * 2**20 * 3 // 4 and cache.nbytes <= cache.budget
        page = [t for t in cache._items.values() if isinstance(t, Trace) and "blocks.1.attn.pattern" in t]
        names = {n for t in page for n in t.names}  # (the Overview's run, first, kept what it shows)
        assert len(page) == 1 and all(n.startswith(("blocks.0.attn.", "blocks.1.attn.")) for n in names)
        assert cache.misses == runs_before and {n.split(".")[1] for n in names} == {"0", "1"}
    finally:
        trace_cache.clear()


def test_a_long_text_on_a_tiny_budget_is_refused_in_one_line(monkeypatch):
    """2 MiB: the page's run on 1,000 tokens (its attention names alone, 3.4 MiB) does not fit the
    cache's 1.5 MiB; said, not run."""
    from gpt2viz.ui.cache import trace_cache

    monkeypatch.setenv("GPT2VIZ_TRACE_BUDGET_MB", "2")
    monkeypatch.setenv("GPT2VIZ_RANDOM_MODELS", "tiny")  # tiny is this server's own weights, outside the budget
    trace_cache.clear()
    try:
        at = open_page("attention", text="word " * 1000, block=1)
        assert not at.exception
        assert len([w for w in at.warning if "this server gives one run" in w.value]) == 1
        assert trace_cache().peak_reserved <= trace_cache().budget
    finally:
        trace_cache.clear()


@pytest.mark.parametrize("value", ["1e309", "-5", "nan", "seven"])
def test_numbers_in_links_that_the_widget_cannot_take(value):
    at = first_run(seed=value)
    assert not at.exception
    assert any("seed=" in w.value and "showing seed=`0`" in w.value for w in at.warning)
    assert "random tiny weights (seed 0)" in " ".join(c.value for c in at.sidebar.caption)


def test_training_page_turns_dropout_off_from_the_url():
    on, off = open_page("training"), open_page("training", dropout="false")
    assert not on.exception and not off.exception
    assert [t.value for t in on.main.get("toggle")] == [True] and [t.value for t in off.main.get("toggle")] == [False]
    assert "Dropout is off" not in " ".join(c.value for c in on.caption)
    assert "Dropout is off" in " ".join(c.value for c in off.caption)
    assert len(on.dataframe) == len(off.dataframe) + 1  # the table of dropout that fired
    loss = {at: [m.value for m in at.metric] for at in (on, off)}
    assert loss[on] != loss[off]  # the same text, with and without dropout


@pytest.mark.parametrize("words,steps,room", [(1019, 8, 5), (3000, 8, 1)])
def test_generation_at_the_end_of_the_context(words, steps, room):
    at = open_page("generation", text="word " * words, steps=steps)  # " word" is one token each
    assert not at.exception, at.exception[0].value
    token = "token" if room == 1 else "tokens"
    assert any(f"{room} more {token} can be generated" in i.value and f"generating {room}." in i.value for i in at.info)
    rows = at.dataframe[0].value
    assert len(rows) == room and rows["L (keys)"].iloc[-1] == 1024


def test_glossary_explains_the_ideas_with_links_that_keep_the_view():
    from gpt2viz.spec.glossary import ENTRIES

    at = open_page("glossary", mode="decode", block=1, text="A cat")
    shown = "\n".join(m.value for m in at.markdown)
    for idea in ("KV cache", "Prefill", "Decode", "Logit lens", "Residual stream", "GELU", "Dropout", "LayerNorm",
                 "Tied embeddings", "Causal mask", "Softmax", "Temperature", "Top-k", "Induction head"):
        assert f"### {idea}\n" in shown  # a heading: Streamlit gives it the anchor other pages link to
    links = re.findall(r'<a href="([^"]+)" target="_self">([^<]+)</a>', shown)
    assert len(links) == len(ENTRIES) and '/modes?' in shown
    # a head only trained weights have opens on the demo model's, measured, on its repeat; every other
    # entry's link keeps the view
    demo = [h for h, label in links if label.startswith("Where it shows: the demo model")]
    assert len(demo) == 3 and all("weights=demo" in h and "text=%20people%20play" in h for h in demo)
    assert any("block=0&" in h and "head=2" in h for h in demo)  # the sink (tests/test_prompts.py measures it)
    assert all("mode=decode" in h and "block=1" in h and "text=A%20cat" in h for h, _ in links if h not in demo)
    rows = [line.split(" | ") for line in shown.splitlines() if line.startswith("| ")]  # the two tables
    assert rows[[r[0] for r in rows].index("| H = z")][:2] == ["| H = z", "per-head outputs"]
    assert any(r[1] == "blocks.{n}.attn.hook_pattern" for r in rows) and "attn.z in the tensor names" in shown
    assert "<\\|endoftext\\|>" in shown  # a | in a cell is escaped, or it would split the row


def test_modes_page_says_why_a_decode_step_is_cheap():
    from gpt2viz.anatomy.components import component_tree
    from gpt2viz.model.tokenizer import encode
    from gpt2viz.spec import costs
    from gpt2viz.spec.config import get_config

    text = "The quick brown fox jumps over the lazy dog"
    at = open_page("modes", text=text)
    said = next(m.value for m in at.markdown if "one query" in m.value)
    cfg, n = get_config("tiny"), len(encode(text))
    c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
    assert f"**L = {n}** keys" in said and f"{n - 1} read from the cache" in said
    assert f"**{c['decode'].value:,} FLOPs**" in said and f"**{c['full'].value:,}**" in said
    assert f"**{c['cache'].value:,} bytes**" in said and c["full"].value > 3 * c["decode"].value
    why = next(m.value for m in at.markdown if "FLOPs per byte read" in m.value)
    # a full pass reads the weights once and no cache: its intensity is over the weights' bytes alone
    assert f"against **{c['full'].value / c['weights'].value:,.0f}** for a full pass over the same {n} tokens" in why
    assert "tens (CPU) to hundreds (GPU)" in why


def test_start_here_is_a_tour_with_next_links_that_keep_the_view():
    from gpt2viz.teaching.tour import TOUR

    at = first_run(mode="decode", head=2)
    assert PAGES[0].url == "start"  # first in the navigation
    at.switch_page(BY_URL["start"].file)
    at.run()
    listing = " ".join(m.value for m in at.markdown if re.match(r"\d+\. ", m.value))  # both parts
    hrefs = re.findall(r'<a href="([^"]+)" target="_self">', listing)
    assert [h.split("?")[0] for h in hrefs] == [("/" if u == "overview" else "/" + u) for u, *_ in TOUR]
    assert all("mode=decode" in h and "head=2" in h for h in hrefs)
    at.switch_page(BY_URL["attention"].file)
    at.run()
    line = next(c.value for c in at.caption if "stop " in c.value)
    i = [u for u, *_ in TOUR].index("attention")
    assert f"stop {i + 1} of {len(TOUR)}" in line and f'href="/{TOUR[i + 1].url}?' in line and "mode=decode" in line


@pytest.mark.parametrize("mode", ["full", "decode"])
def test_layernorm_shows_one_vector_before_and_after(mode):
    at = open_page("layernorm", mode=mode, block=1)
    assert not at.exception
    stages = [c.figure for c in charts(at) if "One position through" in c.spec]
    assert len(stages) == 1
    rows = [t for t in stages[0]["data"] if t["type"] == "bar"]
    assert len(rows) == 4 and all(len(r["y"]) == 64 for r in rows)  # tiny: d = 64
    assert rows[2]["y"] == rows[3]["y"]  # a fresh model: g = 1, b = 0
    assert any("g = 1 and bias b = 0" in c.value for c in at.caption)
    one_bar = [c for c in charts(at) if "per position" in c.spec]
    assert (len(one_bar) == 0) == (mode == "decode")


@pytest.mark.parametrize("url", ["tokens", "block", "merge", "layernorm"])
def test_decode_shows_the_positions_vectors_not_one_bar(url):
    def bars_per_position(mode):
        at = open_page(url, mode=mode)
        assert not at.exception
        specs = [c.figure for c in charts(at)]
        return [len(t["x"]) for s in specs for t in s["data"] if t["type"] == "bar" and "position" in str(t)], specs
    per_position, specs = bars_per_position("decode")
    assert per_position == []  # no chart of one bar for the one position
    assert any(sum(t["type"] == "bar" and len(t.get("y", [])) == 64 for t in s["data"]) >= 2 for s in specs)
    assert 10 in bars_per_position("full")[0]  # the full pass keeps its bar per position (10 tokens)


def test_merge_in_decode_shows_every_heads_z_becoming_the_merged_vector():
    at = open_page("merge", mode="decode")
    figs = [c.figure for c in charts(at)]
    fig = next(f for f in figs if "every head → merge(H)" in f["layout"]["title"]["text"].replace(" <br>", " "))
    heat, bars = fig["data"][:2]
    assert heat["type"] == "heatmap" and heat["y"] == ["h0", "h1", "h2", "h3"] and len(bars["y"]) == 64


@pytest.mark.parametrize("url,label,lit", [("overview", "overview", set()),
                                            ("block", "Transformer block", set()),
                                            ("attention", "attention", {"/attention"}), ("mlp", "MLP", {"/mlp"}),
                                            ("merge", "merge and project", {"/merge"})])
def test_pages_draw_their_diagram_with_links_that_keep_the_view(url, label, lit):
    at = open_page(url, mode="decode", block=1, head=2)
    svg = next(m.value for m in at.markdown if "<svg" in m.value)  # in its scroll box
    assert f'aria-label="tiny {label}"' in svg
    hrefs = re.findall(r'<a href="([^"]+)" target="_self" data-target="([^"]+)"( aria-current="page")? ', svg)
    assert hrefs and all("mode=decode" in h and "block=1" in h and "model=tiny" in h for h, _, _ in hrefs)
    assert {h.split("?")[0] for h, _, on in hrefs if on} == lit  # attention: the chosen head's box
    assert "[1, 1, 64]" in svg  # decode: T = 1 (tiny: d = 64)


@pytest.mark.parametrize("how", ["link", "sidebar"])
def test_shapes_open_on_the_selected_mode(how):
    """"Shapes in each mode" shows the selected mode's tab first (and so open),
    whether the mode came from the link or from the sidebar."""
    if how == "link":
        at = open_page("attention", mode="decode")
    else:
        at = open_page("attention")
        assert at.tabs[0].label == "Full sequence"
        at = at.sidebar.selectbox(key="mode").select("decode").run()
    assert not at.exception
    assert [t.label for t in at.tabs][:2] == ["Decode (KV cache)", "Full sequence"]
    assert "L = P + 1" in " ".join(c.value for c in at.tabs[0].caption)


def test_open_inside_keeps_the_selection_in_the_same_tab():
    """The links under a component's equation are page links (same tab) carrying the
    selection; children shown on the page itself link to sections of their own."""
    from urllib.parse import parse_qs

    at = open_page("attention", block=1, head=2, mode="decode", text="Hello there, world")
    links = {link.proto.label: link.proto for link in at.get("page_link")}
    merge = links["Merge heads and project"]
    assert merge.page == "merge" or merge.page.endswith("merge")
    assert parse_qs(merge.query_string) == {"model": ["tiny"], "block": ["1"], "head": ["2"], "mode": ["decode"],
                                            "text": ["Hello there, world"]}
    markdown = " ".join(m.value for m in at.markdown)
    anchors = {h.proto.anchor for h in at.subheader}
    cat = component_tree(get_config("tiny"))
    parents = {x.id: x.parent for x in cat}
    shown_here = [c for c in cat["block.attn"].children if home(c.id, parents)[0].url == "attention"]
    assert shown_here  # today: the qkv projection and the heads
    for child in shown_here:
        anchor = child.id.replace(".", "-")
        assert f"[{child.title}](#{anchor})" in markdown and anchor in anchors
    block = open_page("block", block=1)
    ln2 = {link.proto.label: link.proto for link in block.get("page_link")}["LayerNorm 2"]
    assert parse_qs(ln2.query_string) == {"model": ["tiny"], "block": ["1"], "ln": ["ln_2"]}


def test_layernorm_page_says_which_layernorm():
    """The title names the LayerNorm the charts show (it said "LayerNorm 1" for ln_f),
    and the charts follow the choice."""
    first_chart = {}
    for ln, title in [("ln_1", "LayerNorm 1"), ("ln_2", "LayerNorm 2"), ("ln_f", "Final LayerNorm")]:
        at = open_page("layernorm", ln=ln, block=1)
        assert not at.exception and titles(at) == [title]
        first_chart[ln] = charts(at)[0].spec
    assert len(set(first_chart.values())) == 3


def test_upload_limit_says_the_cap_the_server_enforces(monkeypatch):
    """The upload widget said 1GB (Streamlit writes any limit above 512 MB so) while
    the server caps uploads at 700 MB: the app says the cap itself (test_browser checks the screen). The
    route's limit where model uploads are on is the uploader's (server/received.py)."""
    from gpt2viz.server.received import max_upload_mb

    monkeypatch.setenv("GPT2VIZ_ALLOW_UPLOAD", "1")  # AppTest's server.address is unset: uploads are off

    at = first_run(weights="upload")
    assert not at.exception
    (uploader,) = at.get("file_uploader")
    assert uploader.proto.max_upload_size_mb == max_upload_mb(model_uploads=True) == 700
    assert any("Up to 700 MB per file" in c.value for c in at.sidebar.caption)


@pytest.mark.parametrize("params,says", [({}, "before any temperature, top-k or top-p"),
                                         ({"temperature": 1.2, "top_k": 40}, "after temperature 1.2 and top-k 40")])
def test_generation_counts_steps_one_way_and_says_which_probabilities(params, says):
    """The table counted steps 0-7 while the chart ran 1-8; the probabilities chart
    did not say whether it was before or after temperature and top-k."""
    at = open_page("generation", steps=4, step=2, **params)
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["step"]) == [1, 2, 3, 4]
    specs = [c.figure for c in charts(at)]
    assert specs[0]["data"][1]["x"] == [1, 2, 3, 4]  # the cache chart's steps
    titles = [s["layout"]["title"] for s in specs]  # in one of two columns a subtitle may be wrapped
    heads = [(t["text"], t.get("subtitle", {}).get("text", "").replace(" <br>", " ")) for t in titles]
    assert any(title.startswith("Step 2: ") and says in sub for title, sub in heads), heads
    chosen = table["chosen"][1]  # step 2's token is the highlighted bar
    bars = specs[-1]["data"][0]
    assert chosen in [html.unescape(c[0]) for c in bars["customdata"]]


def test_glossary_names_h_and_z_as_one_tensor():
    """The glossary's H and the Attention page's z are the same tensor, said so."""
    from gpt2viz.spec.glossary import SYMBOLS

    (row,) = [r for r in SYMBOLS if "attn.z" in r[2]]
    assert "H" in row[0] and "z" in row[0] and "‖z‖" in row[2]


def test_an_unreadable_answer_asks_again_and_reveals_nothing():
    """"355M" counted as answered, marked wrong and opened the worked answer."""
    from gpt2viz.teaching import exercises as ex

    at = open_page("exercises", set=3, questions=2)
    count = next(e for e in ex.exercise_set(3, 2) if e.kind == "params")
    i = [e.id for e in ex.exercise_set(3, 2)].index(count.id)
    at.text_input(key=f"answer-{count.id}").input("355M")
    at.button[i].click().run()
    assert not at.exception
    assert [w.value for w in at.warning] and "355M" in at.warning[0].value and "every digit" in at.warning[0].value
    assert not at.error and not at.success and not at.expander
    assert any("Score: 0 of 2** correct · 0 answered" in m.value for m in at.markdown)
    assert not any(count.worked.splitlines()[0] in m.value for m in at.markdown)
    at.text_input(key=f"answer-{count.id}").input(count.answer_text)
    at.button[i].click().run()
    assert [s.value for s in at.success] == [f"Correct: {count.answer_text}."]


def test_the_logit_lens_charts_depth_by_position_for_the_position_in_the_url():
    """A chart of depth × position with the position to read chosen, in the URL."""
    at = open_page("lens", lens_pos=3)
    assert not at.exception
    heat = next(c.figure for c in charts(at) if "top next token at every depth" in c.spec)
    assert heat["data"][0]["type"] == "heatmap" and len(heat["data"][0]["y"]) == 3  # tiny: 2 blocks, 3 depths
    assert heat["data"][0]["x"][0] == "0·The" and len(heat["data"][0]["x"]) == 10
    assert heat["layout"]["shapes"][0]["x0"] == 2.5  # position 3 outlined
    assert any(m.value.startswith("**Position 3,") for m in at.markdown)
    assert at.slider(key="lens_pos").proto.query_param_key == "lens_pos"  # bound: the choice is in the URL
    at.slider(key="lens_pos").set_value(6).run()
    assert any(m.value.startswith("**Position 6,") for m in at.markdown)
    decode = open_page("lens", mode="decode")  # one position: no choice, one column
    assert not decode.exception and [s.key for s in decode.main.get("slider")] == ["lens_depth"]
    heat = next(c.figure for c in charts(decode) if "top next token" in c.spec)
    assert heat["data"][0]["x"] == ["9·␣because"]


def test_the_decomposition_opens_after_the_last_block_and_its_depth_is_in_the_url():
    """Block 0's input is the embedding alone (one bar): the decomposition opens on the stream after the
    last block, every block's attention and MLP in it; a depth chosen is in the URL."""
    at = open_page("lens")
    titled = [c.figure for c in charts(at)]  # titles wrap to a phone's width
    bars = next(s for s in titled if "after the last block" in s["layout"]["title"]["text"].replace(" <br>", " "))
    assert list(bars["data"][0]["y"] if bars["data"][0].get("orientation") == "h" else bars["data"][0]["x"]) == [
        "embed", "attn 0", "mlp 0", "attn 1", "mlp 1"]  # tiny: 2 blocks
    assert at.slider(key="lens_depth").proto.query_param_key == "lens_depth"
    at.slider(key="lens_depth").set_value(1).run()
    assert any("block 1 input" in c.figure["layout"]["title"]["text"].replace(" <br>", " ")
               for c in charts(at))


def in_order(node) -> list:
    """Every element below an AppTest node, in the order the page shows them."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [e for key in sorted(children) for e in in_order(children[key])]


@pytest.mark.parametrize("url", [row.url for row in PAGES if row.component])
def test_random_weights_are_said_beside_the_values_and_the_badge_names_parameters(url):
    """The eight component pages said "random weights" only in a "(?)" tooltip, and a
    blue "learned" badge on every breadcrumb read as "trained". Now one line in the page's body,
    under "Intermediate states" and before the first chart; the badge says what it means."""
    at = open_page(url)
    shown = in_order(at.main)
    kinds = [kind(e) for e in shown]
    texts = [str(getattr(e, "value", "")) for e in shown]
    states = next(i for i, t in enumerate(texts) if t.startswith("Intermediate states"))
    note = next(i for i, t in enumerate(texts) if "Random, untrained weights" in t)
    first_chart = kinds.index("chart") if "chart" in kinds else len(shown)
    assert states < note < first_chart, (states, note, first_chart)
    assert len(texts[note]) < 130  # one short line
    breadcrumb = next(c.value for c in at.main.caption if "›" in c.value or "badge[" in c.value)
    assert "badge[learned]" not in breadcrumb
    assert ":blue-badge[uses parameters]" in breadcrumb or ":gray-badge[parameter-free]" in breadcrumb


def test_charts_show_their_toolbar_on_hover_only():
    """The toolbar covered chart titles and legends."""
    for chart in charts(open_page("generation")):
        assert chart.config["displayModeBar"] == "hover"


@pytest.mark.parametrize("url,tables", [("params", 1), ("modes", 2)])  # params: its second table fits
def test_wide_tables_keep_every_cell_whole_and_say_they_scroll(url, tables):
    """In an 800 px window the accounting grid and the modes tables were clipped, and
    their long cells ended in "…" at any width. A wide table now gives each column the width of its
    longest cell, pins its first column, and the line above it says that it scrolls sideways."""
    at = open_page(url)
    shown = in_order(at.main)
    wide = [(shown[i - 1], e) for i, e in enumerate(shown) if e.type == "dataframe" and
            shown[i - 1].type == "caption" and "scrolls sideways" in shown[i - 1].value]
    assert len(wide) >= tables
    for caption, frame in wide:
        config, data = json.loads(frame.proto.columns), frame.value
        assert f"{len(data.columns)} columns" in caption.value
        assert [config[c]["pinned"] for c in data.columns] == [True] + [False] * (len(data.columns) - 1)
        for column in data.columns:
            longest = max(len(str(column)), *(len(str(v)) for v in data[column]))
            assert config[column]["width"] >= 7 * longest, (column, config[column]["width"], longest)


def test_the_output_pages_title_begins_with_its_navigation_name():
    """The navigation's "Output" opened a page titled "Unembedding (tied)": a student looked for the page
    they had clicked."""
    row = BY_URL["output"]
    assert component_tree(get_config("tiny"))[row.component].title.startswith(row.title + ":")


def test_a_table_that_fits_the_narrowest_page_does_not_say_it_scrolls():
    """"N columns, scrolls sideways" stood above tables that fit any window."""
    from gpt2viz.ui.layout import NARROWEST_PAGE_PX, column_widths, scrolls

    narrow = [{"step": 1, "token": "␣the", "p": "0.25"}]
    wide = [{f"column {i}": "a long cell of text" for i in range(8)}]
    assert not scrolls(column_widths(narrow)) and sum(column_widths(narrow).values()) < NARROWEST_PAGE_PX
    assert scrolls(column_widths(wide))


def test_the_parameters_chart_names_the_size_it_counts_not_the_sidebars_text():
    """For gpt2-xl the chart's caption named the tiny random weights and the sidebar's text it never used."""
    at = open_page("params", params_size="gpt2-xl")
    (chart,) = charts(at)
    notes = [a["text"] for a in chart.figure["layout"]["annotations"]]
    assert any(n.startswith("gpt2-xl: from its sizes alone") for n in notes), notes
    assert not any("The quick" in n or "random" in n for n in notes), notes


@pytest.mark.parametrize("url,key", [("output", "topp"), ("generation", "topp")])
def test_top_p_sits_beside_temperature_and_top_k_in_the_url_and_is_bounded(url, key):
    """Top-p (nucleus) on Output and Generation: read from the link, said in the charts; out of its range
    (0.01 to 1) the link's value gives way to 1, with no traceback."""
    params = {"temp": "1", "temperature": "1"} if url == "output" else {"temperature": "1"}
    at = open_page(url, **params, **{key: "0.5"})
    assert not at.exception
    (box,) = [n for n in at.number_input if n.label.startswith("Top-p")]
    assert box.value == 0.5
    said = " ".join(json.dumps(c.figure["layout"].get("title", {})) for c in charts(at))
    assert "top-p 0.5" in said, said
    bad = open_page(url, **params, **{key: "7"})
    assert not bad.exception and [n.value for n in bad.number_input if n.label.startswith("Top-p")] == [1.0]
    said = "The link asked for topp=`'7'`, which is not available here (0.01 to 1); showing topp=`1`."
    assert any(said in c.value for c in bad.caption), [c.value for c in bad.caption]  # said in one line, not silently


@pytest.mark.parametrize("url,params,says", [
    ("output", {"temp": "0.5", "topp": "0.9"}, "head, and this page's temperature and top-p)"),
    ("generation", {}, "head, and this page's steps, temperature, top-k, top-p and sampling seed)"),
    ("attention", {}, "(text, weights, mode, block, head)"),
])
def test_the_code_panel_names_every_control_its_snippets_follow(url, params, says):
    """The Code panel's first sentence lists what its scripts follow: the page's own controls too."""
    at = open_page(url, **params)
    intro = [m.value for m in at.markdown if m.value.startswith("**Recompute this page's numbers yourself**")]
    assert len(intro) == 1 and says in intro[0], intro


def test_the_attention_map_says_whether_a_click_takes_a_score_apart():
    """Up to 64 x 64 cells a click on the map selects its cell (one invisible marker a cell, its query and key);
    beyond, the map says to choose them below instead, and carries no markers."""
    short = open_page("attention")
    spec = charts(short)[0].figure
    assert [t["type"] for t in spec["data"]].count("scatter") == 2
    assert any("Click a cell of either map" in c.value for c in short.caption)
    long = open_page("attention", text=" ".join(f"w{i}" for i in range(70)))
    spec = charts(long)[0].figure
    assert [t["type"] for t in spec["data"]].count("scatter") == 0 and not long.exception
    assert any("too many to click one: choose the query and key below" in c.value for c in long.caption)


@pytest.mark.parametrize("url", [row.url for row in PAGES if row.charts])
def test_every_charted_page_opens_with_its_question_before_its_first_chart(url):
    """A page opens with a question, then the live picture: the Training page and eight others opened
    with their explanation instead. Every page that draws a chart has one question, a level-2 heading
    right under the title (its component's, or the page's own), before its first chart."""
    from gpt2viz.teaching.notices import PAGE_QUESTIONS, QUESTIONS

    row = BY_URL[url]
    assert (row.component in QUESTIONS) != (url in PAGE_QUESTIONS)  # one question, from one place
    at = open_page(url)
    assert not at.exception, at.exception[0].value
    shown = in_order(at.main)
    texts = [str(getattr(e, "value", "")) for e in shown]
    asked = [i for i, t in enumerate(texts) if t.startswith("## :material/help: ")]
    title = next(i for i, e in enumerate(shown) if e.type == "title")
    kinds = [kind(e) for e in shown]
    first_chart = kinds.index("chart") if "chart" in kinds else len(shown)
    assert len(asked) == 1 and title < asked[0] < first_chart, (asked, title, first_chart)
    assert texts[asked[0]].endswith("?")


def test_shapes_draw_the_tab_on_screen_another_when_chosen_and_every_tab_for_the_lesson_export():
    """The three hidden tabs' tables were 1-4 % of a component page's view in a new tab: only the
    tab on screen is drawn, the one chosen draws in the run its click starts, and the lesson export,
    which reads every tab, gets all four."""
    at = open_page("attention", mode="training")
    drawn = [(t.label, len(html_tables(t))) for t in at.tabs]
    assert drawn == [("Training", 1), ("Full sequence", 0), ("Prefill", 0), ("Decode (KV cache)", 0)]
    at.session_state["shapes-block-attn-training"] = "Decode (KV cache)"
    at.run()
    decode = [t for t in at.tabs if len(html_tables(t))]
    assert [t.label for t in decode] == ["Decode (KV cache)"] and "P = 9, L = 10" in decode[0].caption[0].value
    assert not at.get("table")  # in the app an HTML table; st.table decodes Arrow in the browser
    at.session_state["_static_export"] = True  # lesson_site.py STATIC
    at.run()
    assert [len(t.table) for t in at.tabs] == [1, 1, 1, 1]  # the export reads tables back as tables
    assert not any(html_tables(t) for t in at.tabs)


def html_tables(block) -> list:
    """The tables ui/anatomy.text_table drew in `block` as HTML (in the app; the export's are st.table)."""
    return [m for m in block.markdown if TABLE_CLASS in m.value]


def test_a_text_table_says_its_cells_as_text():
    """Every cell is escaped as HTML and for Streamlit's Markdown (its $ math, its :icon: codes), and
    the table has one header row and no index column."""
    rows = [{"name": "<b>x</b> & $a$", "icon": ":material/home:"}, {"name": "h.{i}.attn", "icon": "d × 3d"}]
    drawn = table_html(rows)
    assert "<b>" not in drawn and "&lt;b&gt;x&lt;/b&gt; &amp; &#36;a&#36;" in drawn
    assert "&#58;material/home&#58;" in drawn
    assert drawn.count("<th ") == 2 and drawn.count("<tr>") == 3 and "h.{i}.attn" in drawn


@pytest.mark.parametrize("params,said,unsaid", [
    ({}, "the two charts are the same", "goes from"),  # temperature 1, every token: nothing changes
    ({"topp": "0.5"}, "Top-p keeps the fewest", "float64"),  # its zeros are top-p's, not underflow
])
def test_the_output_pages_temperature_notice_says_what_the_controls_did(params, said, unsaid):
    """At temperature 1 the notice said "goes from 0.000218 to 0.000218"; with top-p it called the tokens
    top-p dropped too small for a float64 (it was told only of top-k)."""
    at = open_page("output", **params)
    assert not at.exception
    (note,) = [i.value for i in at.info if "top token's probability" in i.value]
    assert said in note and unsaid not in note, note


def link_cut(at, key: str = "text") -> tuple[str, list[str]]:
    return at.query_params.get(key), [c.value for c in at.caption if "a link carries" in c.value]


def test_a_text_longer_than_a_link_carries_is_cut_to_what_one_does_and_says_so():
    """20,000 `的` fit the text box and took 180,000 characters of address: the page drew, and the link it
    wrote was refused when opened ("Invalid HTTP request"). A new user's trial found it."""
    from gpt2viz.spec.link_text import LINK_TEXT_CHARS, link_length, link_prefix

    at = first_run()
    at.text_area(key="text").input("的" * 20_000).run()
    kept = link_prefix("的" * 20_000)
    assert not at.exception and at.text_area(key="text").value == kept and len(kept) == LINK_TEXT_CHARS // 9
    url, notes = link_cut(at)
    assert url == kept and link_length(url) <= LINK_TEXT_CHARS, len(url or "")
    assert notes == [f":material/link: The text was cut to its first {len(kept):,} of 20,000 characters: a link "
                     f"carries at most {LINK_TEXT_CHARS:,} characters of text as the address writes them, and this "
                     f"one took 180,000 (a character other than a letter, a digit or a space takes 3 to 12)."], notes
    at.text_area(key="text").input("Hello").run()  # a text that fits: no note (the browser writes its link)
    assert link_cut(at)[1] == [] and at.text_area(key="text").value == "Hello"


def test_a_hand_made_link_with_a_longer_text_opens_on_its_start():
    from gpt2viz.spec.link_text import link_prefix

    text = "word " * 4_000  # 20,000 characters: a link of 20,000, which Streamlit's server takes
    at = first_run(text=text)
    assert not at.exception and at.text_area(key="text").value == link_prefix(text)
    url, notes = link_cut(at)
    assert url == link_prefix(text) and len(notes) == 1, (len(url or ""), notes)


def test_text_b_is_cut_for_a_link_as_the_sidebars_text_is():
    from gpt2viz.spec.link_text import link_prefix

    at = open_page("patch", text_b="🙂" * 2_000)  # 24,000 characters of address
    assert not at.exception and at.text_area(key="text_b").value == link_prefix("🙂" * 2_000) == "🙂" * 1_000
    url, notes = link_cut(at, "text_b")
    assert url == "🙂" * 1_000 and any(n.startswith(":material/link: Text B was cut") for n in notes), notes


@pytest.mark.parametrize("weights,a,b", [({"model": "gpt2"}, " the", " a"), ({"weights": "demo"}, " people", " game")])
def test_compare_and_patch_patches_two_one_token_texts(weights, a, b):
    """A trial: on two 1-token texts the patch's grids were drawn, then a traceback ("training needs T >= 2
    tokens") from the memory estimate of the linear estimate's backward pass."""
    at = open_page("patch", text=a, text_b=b, **weights)
    at.button(key="run_patch").click().run(timeout=300)
    assert not at.exception, at.exception[0].value
    said = " ".join(str(x.value) for x in [*at.caption, *at.warning, *at.markdown])
    assert "m_A = " in said and "m_B = " in said, said
    titles = [c.figure["layout"]["title"]["text"] for c in charts(at)]
    assert sum(t.startswith("Linear estimate") for t in titles) == 2, titles  # past the estimate that raised


def test_compare_and_patch_captions_each_chart_with_its_own_text():
    """Text B's charts carried text A's words in their corner (and in their SVG and the handout): a trial."""
    at = open_page("patch", text="Hello there", text_b="Goodbye now")
    assert not at.exception
    captions = {}
    for chart in charts(at):
        layout = chart.figure["layout"]
        title = layout["title"]["text"]
        if title.startswith(("A:", "B:")):
            captions[title[0]] = " ".join(a["text"] for a in layout["annotations"])
    assert set(captions) == {"A", "B"}
    assert "Hello there" in captions["A"] and "Goodbye" not in captions["A"], captions
    assert "Goodbye now" in captions["B"] and "Hello" not in captions["B"], captions
