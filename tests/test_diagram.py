"""The drawn diagrams: exact counts from the component tree, shapes of the mode, links that keep the view."""

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from gpt2viz.anatomy import diagram
from gpt2viz.anatomy.components import component_tree
from gpt2viz.anatomy.params import closed_form, closed_form_total
from gpt2viz.spec.schema import text_dims

PAGES = {"embed.tok": "tokens", "embed.pos": "tokens", "block": "block", "block.ln1": "layernorm",
         "block.ln2": "layernorm", "ln_f": "output", "block.attn": "attention", "block.attn.qkv": "attention",
         "block.attn.heads": "attention", "block.attn.merge": "merge", "block.mlp": "mlp", "block.mlp.fc": "mlp",
         "block.mlp.gelu": "mlp", "block.mlp.proj": "mlp", "unembed": "output", "dropout": "training"}
QUERY = {"text": "The cat sat & ran", "mode": "decode", "block": "3", "head": "5", "model": "gpt2"}


def values(model: str, mode: str, n: int = 10) -> dict:
    return text_dims(component_tree(model).config, n, mode)


def draw(kind: str, model="gpt2", mode="decode", current="block", **kw) -> str:
    links = diagram.Links(PAGES, {**QUERY, "mode": mode}, current=current)
    return getattr(diagram, kind)(component_tree(model), mode, values(model, mode), links, **kw)


def anchors(svg: str) -> list[tuple[str, str, bool, str]]:
    """(href, target, highlighted, text) of every link in the SVG."""
    out = []
    link = r'<a href="([^"]*)" target="_self" data-target="([^"]*)"( aria-current="page")? style="[^"]*">(.*?)</a>'
    for m in re.finditer(link, svg):
        body = re.sub(r"<title>.*?</title>", "", m.group(4))
        out.append((unescape(m.group(1)), m.group(2), bool(m.group(3)), unescape(re.sub(r"<[^>]+>", " ", body))))
    return out


def test_gpt2_counts_come_from_the_accounting():
    cf = closed_form(component_tree("gpt2").config)
    block_svg, attn_svg, mlp_svg = draw("block"), draw("attention"), draw("mlp")
    assert "7,087,872 parameters; × 12 = 85,054,464" in block_svg  # 12 d² + 13 d per block
    assert "2,362,368 parameters · Open" in block_svg and "4,722,432 parameters · Open" in block_svg
    assert f"{cf['block.attn.qkv']:,} parameters" in attn_svg and "1,771,776 parameters" in attn_svg
    assert "590,592 parameters" in attn_svg and "attention: 2,362,368 parameters per block" in attn_svg
    assert "2,362,368 parameters" in mlp_svg and "2,360,064 parameters" in mlp_svg and "4,722,432" in mlp_svg
    over = draw("overview")
    assert f"{closed_form_total(component_tree('gpt2').config):,} parameters in all" in over  # 124,439,808
    assert "38,597,376 parameters" in over and "786,432 parameters" in over and "1,536 parameters" in over


@pytest.mark.parametrize("model", ["gpt2-medium", "gpt2-xl", "tiny"])
def test_counts_follow_the_config(model):
    cat = component_tree(model)
    block = cat["block"]
    assert f"{block.per_instance:,} parameters; × {cat.config.n_layer} = {block.total:,}" in draw("block", model)
    assert f"{cat.root.total:,} parameters in all" in draw("overview", model)


def test_decode_shows_one_position_and_the_cache():
    svg = draw("block", mode="decode")
    assert "[1, 1, 768]" in svg and "[1, 10, 768]" not in svg
    assert "[1, 12, 10, 64] each" in svg and "P = 9 cached" in svg and "L = P + 1 = 10" in svg
    over = draw("overview", mode="decode")
    assert "[1, 1, 50,257]" in over and "[1, 12, 10, 64] × 2" in over
    full = draw("block", mode="full")
    assert "[1, 10, 768]" in full and "KV cache" not in full
    assert "[1, 1, 50,257]" in draw("overview", mode="prefill")  # prefill keeps the last position's logits


@pytest.mark.parametrize("kind", ["overview", "block", "attention", "mlp"])
def test_every_box_links_to_its_page_with_the_view(kind):
    links = anchors(draw(kind))
    assert len(links) >= 3
    for href, target, _, _ in links:
        url = urlsplit(href)
        assert url.path == "/" + PAGES[target]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert {k: v for k, v in query.items() if k != "head"} == {k: v for k, v in QUERY.items() if k != "head"}


@pytest.mark.parametrize("current", ["block", "attention", "mlp", "layernorm", "output", "tokens"])
def test_the_current_page_is_highlighted(current):
    for kind in ("overview", "block"):
        links = anchors(draw(kind, current=current))
        lit = {target for _, target, on, _ in links if on}
        assert lit == {t for _, t, _, _ in links if PAGES[t] == current}


def test_attention_draws_every_head_and_lights_the_chosen_one():
    links = [a for a in anchors(draw("attention", current="merge", head=5)) if a[1] == "block.attn.heads"]
    assert [text.strip() for *_, text in links] == [f"h{h}" for h in range(12)]
    assert [on for _, _, on, _ in links] == [h == 5 for h in range(12)]
    assert all(parse_qs(urlsplit(href).query)["head"] == [text.strip()[1:]] for href, _, _, text in links)
    xl = [a for a in anchors(draw("attention", "gpt2-xl")) if a[1] == "block.attn.heads"]
    assert len(xl) == diagram.MAX_HEADS - 1 and xl[-1][3].strip() == "h24"  # 25 heads: the first 13, …, the last 2


def test_svg_is_one_line_scaled_to_its_container():
    for kind in ("overview", "block", "attention", "mlp"):
        svg = draw(kind)
        assert "\n" not in svg and 'width="100%"' in svg and svg.startswith("<svg") and svg.endswith("</svg>")


def test_merge_draws_the_decode_story_in_order():
    """The Merge page draws H [1, 12, 1, 64] → transpose → [1, 1, 12, 64] → reshape →
    [1, 1, 768] → W_O (590,592) → Δattn; merging is a transpose then a reshape, labelled so."""
    svg = unescape(draw("merge", current="merge"))
    story = ["H = z", "[1, 12, 1, 64]", "Transpose heads and positions", "[B, nh, T, dh] → [B, T, nh, dh]",
             "[1, 1, 12, 64]", "Reshape", "[B, T, nh, dh] → [B, T, nh · dh = d]", "merge(H)", "[1, 1, 768]",
             "Output projection W_O", "590,592 parameters", "Δattn"]
    at = [svg.find(s) for s in story]
    assert -1 not in at and at == sorted(at), dict(zip(story, at))
    assert 'aria-label="gpt2 merge and project"' in svg
    assert all(target == "block.attn.merge" and lit for _, target, lit, _ in anchors(draw("merge", current="merge")))
    full = unescape(draw("merge", mode="full", current="merge"))
    assert "[1, 12, 10, 64]" in full and "[1, 10, 12, 64]" in full and "[1, 10, 768]" in full


def test_attention_drawing_says_merging_transposes_first():
    svg = unescape(draw("attention"))
    assert "transpose to [B, T, nh, dh], then reshape" in svg and "(a reshape)" not in svg


@pytest.mark.parametrize("kind", ["block", "attention", "overview"])
def test_no_boxs_line_can_run_past_its_edge_in_a_wide_fallback_font(kind):
    """In the handout, opened without Source Sans, "Query, key and value projection W_QKV" touched its box's
    edge: a line that a wide fallback font (DejaVu Sans bold) would push past the box is told its length."""
    svg = draw(kind)
    boxes = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*/>((?:<text [^>]*>[^<]*</text>)+)', svg)
    assert boxes
    for _, width, texts in boxes:
        for attrs, line in re.findall(r"<text ([^>]*)>([^<]*)</text>", texts):
            room = float(width) - 2 * diagram.BOX_PAD
            fitted = re.search(r'textLength="([\d.]+)"', attrs)
            if len(unescape(line)) * diagram.FONT * diagram.FALLBACK_EM > room:
                assert fitted and float(fitted.group(1)) <= room, (line, width)
    assert kind != "attention" or 'textLength="344"' in svg  # the projection's long name, in its 360 px box
