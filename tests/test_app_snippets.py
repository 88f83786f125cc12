"""The Code panel on the pages (AppTest, tiny model): two tabs, gpt2viz and transformers, whose code is
the snippet of this view (text, weights, mode, block, head, the page's own controls), and a download."""

import pytest
from streamlit.testing.v1 import AppTest

from gpt2viz.spec.pages import BY_URL, PAGES
from gpt2viz.ui.code_panel import OPEN_CODE

COMPONENT_PAGES = [row.url for row in PAGES if row.component]


def open_page(url: str, code_open: bool = True, **params) -> AppTest:
    """The page with its Code panels open (`code_open`), as a reader who opened them sees it."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.session_state[OPEN_CODE] = code_open
    for key, value in {"model": "tiny", **params}.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page(BY_URL[url].file)
    return at.run()


def snippets_shown(at) -> list[str]:
    """The code blocks of the panel: its two snippets (gpt2viz's, transformers')."""
    return [c.value for c in at.code if c.value.startswith("# The ") and ", recomputed with " in c.value]


@pytest.mark.parametrize("url", COMPONENT_PAGES)
def test_every_component_page_has_the_code_panel(url):
    at = open_page(url, block=1, head=3, mode="decode")
    assert not at.exception, at.exception[0].value
    assert [t.label for t in at.tabs if t.label in ("gpt2viz", "transformers")] == ["gpt2viz", "transformers"]
    ours, theirs = snippets_shown(at)
    assert "model.run(TEXT, mode='decode')" in ours and "gpt2viz.load('random:tiny:seed=0')" in ours
    assert "python -m gpt2viz weights --model tiny --seed 0 --out tiny-seed0.safetensors" in theirs
    assert "import gpt2viz" not in theirs and "from gpt2viz" not in theirs
    assert "hf(ids[:, -1:], cache, use_cache=True)" in theirs and "register_forward_hook" in theirs \
        or url == "output"
    downloads = at.get("download_button")
    assert any(f"gpt2viz-{url}.py" in d.proto.label for d in downloads)


def test_the_panel_follows_the_view():
    at = open_page("attention", block=1, head=3, seed=7)
    ours, theirs = snippets_shown(at)
    assert 'run["blocks.1.attn.pattern"][0, 3]' in ours and "seed=7" in ours
    assert "hf.transformer.h[1].attn.register_forward_hook" in theirs and 'seen["out"][1][0, 3]' in theirs
    at = open_page("layernorm", ln="ln_f")
    ours, theirs = snippets_shown(at)
    assert 'run["ln_f.out"][0]' in ours and "hf.transformer.ln_f.register_forward_hook" in theirs


def test_the_demo_models_snippet_reads_the_file():
    at = open_page("mlp", weights="demo")
    ours, theirs = snippets_shown(at)
    assert "gpt2viz.load('demo')" in ours and "mlp.act" in theirs
    assert "assets/demo-model/model.safetensors'" in theirs and "load_file(PATH)" in theirs


@pytest.mark.parametrize("url,says", [("whatif", "knockout(model.model"), ("lens", "logit_lens(model.model"),
                                      ("heads", "score_trace(run.trace)"), ("patch", "patch(model.model")])
def test_classroom_pages_have_the_code_panel(url, says):
    at = open_page(url, block=1, head=2, part="neuron", neuron=5, method="mean", lens_pos=3)
    assert not at.exception, at.exception[0].value
    assert "Code" in [h.value for h in at.subheader]
    ours, theirs = snippets_shown(at)
    assert says in ours and "GPT2LMHeadModel" in theirs
    if url == "whatif":
        assert "Target(1, 'neuron', 5), 'mean')" in ours and "h[1].mlp.act" in theirs
    if url == "patch":  # the sidebar's default text B, and the answer pair the page shows
        assert "TEXT_B = 'The quick brown cat jumps over the lazy dog because'" in ours and "answers = (" in ours
    if url == "lens":
        assert "position=3" in ours and "seen[d][0, 3]" in theirs
    assert any(f"gpt2viz-{url}.py" in d.proto.label for d in at.get("download_button"))


def test_the_output_panel_follows_the_pages_temperature_top_k_and_top_p():
    """At temperature 2, top-k 3 the panel printed the temperature-1 top 10; both snippets now apply the
    page's controls (tests/test_snippets.py runs them against the page's numbers)."""
    at = open_page("output", temp=2, topk=3, topp=0.9)
    assert not at.exception
    for code in snippets_shown(at):
        assert "/ 2.0  # temperature 2" in code and "# top-k 3" in code and "0.9  # top-p 0.9" in code, code


def test_the_generation_panel_follows_the_pages_sampling_controls():
    """The Generation page had no Code panel; its snippets now draw with the page's steps, temperature,
    top-k, top-p and sampling seed (tests/test_snippets.py runs them against the page's tokens)."""
    at = open_page("generation", steps=4, temperature=0.7, top_k=5, topp=0.9, gen_seed=3)
    assert not at.exception, at.exception[0].value
    ours, theirs = snippets_shown(at)
    assert "Sampler(0.7, 5, 3, 0.9)" in ours and "generate(model.model, encode(TEXT), 4" in ours
    for code in (ours, theirs):
        assert "4 steps, temperature 0.7, top-k 5, top-p 0.9, seed 3" in code, code
    assert "manual_seed(3)" in theirs and "range(4)" in theirs and "z.topk(5)" in theirs and "< 0.9" in theirs
    assert any("gpt2viz-generation.py" in d.proto.label for d in at.get("download_button"))


@pytest.mark.parametrize("url", ["attention", "whatif"])
def test_the_code_is_drawn_only_once_the_panel_is_opened(url):
    """Closed, the panel sends no code to the browser (which would highlight it, open or not); opening it
    (its expander's state, as a click sets it) draws both scripts."""
    at = open_page(url, code_open=False)
    assert not at.exception, at.exception[0].value
    assert snippets_shown(at) == [] and not [c for c in at.code if c.language == "python"]
    assert any(e.label.startswith("The two scripts") for e in at.expander)
    at.session_state[f"code-{url}"] = True
    at.run()
    assert len(snippets_shown(at)) == 2
