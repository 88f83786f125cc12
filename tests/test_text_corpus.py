"""The registered sentences that are not a page notice, on their corpus: the pages' own sentences
(teaching/page_text.py: the Modes page's two paragraphs, the Parameters page's headline, the tour's
tally, the refusals that quote a number, the About page's check), the exercises and the demo model's
lines (teaching/trained.py), each over the model sizes and the counts where its grammar or its
quantifiers could break (1, 2, 3, 300 and 1,024 tokens; a cut of 1; a check that agrees and one that
does not), and checked against what this test recomputes: arithmetic from the printed operands,
"agree" only below the stated bound, "every"/"always" only where every case of the corpus holds."""

import math
import re
from urllib.parse import quote_plus

import pytest
import torch

from gpt2viz.anatomy.components import component_tree
from gpt2viz.anatomy.params import accounting_report
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.model.modes import Mode, run
from gpt2viz.model.tokenizer import encode
from gpt2viz.model.weights import load_safetensors, random_model
from gpt2viz.spec import costs
from gpt2viz.spec.config import PRESETS, get_config
from gpt2viz.spec.link_text import LINK_TEXT_CHARS, link_length, link_prefix
from gpt2viz.teaching import exercises as ex
from gpt2viz.teaching import page_text, tour, trained
from gpt2viz.teaching.prompts import DEMO_PAIR, DEMO_REPEAT

SIZES = ("tiny", "gpt2", "gpt2-xl")
COUNTS = (1, 2, 3, 300, 1024)
NUMBER = r"-?\d[\d,]*(?:\.\d+)?"


def product(calculation: str) -> int:
    """A printed product ("2 × 12 × 1,001") worked out from its printed factors."""
    return math.prod(int(f.replace(",", "")) for f in re.split(r"\s*[×·]\s*", calculation))


@pytest.mark.parametrize("size", SIZES)
def test_the_modes_paragraphs_hold_for_every_length(size):
    cfg = get_config(size)
    one = page_text.why_decode_is_cheap(cfg, 1)  # the trial's "the last of these 2 tokens" on a 1-token text
    assert "these" not in one.split(" runs ")[0] and "this one has 1" in one and "1 earlier position," in one
    for n in (2, 3, 300, 1024):
        cheap, waits = page_text.why_decode_is_cheap(cfg, n), page_text.why_decode_waits_on_memory(cfg, n)
        assert f"the last of these **{n:,}** tokens" in cheap
        assert ("1 earlier position," in cheap) == (n == 2) and ("earlier positions," in cheap) == (n > 2)
        c = costs.decode_step_vs_full(cfg, n, component_tree(cfg).root.total)
        ratio = c["full"].value / c["decode"].value
        assert f"{ratio:,.1f} times as many" in cheap and f"{n - 1:,} read from the cache" in cheap
        read = c["weights"].value + c["cache"].value
        intensity = c["decode"].value / read
        assert f"about **{intensity:.2f} FLOPs per byte read**" in waits
        assert intensity < 10  # "a decode step is always far below" tens of operations per byte
        per_token = costs.kv_cache_bytes(cfg, 1, 1).value
        assert f"= **{per_token:,} bytes**" in waits and per_token == 2 * cfg.n_layer * cfg.n_embd * 4
        for full_context, L in ((False, n), (True, cfg.n_positions)):
            kv = costs.kv_cache_bytes(cfg, 1, L)
            line = page_text.kv_cache_line(kv.name, L, kv.calculation, kv.value, costs.human_bytes(kv.value),
                                           full_context)
            assert product(kv.calculation) == kv.value and f"(L = {L:,})" in line and f"**{kv.value:,} bytes**" in line


@pytest.mark.parametrize("size", SIZES)
def test_the_parameter_sentences_add_up(size):
    cfg = get_config(size)
    report = accounting_report(cfg)
    headline = page_text.params_headline(size, report["total"], list(cfg.variant()))
    formula = page_text.params_formula(report["formula"]["symbolic"], report["formula"]["calculation"],
                                       report["total"])
    assert f"{report['total']:,} parameters" in headline and formula.endswith(f"**{report['total']:,}**")
    for c in report["components"]:
        line = page_text.per_block_total(c["per_instance"], c["instances"], c["total"])
        if c["instances"] > 1:
            assert c["per_instance"] * c["instances"] == c["total"]
            assert line == (f"**{c['per_instance']:,}** per block × {c['instances']} blocks = **{c['total']:,}** "
                            "parameters")
        else:
            assert line == f"**{c['total']:,}** parameters"
    for matches in (True, False):
        line = page_text.checkpoint_line("model.safetensors", report["total"], report["total"] + (not matches), matches)
        assert ("does not match" in line) == (not matches)


def test_the_tours_tally_counts_what_the_stops_add():
    cat = component_tree(get_config("gpt2"))
    totals = {c.id: c.total for c in cat}
    for i, stop in enumerate(tour.TOUR):
        met, added = tour.tally(totals, i)
        if stop.part != tour.TOUR[0].part or not met:
            continue
        line = page_text.tally_line(met, cat.root.total, added, [cat[c].title.lower() for c in stop.adds],
                                    all(c.startswith("block.") for c in stop.adds))
        assert f"**{met:,}** of {cat.root.total:,} ({met / cat.root.total:.1%})" in line
        assert (f"{added:,} added here" in line) == bool(added)
        assert ("in every block" in line) == bool(stop.adds and all(c.startswith("block.") for c in stop.adds))
    assert met == cat.root.total  # the model's part of the tour meets every parameter


@pytest.mark.parametrize("n", COUNTS)
def test_the_refusals_count_in_good_grammar(n):
    for line in (page_text.cut_note("The text", 1024, n), page_text.cap_note("Head finder", 256, n + 256),
                 page_text.memory_cap_note("Training internals", n, n + 1),
                 page_text.sweep_refusal(64, n), page_text.paths_refusal(64, n),
                 page_text.run_too_large(n, "full", "900 MiB", "512 MiB", n, []),
                 page_text.endoftext_note("<|endoftext|>", "The text", 50256, n)):
        assert not re.search(r"\b1 tokens\b|\b1 are\b|\b(?:[02-9]|\d{2,}) token\b(?! \w*s\b)(?!')", line), line
    assert "1 token at the end is not shown" in page_text.cut_note("The text", 1024, 1)
    assert "(once)" in page_text.endoftext_note("<|endoftext|>", "The text", 50256, 1)
    assert f"({n} times)" in page_text.endoftext_note("<|endoftext|>", "The text", 50256, n) or n == 1
    assert page_text.checkpoint_too_large(32768, 768, "6,600 MiB", "2,048 MiB").startswith("a context of 32,768")
    assert page_text.link_bounds_note("n_layer", "999", 1, 48, 12).endswith("showing n_layer=12.")
    for P in (0, 1, 2, 1023):  # the trial's "1023 cached positions" beside "1,024" elsewhere
        assert f"(position {P:,}) reads all **L = P + 1 = {P + 1:,}** keys: {P:,} from" in page_text.decode_reads(P)
        assert page_text.decode_step_title(P).startswith(f"Decode step: {P:,} cached position{'' if P == 1 else 's'} +")
    assert page_text.tie_note(49_957, "`!`", 1e-4) == ("49,957 tokens tie for the top here, `!` first among them by "
                                                        "token id: their logits lie within 0.0001 of each other, so "
                                                        "which one leads is not the model's preference.")
    said = page_text.link_choice_note("part", "`'foo'`", "`head`")
    assert said == "The link asked for part=`'foo'`, which this page's control does not offer; showing part=`head`."


# texts a class types or pastes: English, Chinese, emoji (4 bytes), marks ASCII escapes, one character
# either side of the limit, and a text that fits
LINK_TEXTS = {"english": "The quick brown fox jumps over the lazy dog. " * 400, "chinese": "的" * 20_000,
              "emoji": "🙂 " * 5_000, "marks": "<b>&amp;</b>~'\"%+" * 1_500, "one over": "a" * (LINK_TEXT_CHARS + 1),
              "at the limit": "a" * LINK_TEXT_CHARS, "short": "Hello"}


@pytest.mark.parametrize("name", LINK_TEXTS)
def test_a_text_cut_for_a_link_is_the_longest_start_that_fits_and_says_so(name):
    """The sidebar cuts a text longer than a link carries to its longest start within LINK_TEXT_CHARS as the
    address writes it (urlencode's `+` and `%XX`, `~` and `*` as a browser writes them), and its note
    states the text's own numbers."""
    text = LINK_TEXTS[name]
    kept = link_prefix(text)
    assert text.startswith(kept) and link_length(kept) <= LINK_TEXT_CHARS
    # Python's form escaping keeps `~`, which a browser writes as %7E, and escapes `*`, which a browser keeps
    assert link_length(text) == len(quote_plus(text, safe="*")) + 2 * text.count("~")
    if link_length(text) <= LINK_TEXT_CHARS:
        assert kept == text
        return
    assert link_length(text[:len(kept) + 1]) > LINK_TEXT_CHARS  # the longest: one more character does not fit
    note = page_text.link_cut_note("The text", len(kept), len(text), link_length(text), LINK_TEXT_CHARS)
    assert note.startswith(f"The text was cut to its first {len(kept):,} of {len(text):,} characters: ")
    assert f"at most {LINK_TEXT_CHARS:,} characters" in note and f"this one took {link_length(text):,} " in note


def test_what_fits_lists_only_what_fits():
    none = page_text.run_too_large(5000, "training", "9 GiB", "2 GiB", None, [])
    assert none.endswith("What fits: another page.")
    both = page_text.run_too_large(5000, "training", "9 GiB", "2 GiB", 1200, ["full", "decode"])
    assert "a text of at most 1,200 tokens in training mode, the full or decode mode at this length, or another page." \
        in both
    assert "at most 1 token in" in page_text.run_too_large(5, "full", "9 GiB", "2 GiB", 1, [])


@pytest.mark.parametrize("still", [0.0, 3.1e-8, 0.02])
def test_the_mask_subtitle_says_what_moved(still):
    line = page_text.mask_subtitle(still)
    assert ("moved by 0" in line) == (still == 0)
    if still:
        assert f"at most {still:.2g}" in line


@pytest.mark.parametrize("weights,text", [("tiny", " Hello"), ("tiny", " people play one good game"),
                                          ("demo", " people play one good game after work people play one good game")])
def test_the_decode_check_agrees_only_below_its_bound(weights, text):
    if weights == "demo" and not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    model = load_safetensors(str(DEMO_PATH)).model if weights == "demo" else random_model(get_config("tiny"), seed=0)
    ids = encode(text)
    full, decode = (run(model, ids, m, names=["logits"])["logits"][0, -1] for m in (Mode.FULL, Mode.DECODE))
    diff = float((full - decode).abs().max())
    for d in (diff, 0.5):
        line = page_text.decode_check_sentence(len(ids), model.config.vocab_size, d, weights)
        assert ("agree" in line and "DISAGREE" not in line) == (d < page_text.AGREE), line
        assert f"**{d:.2e}**" in line
        cached = len(ids) - 1
        assert f"{cached:,} token{'s' * (cached != 1)} before it" in line
    for parts in (1, 2, 25):
        for error in (diff, 0.0, 1.5e-7):
            line = page_text.lens_residual_sentence(parts, error, len(ids) - 1)
            where = f"at position {len(ids) - 1:,}:"
            assert f"the {parts} part{'s' * (parts != 1)} minus the recorded stream {where}" in line
            assert ("exactly" in line) == (error == 0) and ("rounding" in line) == (error != 0), line


@pytest.mark.parametrize("model", ["gpt2", "distilgpt2", "tiny"])
def test_every_exercise_s_working_adds_up_and_its_grader_agrees(model):
    for component in ex.PARAM_COMPONENTS:
        e = ex.params_exercise(model, component)
        assert e.question == ex.params_question(model, component)
        assert ex.check(e, f"{e.answer[0]:,}") == (True, f"Correct: {e.answer[0]:,}.")
        ok, message = ex.check(e, str(e.answer[0] + 1))
        assert not ok and ex.hint(e, (e.answer[0] + 1,)) in message and f"{e.answer[0]:,}" not in message
        sums = re.findall(rf"Sum: ({NUMBER}(?: \+ {NUMBER})*) = ({NUMBER})", e.worked)
        for terms, total in sums:
            assert sum(int(t.replace(",", "")) for t in terms.split(" + ")) == int(total.replace(",", ""))
        wrong = ex.answer(e, ex.Attempt(), "1")
        assert not wrong.correct and (wrong.tries, wrong.closed) == (1, False)
        assert f"{e.answer[0]:,}" not in wrong.message  # a hint, never the answer, before the last try
        last = ex.answer(e, wrong, "2")  # the last try: where to look and to ask the lecturer, never the answer
        assert last.closed and f"{e.answer[0]:,}" not in last.message and "Ask your lecturer" in last.message
    cfg = PRESETS[model]
    for mode in Mode:
        for short in ex.SHAPE_NAMES:
            try:
                e = ex.shape_exercise(model, mode.value, short, T=3, P=2)
            except ValueError:
                continue  # not recorded in this mode
            assert f"d = {cfg.n_embd}" in e.question and f"[{', '.join(map(str, e.answer))}]" in e.worked
            assert ex.check(e, str(list(e.answer)))[0]


@pytest.fixture(scope="module")
def demo_lines():
    if not DEMO_PATH.is_file():
        pytest.skip("no demo model file")
    model = load_safetensors(str(DEMO_PATH)).model
    m = trained.measure(model, DEMO_REPEAT, DEMO_PAIR)
    return model, m, trained.lines(m)


def test_the_demo_lines_superlatives_are_computed(demo_lines):
    """"the largest drop of any head" and "the largest share" against the demo run itself."""
    model, m, lines = demo_lines
    kb, kh, kp = m.knocked
    assert f"knocking out block {kb} head {kh} (zeroed) moves it to {kp:.3f}, the largest drop of any head" \
        in lines["whatif"]
    name, value, logit = m.share
    from gpt2viz.analysis.attribution import attribute_text, component_names

    a = attribute_text(model, encode(DEMO_REPEAT.text))
    values = dict(zip(component_names(model.config), a.values.tolist()))
    assert value == pytest.approx(values[name]) and value == max(values.values())  # the largest, signed too
    assert f"{trained.part(name)} writes {value:.2f} directly, the largest share" in lines["attribution"]
    assert "each position" not in " ".join(lines.values())


def test_no_sentence_here_uses_a_float_where_a_count_belongs():
    cfg = get_config("gpt2")
    text = page_text.why_decode_is_cheap(cfg, 10) + page_text.why_decode_waits_on_memory(cfg, 10)
    assert not re.search(r"\d\.0 (?:tokens|positions|bytes)", text)
    assert torch.__version__  # the suite's torch, for the costs above


def test_a_live_checks_tries_hint_then_say_where_to_look_never_the_answer():
    """live_checks.attempt and nudge over every kind of check: the first wrong answer gets a hint that
    points the right way (fewer or more, lower or higher), the last where to look; no message quotes the
    answer, and a right answer closes the check with its working."""
    from gpt2viz.teaching.live_checks import Grade, LiveAttempt, LiveCheck, attempt, nudge

    def check(kind, answer, blocks=12):
        return LiveCheck(kind, "?", kind, answer, "the working", "type a number", top=12, blocks=blocks)

    cases = [(check("count", 7), "9", "fewer"), (check("count", 7), "3", "more"),
             (check("probability", 0.25), "0.5", "lower"), (check("probability", 0.25), "10%", "higher"),
             (check("block.head", (3, 4)), "3.1", "the block is right"),
             (check("block.head", (3, 4)), "2.4", "another block"),
             (check("block.head", (1, 4), blocks=2), "0.4", "ranks every head")]  # 2 blocks: "another" would tell
    for asked, given, way in cases:
        hint = nudge(asked, given)
        answer = asked.answer if asked.kind != "block.head" else "{}.{}".format(*asked.answer)
        assert way in hint and str(answer) not in hint
        first = attempt(asked, LiveAttempt(), Grade(False, "No, look again."), "the working", given)
        assert not first.closed and way in first.message and first.worked == ""
        last = attempt(asked, first, Grade(False, "No, look again."), "the working", given)
        assert last.closed and "Ask your lecturer" in last.message and last.worked == ""
        assert str(answer) not in first.message + last.message
        right = attempt(asked, LiveAttempt(), Grade(True, "Right."), "the working", str(answer))
        assert right.closed and right.ok and right.worked == "the working"
        assert attempt(asked, right, Grade(False, "No."), "", "x") == right  # a closed check changes nothing


def test_missing_weights_names_what_to_fetch_and_weights_name_names_them():
    from gpt2viz.teaching.lessons import missing_weights, weights_name

    assert missing_weights({"source": "random", "model": "gpt2", "seed": 0}) is None
    gone = missing_weights({"source": "hf-cache", "checkpoint": "gpt2-xl"}, env={"HF_HUB_CACHE": "/nonexistent"})
    assert gone == "the checkpoint gpt2-xl (`python -m gpt2viz download gpt2-xl` fetches it)"
    assert "gpt2-xl" in weights_name({"source": "hf-cache", "checkpoint": "gpt2-xl"})
    assert weights_name({"source": "demo"}).startswith("the demo model")


@pytest.mark.parametrize("size", SIZES)
def test_the_memory_note_says_what_the_run_left_out_and_why_for_every_length_and_mode(size):
    """A page whose run keeps part of its values says what it keeps and what everything would take:
    the figure is the catalogue's, "more than one view may keep" only where a trace of everything is
    over a view's share of a class server's budget, and the weights' gradients (as large as the
    weights, whatever the text) only in training, where they are what it leaves out. It never calls
    a text long: a 2-token text in training mode on gpt2 leaves the gradients out too."""
    from types import SimpleNamespace

    from gpt2viz.model.weights import meta_model
    from gpt2viz.server.trace_cache import TraceCache
    from gpt2viz.spec.costs import human_bytes
    from gpt2viz.ui.cache import (
        FULL_TRACE_SHARE,
        _tensor_bytes,
        every_block,
        full_trace_bytes,
        is_weight_grad,
        recorded_names,
    )

    cfg = get_config(size)
    weights = SimpleNamespace(model=SimpleNamespace(config=cfg))  # the catalogue reads the config alone
    cache, seen = TraceCache(2 * 2**30), set()  # a class server's default budget
    params = sum(p.numel() for p in meta_model(cfg).parameters())
    for mode in Mode:
        for n in COUNTS:
            if mode is Mode.TRAINING and n < 2 or n > cfg.n_positions:
                continue
            for needs in (("blocks.3.attn.pattern",), ("blocks.*.attn.pattern", "blocks.*.mlp.post"), ("logits",)):
                names = recorded_names(weights, n, mode, needs, cache)
                if names is None:
                    continue
                kept = "only" if names == needs else "every_block" if names == every_block(needs) else "but_gradients"
                full = full_trace_bytes(weights, n, mode)
                note = page_text.memory_note(kept, n, mode.value, human_bytes(full))
                seen.add(kept)
                assert "long" not in note and f"would take {human_bytes(full)}" in note
                if kept == "but_gradients":
                    assert mode is Mode.TRAINING and "gradients" in note
                    grads = sum(b for name, b in _tensor_bytes(weights, n, mode).items() if is_weight_grad(name))
                    assert grads == 4 * params  # the weights' size in float32, whatever n
                else:
                    assert "gradients" not in note and full * FULL_TRACE_SHARE > cache.budget  # "more than..."
                    assert f"{n:,} token{'s' * (n != 1)} would" in note
    assert seen <= {"only", "every_block", "but_gradients"} and (size == "tiny" or "but_gradients" in seen)


@pytest.mark.parametrize("size,ids", [("tiny", [464]), ("tiny", [464, 3290] * 16),
                                      ("gpt2", [464]), ("gpt2", [i * 7 % 50257 for i in range(1024)])])
def test_the_lens_check_says_rounding_only_where_it_is_and_exact_only_where_it_is(size, ids):
    """The Logit lens page's check under its chart, computed as the page does (one position, every depth)
    on random weights, a 1-token text, a period-2 repeat and 1,024 tokens: "exactly" only for a difference
    of 0, and "float32 rounding" only for one of rounding's size."""
    from gpt2viz.analysis.lens import decompose

    cfg = get_config(size)
    names = [f"blocks.*.{n}" for n in ("resid_pre", "attn.out", "mlp.out", "resid_post")]
    trace = run(random_model(cfg, 0), ids, Mode.FULL, names=names)
    for i in sorted({0, len(ids) // 2, len(ids) - 1}):
        for depth in range(cfg.n_layer + 1):
            d = decompose(trace, depth, positions=slice(i, i + 1))
            line = page_text.lens_residual_sentence(len(d.labels), d.max_abs_error, i)
            assert f"the {1 + 2 * depth} part{'s' * (depth > 0)} minus the recorded stream at position {i:,}:" in line
            assert ("exactly" in line) == (d.max_abs_error == 0), line
            assert d.max_abs_error == 0 or ("rounding" in line and d.max_abs_error < 1e-4), line


@pytest.mark.parametrize("size", SIZES)
def test_the_generation_room_sentence_counts_what_the_context_leaves(size):
    """The trial's full context: "room for 1 more token" beside a context already full."""
    from gpt2viz.model.modes import last_keys, room

    cfg = get_config(size)
    for n in (1, 2, cfg.n_positions - 1, cfg.n_positions):
        r = room(cfg.n_positions, n)
        line = page_text.generation_room(cfg.n_positions, n, r)
        assert last_keys(n, r) == cfg.n_positions  # the last step reads the whole context, no more
        assert f"this text takes {n:,}: {r:,} more {'token' if r == 1 else 'tokens'} can be generated" in line
        assert f"predicted by position {cfg.n_positions - 1:,}" in line
