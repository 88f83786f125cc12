"""Every page that computes says what it is doing, with the run's progress, and
every page that cuts the text says so (the app through AppTest, on the tiny model)."""

import pytest
from test_app import open_page

import gpt2viz.ui.working as working_module
from gpt2viz.server.trace_cache import Progress

LONG = "word " * 1100  # " word" is one token each: 1,101 tokens, 77 cut at the context of 1,024


@pytest.fixture
def told(monkeypatch):
    """What the pages said while they computed: the spinners' words and every progress status."""
    from gpt2viz.ui.cache import trace_cache

    said = {"spinners": [], "statuses": []}
    spinner = working_module.st.spinner

    def recording_spinner(text, **kw):
        said["spinners"].append(text)
        return spinner(text, **kw)

    class RecordingProgress(Progress):
        def __init__(self, show):
            super().__init__(lambda s: (said["statuses"].append(s), show(s)))

    monkeypatch.setattr(working_module.st, "spinner", recording_spinner)
    monkeypatch.setattr(working_module, "Progress", RecordingProgress)
    trace_cache.clear()  # every run is computed, not found in the cache
    yield said
    trace_cache.clear()


@pytest.mark.parametrize("url,words,steps", [
    ("training", "Training tiny on 13 tokens: forward, loss, backward", 4),
    ("generation", "Generating 8 tokens step by step", 8),
    ("attention", "Running tiny on 13 tokens in full mode", 2),
    ("lens", "Running tiny on 13 tokens in full mode", 2),
    ("patch", "Running tiny on 13 tokens in full mode", 2),
    ("whatif", "Running blocks 0 to 1 with head 0.0 knocked out", 2),
    ("about", "Running tiny on 13 tokens twice: full, then decode", 2),
])
def test_a_page_that_computes_says_what_and_how_far(told, url, words, steps):
    at = open_page(url, text="The quick brown fox jumps over the lazy dog because it is tired")
    assert not at.exception, at.exception[0].value
    assert any(words in s for s in told["spinners"]), told["spinners"]
    done = [(s.done, s.total) for s in told["statuses"] if s.state == "running"]
    assert (steps, steps) in done, done
    assert not at.get("progress")  # gone once the result is there


@pytest.mark.parametrize("url", ["training", "whatif", "generation", "patch", "about", "modes", "lens", "tokens"])
def test_every_page_that_cuts_the_text_says_so(url):
    at = open_page(url, text=LONG)
    assert not at.exception, at.exception[0].value
    assert any("77 tokens at the end are not shown" in i.value for i in at.info), [i.value for i in at.info]


def test_text_b_cut_or_with_endoftext_is_said_too():
    at = open_page("patch", text_b=LONG + "<|endoftext|>")
    assert not at.exception
    said = [i.value for i in at.info]
    assert any(s.startswith("Text B was cut") and "78 tokens at the end" in s for s in said), said
    assert not any("The text was cut" in s for s in said)
    at = open_page("patch", text_b="One.<|endoftext|>Two.")
    assert any("in text b is read as GPT-2's end-of-text token" in i.value for i in at.info)


def test_the_progress_line_says_whose_run_it_is():
    from gpt2viz.server.trace_cache import Status
    from gpt2viz.ui.working import status_text

    assert status_text(Status("running", 3, 24, "forward pass: block 2")) == "Forward pass: block 2 (3 of 24 steps)"
    shared = status_text(Status("shared", 3, 24, "forward pass: block 2"))
    assert shared.startswith("Another session started this same run") and shared.endswith("(3 of 24 steps)")
