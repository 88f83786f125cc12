"""The words the pages say: facts checked against the code that computes them, one symbol per
meaning, every term in the glossary, and no developer words in what a student reads."""

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gpt2viz.anatomy import diagram
from gpt2viz.anatomy.components import PREFILL_LOGITS, component_tree
from gpt2viz.spec import glossary
from gpt2viz.spec.schema import DERIVED, VIEWS, text_dims
from gpt2viz.teaching import exercises, tour

ROOT = Path(__file__).resolve().parents[1]
CAT = component_tree("gpt2")
DEV_WORDS = re.compile(r"\b(catalogue|catalog|traces?|recording|derived)\b", re.IGNORECASE)


def texts(c) -> str:
    return f"{c.description}\n{c.explanation}\n{c.weights_note or ''}"


def draw(kind: str, mode: str = "training") -> str:
    links = diagram.Links({**{c.id: "x" for c in CAT}, "dropout": "training"}, {})
    return diagram.__dict__[kind](CAT, mode, text_dims(CAT.config, 10, mode), links)


def svg_text(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


# ---------------------------------------------------------------------------- facts
def test_l_is_the_keys_of_the_step_and_query_i_reads_the_first_p_plus_i_plus_1():
    (row,) = [m for s, _, m in glossary.SYMBOLS if s == "L"]
    assert "P + i + 1" in row and "only the last query reads all L" in row and "may attend" not in row
    heads = CAT["block.attn.heads"]
    assert "P + i + 1" in heads.explanation and "L − T + i" not in heads.explanation
    assert "j > P + i" in heads.equation


def test_merging_is_a_transpose_then_a_reshape_and_splitting_a_view_then_a_transpose():
    merge = CAT["block.attn.merge"].explanation
    assert re.search(r"transpose.*\[B, T, nh, dh\].*reshape", merge) and "mix positions" in merge
    split = CAT["block.attn.qkv"].explanation
    assert re.search(r"viewed as \[B, T, nh, dh\].*transposed to \[B, nh, T, dh\]", split)
    boxes = " ".join(svg_text(draw("attention")))
    assert "transpose to [B, T, nh, dh], then reshape" in boxes and "(a reshape)" not in boxes


def test_the_literal_reshape_the_texts_warn_about_does_mix_positions():
    torch = pytest.importorskip("torch")
    z = torch.arange(2 * 3 * 4).reshape(1, 2, 3, 4)  # [B, nh, T, dh]: z[0, h, t] holds t's values
    merged = z.transpose(1, 2).reshape(1, 3, 8)  # [B, T, d]
    wrong = z.reshape(1, 3, 8)
    assert torch.equal(merged[0, 1], torch.cat([z[0, 0, 1], z[0, 1, 1]]))  # position 1: both heads' row 1
    assert not torch.equal(wrong[0, 1], merged[0, 1])


def test_position_embeddings_are_explained_by_q_dot_k_not_by_an_order_blind_attention():
    pos = CAT["embed.pos"].explanation
    assert "q·k" in pos and "causal mask" in pos and "ignores order" not in pos


def test_gelu_text_gives_the_curve_its_minimum():
    torch = pytest.importorskip("torch")
    from gpt2viz.model.gpt2 import gelu_new

    a = torch.linspace(-4, 1, 500_001)
    g = gelu_new(a)
    low, at = f"{g.min().item():.2f}".replace("-", "−"), f"{a[g.argmin()].item():.2f}".replace("-", "−")
    assert (low, at) == ("−0.17", "−0.75")
    for text in (glossary.entry("GELU").text, CAT["block.mlp.gelu"].explanation):
        assert low in text and at in text and "close to 0 for negative" not in text


def test_logits_come_from_z_f():
    unembed = CAT["unembed"]
    assert "Z_f" in unembed.description and "final stream" not in unembed.description
    assert "Z_f" in glossary.entry("tied embeddings").text and "Z_f" in glossary.entry("logit").text
    assert "final stream" not in glossary.entry("tied embeddings").text


def test_prefill_logits_convention_is_said_in_the_question_the_answer_and_the_component():
    e = exercises.shape_exercise("gpt2", "prefill", "logits", T=5)
    assert e.answer == (1, 1, 50257) and "last position only" in e.question
    assert "[B, T, V]" in e.worked and "generation" in e.worked
    assert "[B, 1, V]" in PREFILL_LOGITS and "[B, T, V]" in PREFILL_LOGITS and "generate" in PREFILL_LOGITS
    assert PREFILL_LOGITS in CAT["unembed"].explanation
    assert PREFILL_LOGITS in component_tree(replace(CAT.config, tied=False))["unembed"].explanation


def test_handout_and_page_state_the_conventions_and_the_sizes():
    sheet = exercises.handout(exercises.exercise_set(3, 4), answers=False)
    assert "[T, d]" in sheet and "[1, T, d]" in sheet and "[B, T, d]" in sheet and "[B, 1, V]" in sheet
    page = (ROOT / "views/exercises.py").read_text()
    assert "every size" not in page and "ex.MODELS" in page and "ex.CONVENTIONS" in page
    drawn = {e.id.split(":")[1] for e in exercises.exercise_set(0, 20)}
    assert drawn <= set(exercises.MODELS)


def test_accounting_doc_says_what_a_trace_holds():
    doc = (ROOT / "docs/accounting.md").read_text()
    bullet = doc[doc.index("- A recorded trace"):doc.index("- Forward FLOPs")]
    assert "counted separately" not in bullet and "each storage once" in bullet
    for name in {n.split(".")[-1] for n in DERIVED | VIEWS}:
        assert name in bullet, name


def test_smaller_corrections():
    block = CAT["block"].description
    assert "identical" not in block and "its own weights" in block
    proj = CAT["block.mlp.proj"].explanation
    assert "paper" in proj and "transformers" in proj and "0.01 for wpe" in proj
    readme = (ROOT / "README.md").read_text()
    assert "GPT-2's own initialisation" not in readme and "transformers' GPT-2" in readme
    assert "uniformly, not from the Markov chain" in (ROOT / "docs" / "demo-model.md").read_text()
    assert "published with transformers" in glossary.entry("dropout").text
    for eq in (CAT["block.mlp"].equation, CAT["block.mlp.gelu"].equation):
        assert "A = " in eq or "G = " in eq  # A and G are defined where they are used
    assert {"A", "G", "Z_f", "W_U"} <= {s for s, _, _ in glossary.SYMBOLS}


def test_modes_text_counts_every_key_of_the_full_pass():
    from gpt2viz.spec.config import get_config
    from gpt2viz.teaching.page_text import why_decode_is_cheap

    said = why_decode_is_cheap(get_config("gpt2"), 10)
    assert "up to" not in said and "10 keys each" in said and "masks" in said


def test_diagrams_label_the_updates_after_their_dropout_and_show_all_four_dropouts():
    for kind, delta in (("block", "Δattn"), ("block", "Δmlp"), ("attention", "Δattn"), ("mlp", "Δmlp")):
        svg = draw(kind)
        label = svg.index(f">{delta}</text>")
        drop = svg.rfind('data-target="dropout"', 0, label)
        assert drop != -1 and svg.count('data-target="dropout"', drop, label) == 1, (kind, delta)
        assert svg.find("<rect", drop, label) != -1  # the dropout box lies between the sublayer and its Δ
    assert 'data-target="dropout"' in draw("overview")  # the embeddings' dropout
    assert any("dropout" in t and "pattern" in t for t in svg_text(draw("attention")))  # said, not a box


# ---------------------------------------------------------------------------- symbols
def test_v_alone_is_the_vocabulary_and_values_are_v_h():
    for c in CAT:
        for m in re.finditer(r"\bV\b(?!_)", c.equation):
            around = c.equation[max(0, m.start() - 9):m.end() + 8]
            assert re.search(r"\{V \\times|\\times V\}|\{V\}", around), (c.id, around)
        for m in re.finditer(r"\bV\b(?!_)", texts(c)):  # a count of tokens or an axis, never values
            before, after = texts(c)[m.start() - 1], texts(c)[m.end():m.end() + 8]
            assert before == "[" or re.match(r" \[?logits| ×|\]", after), (c.id, after)
    assert [m for s, _, m in glossary.SYMBOLS if s == "V"] == [m for s, n, m in glossary.SYMBOLS if n == "vocabulary"]
    assert "Q_h, K_h, V_h" in {s for s, _, _ in glossary.SYMBOLS}


def test_the_block_index_is_n():
    lens = (ROOT / "views/lens.py").read_text()
    assert "x_n = x_0" in lens and "x_b" not in lens
    assert ("n", "block index") in {(s, n) for s, n, _ in glossary.SYMBOLS}
    assert all(not re.search(r"\bblocks?\.?b\b|\bx_b\b", texts(c)) for c in CAT)


def test_w_u_has_one_layout():
    assert "lm_head.weight [V, d]" in CAT["unembed"].explanation
    untied = component_tree(replace(CAT.config, tied=False))["unembed"]
    assert untied.rows[0].name.startswith("lm_head.weight [V, d], W_U's transpose")
    assert "W_U [V, d]" not in untied.explanation + untied.rows[0].name
    assert "d \\times V" in CAT["unembed"].equation


# ---------------------------------------------------------------------------- the glossary
REQUIRED = ("logit", "softmax", "unembedding", "pre-LN", "residual stream", "head", "query", "key", "value",
            "attention sink", "previous-token head", "induction head", "knock-out", "ablation",
            "activation patching", "restored fraction", "perplexity")


@pytest.mark.parametrize("term", REQUIRED)
def test_the_glossary_explains_every_term_the_pages_use(term):
    e = glossary.entry(term)
    assert len(e.text) > 60 and e.page


def test_glossary_anchors_are_unique_and_component_links_resolve():
    keys = [e.key for e in glossary.ENTRIES]
    assert len(keys) == len(set(keys)) and glossary.entry("Knock-out (ablation)").key == "knock-out-ablation"
    linked = [k for c in CAT for k in glossary.linked_keys(texts(c))]
    toured = [k for _, t, *_ in tour.TOUR for k in glossary.linked_keys(t)]
    assert set(linked) | set(toured) <= set(keys) and {"kv-cache", "prefill", "decode"} <= set(toured)
    assert {"logit", "pre-ln", "residual-stream", "head", "query-key-value", "gelu", "causal-mask"} <= set(linked)
    with pytest.raises(KeyError):
        glossary.link("no such term")


def test_aliases_name_the_other_libraries_and_their_layouts():
    rows = {there: (here, diff) for _, there, here, diff in glossary.ALIASES}
    assert rows["C (n_embd)"][0] == "d" and "lm_head.weight" in rows
    assert "d_model, n_heads, d_head" in rows and "d_mlp, d_vocab, n_ctx" in rows
    assert "[batch, pos, head, d_head]" in rows["blocks.{n}.attn.hook_z"][1]
    assert "−inf" in rows["blocks.{n}.attn.hook_attn_scores"][1]


# Bold that marks emphasis or a widget's label, not a term
EMPHASIS = {"one thing", "one query", "next", "last", "back", "demo", "mode", "measured here", "they agree",
            "they differ", "through later parts", "direct effect", "claim"}  # the last: said within its entry's text
# words the pages use as terms without marking them
TERM_WORDS = ("neuron", "entropy", "nats", "logit difference", "margin", "pre-activation")
# symbols the notices and worked examples print
SYMBOLS_USED = ("Z₁", "Z₂", "Z_f", "Δattn", "Δmlp", "W_Eᵀ", "ε", "σ²", "μ", "dh", "nh", "‖z‖", "p_attn")


def page_texts() -> str:
    """What a student can read: the pages' and the teaching layer's shown strings, the components,
    the tour and the lessons."""
    paths = [*(ROOT / "views").glob("*.py"), *(ROOT / "gpt2viz" / "ui").glob("*.py"),
             *(ROOT / "gpt2viz" / "teaching").glob("*.py"), ROOT / "gpt2viz" / "analysis" / "experiments.py",
             ROOT / "gpt2viz" / "analysis" / "heads.py"]
    said = [s for p in paths for _, s in shown_strings(p)] + [texts(c) for c in CAT]
    said += [t for _, t, *_ in tour.TOUR] + [p.read_text() for p in (ROOT / "lessons").glob("*.json")]
    return "\n".join(said)


def test_every_term_the_pages_mark_has_a_glossary_entry():
    """Bold lowercase phrases (a term as it is introduced), the words used as terms, glossary links and
    the symbols the notices print: each has an entry or a symbol row."""
    said = page_texts()
    marked = {m.lower() for m in re.findall(r"\*\*([A-Za-z][A-Za-z-]*(?: [a-z-]+){0,2})\*\*", said)} - EMPHASIS
    assert {"query", "temperature", "decode"} <= marked  # the collection finds what the pages mark
    used = {w for w in TERM_WORDS if re.search(rf"\b{w}", said, re.IGNORECASE)}
    assert {"neuron", "entropy"} <= used
    missing = []
    for term in sorted(marked | used):
        try:
            glossary.entry(term)
        except KeyError:
            missing.append(term)
    assert not missing
    assert set(glossary.linked_keys(said)) <= {e.key for e in glossary.ENTRIES}
    rows = " ".join(f"{s} {n} {m}" for s, n, m in glossary.SYMBOLS)
    assert not [sym for sym in SYMBOLS_USED if sym in said and sym not in rows]


# ---------------------------------------------------------------------------- developer words
def shown_strings(path: Path) -> list[tuple[int, str]]:
    """String literals of a page script that a student can read: not docstrings, not comments, not
    identifiers or names (a string with no space)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs and " " in n.value]


@pytest.mark.parametrize("path", sorted([*(ROOT / "views").glob("*.py"), *(ROOT / "gpt2viz" / "ui").glob("*.py"),
                                         ROOT / "gpt2viz" / "teaching" / "notices.py"]), ids=lambda p: p.name)
def test_pages_say_no_developer_words(path):
    found = [(line, s[:80]) for line, s in shown_strings(path) if DEV_WORDS.search(s)]
    assert not found


def test_texts_say_no_developer_words():
    said = [texts(c) for c in CAT] + [t for _, t, *_ in tour.TOUR]
    said += [f"{n} {m}" for _, n, m in glossary.SYMBOLS] + [e.text for e in glossary.ENTRIES]
    said += [f"{e.question} {e.worked}" for e in exercises.exercise_set(1, 20)]
    said += [exercises.handout(exercises.exercise_set(2, 6))]
    said += [" ".join(svg_text(draw(k, m))) for k in ("overview", "block", "attention", "mlp")
             for m in ("full", "decode")]
    assert not [s[:80] for s in said if DEV_WORDS.search(s)]


def test_the_readme_counts_the_lessons_it_ships():
    """The README said `lessons/` "ships five" when there were six (a trial)."""
    words = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    n = len(list((ROOT / "lessons").glob("*.json")))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"`lessons/` ships {words.get(n, n)}," in readme, n
