"""The demo model's story through AppTest: the Attention page's link to a text that repeats (same
tab, full sequence, the stripe marked), the prompts that every page then starts from (the copy wins
in generation and What if; Compare and patch gets a ready pair and a choice of tokens), the model's
vocabulary said and shown, and the sentences that taught the wrong thing."""

import html
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from app_charts import charts
from streamlit.testing.v1 import AppTest

from gpt2viz.model.demo_model import DEMO_PATH, demo_heads
from gpt2viz.model.tokenizer import encode, readable

pytestmark = pytest.mark.skipif(not DEMO_PATH.is_file(), reason=f"no demo model shipped at {DEMO_PATH}")


def open_page(file: str, **params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=180)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(f"views/{file}")
    return at.run()


def texts(at, *kinds: str) -> list[str]:
    return [e.value for kind in kinds for e in at.get(kind)]


def repeat_link(at) -> tuple[str, dict[str, str]]:
    """The Attention page's link to a text that repeats: (its Markdown or HTML, its query values)."""
    for value in texts(at, "info", "markdown"):
        if "<svg" in value:  # the drawn diagram's boxes link to pages too
            continue
        found = re.search(r'(?:\]\(|href=")(/attention\?[^)"]+)', value)
        if found:
            return value, dict(parse_qsl(urlsplit(html.unescape(found.group(1))).query))
    raise AssertionError("no link to a text that repeats")


def copied(text: str) -> str:
    """The token an induction head copies at the end of `text`: the one after the last token's earlier occurrence."""
    ids = encode(text)
    return readable(ids[ids.index(ids[-1]) + 1])


def offered_view() -> dict[str, str]:
    return repeat_link(open_page("attention.py", weights="demo", mode="decode"))[1]


def test_the_repeat_link_stays_in_the_tab_and_shows_the_stripe():
    at = open_page("attention.py", weights="demo", mode="decode")
    assert not at.exception
    source, query = repeat_link(at)
    assert 'target="_self"' in source and "](" not in source  # Streamlit opens a Markdown link in a new tab
    block, head, _ = demo_heads()["induction"]
    assert (query["mode"], query["block"], query["head"]) == ("full", str(block), str(head))
    from gpt2viz.teaching.prompts import induction_cells  # here: the other tests also run on a checkout without it

    view = open_page("attention.py", **query)
    spec = charts(view)[0].figure
    assert spec["layout"]["title"]["text"].startswith(f"Attention · block {block} head {head}")
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    cells = induction_cells(encode(query["text"]))
    assert len(cells) >= 4 and [(r["y0"] + 0.5, r["x0"] + 0.5) for r in rects] == cells
    assert "where an induction head looks" in spec["layout"]["title"]["subtitle"]["text"].replace(" <br>", " ")


def test_generation_after_the_offered_text_copies():
    query = offered_view()
    at = open_page("generation.py", **query)
    assert not at.exception
    rows = at.dataframe[0].value
    assert rows["chosen"].iloc[0] == copied(query["text"])


def test_what_if_tracks_the_copy_by_default():
    query = offered_view()
    at = open_page("whatif.py", **query)
    assert not at.exception
    assert at.selectbox(key="track").value == copied(query["text"])
    offer = next(m.value for m in at.markdown if "Knock out block" in m.value)
    assert 'target="_self"' in offer and "0.81, 0.53, 0.90 or 0.08" in offer  # what the knock-outs measured


def test_patch_offers_a_ready_pair_and_a_choice_of_tokens():
    at = open_page("patch.py", **offered_view())  # the Attention page's text, as A
    assert not at.exception
    shown = " ".join(texts(at, "markdown", "warning"))
    assert "tokens and B has" not in shown and any(b.key == "run_patch" for b in at.button)
    assert (at.selectbox(key="answer_a").value, at.selectbox(key="answer_b").value) == ("␣after", "␣would")
    assert "m = logit(`␣after`) − logit(`␣would`)" in shown
    at.button(key="run_patch").click().run()
    titles = [c.figure["layout"]["title"]["text"].replace(" <br>", " ") for c in charts(at)]
    assert any(t.startswith("Patching one head") for t in titles), titles  # beside the estimate's charts
    # another pair from the URL; a token not among the top ten falls back to the default
    other = open_page("patch.py", weights="demo", answer_b="␣kn", answer_a="␣nonsense")
    assert "m = logit(`␣after`) − logit(`␣kn`)" in " ".join(texts(other, "markdown"))


def test_the_demo_note_says_its_vocabulary_and_the_tokens_page_shows_it():
    at = open_page("tokens.py", weights="demo", text=" the inst game Hello")
    assert not at.exception
    note = " ".join(texts(at, "caption"))
    assert "300 common words" not in note and "pieces of words such as ␣inst" in note
    shown = " ".join(texts(at, "markdown"))
    assert "vocabulary: 300 tokens" in shown and "1 token it never saw" in shown and "`␣Hello`" in shown
    assert "`␣inst`" in shown and "`␣people`" in shown  # the expander's list
    listed = [e for e in at.expander if e.label.startswith("The 300 tokens")]
    assert len(listed) == 1 and not listed[0].proto.expanded  # closed, unless the link opens it:
    opened = open_page("tokens.py", weights="demo", vocabulary="true")
    assert [e.proto.expanded for e in opened.expander if e.label.startswith("The 300 tokens")] == [True]


def test_patch_and_what_if_say_what_an_induction_head_copies():
    caption = " ".join(texts(open_page("patch.py", model="tiny"), "caption"))
    assert "copy the earlier token" not in caption
    assert "**last** word" in caption and "the word that *followed* the earlier occurrence" in caption
    note = " ".join(texts(open_page("whatif.py", model="tiny"), "info"))
    assert "moves it a lot" not in note and "0.81, 0.53, 0.90 or 0.08" in note


def test_choosing_the_demo_in_the_sidebar_brings_its_texts_and_keeps_a_written_one():
    at = open_page("patch.py")  # random weights, the default texts
    at.sidebar.radio(key="weights").set_value("demo").run()
    assert not at.exception
    a, b = at.sidebar.text_area(key="text").value, at.text_area(key="text_b").value
    assert len(encode(a)) == len(encode(b)) and a != b and copied(a) == "␣after"
    assert "tokens and B has" not in " ".join(texts(at, "warning"))
    at.sidebar.text_area(key="text").input(" my own words").run()
    at.sidebar.radio(key="weights").set_value("random").run()
    assert at.sidebar.text_area(key="text").value == " my own words"  # written, so kept
    assert at.text_area(key="text_b").value == "The quick brown cat jumps over the lazy dog because"
