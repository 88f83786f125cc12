"""The model drawn as SVG: the overview, the Transformer block, and small diagrams of attention and
the MLP. Pure: a component tree, a mode, the run's dims (B, T, P, L) and where each box links in, an SVG
string out (no Streamlit).

Every box shows its symbol and its exact parameter count from the component tree's accounting rows; every
edge shows the schema's symbolic shape of the tensor it carries, evaluated with the run's dims (so
decode shows T = 1 and the KV cache [B, nh, L, dh]). Each box is a link to the page that shows it,
carrying the view's query string, and the boxes of the current page are highlighted.

The SVG scales to its container's width (viewBox, width 100%) and draws text and lines in
`currentColor`, so it reads on a light and a dark theme alike.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from urllib.parse import quote, urlencode

from ..spec.schema import CACHED_MODES, Mode, concrete, short_axes
from .components import ComponentTree

FONT, SMALL = 16, 14  # px in viewBox units: large enough to read when a narrow column shrinks the drawing
ACCENT = "#1c83e1"
BOX_FILL = "rgba(128, 128, 128, 0.10)"
HIGHLIGHT_FILL = "rgba(28, 131, 225, 0.22)"


# ---------------------------------------------------------------------------- links
def page_href(url: str, query: Mapping[str, object], default: str = "overview") -> str:
    """`/attention?text=A%20cat&mode=decode`: a page (the default one is served at `/`) and a view."""
    encoded = urlencode({k: str(v) for k, v in query.items()}, quote_via=quote)
    return ("/" if url == default else "/" + url) + ("?" + encoded if encoded else "")


@dataclass(frozen=True)
class Links:
    """Where boxes link: the page of each target (component ids, or `dropout`), the view's query
    parameters (carried by every link) and the current page (its boxes are highlighted)."""
    pages: Mapping[str, str]  # target -> url path of its page ("overview" is served at "/")
    query: Mapping[str, str] = field(default_factory=dict)
    current: str = ""
    default: str = "overview"
    selects: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # target -> the query values
    # that select it on its page (LayerNorm 2 on the LayerNorm page: {"ln": "ln_2"})

    def page(self, target: str) -> str:
        return self.pages[target]

    def href(self, target: str, **override) -> str:
        """The page's address with the view's query string (`override` replaces some values)."""
        return page_href(self.page(target), {**self.query, **self.selects.get(target, {}), **override}, self.default)

    def is_current(self, target: str) -> bool:
        return self.page(target) == self.current


# ---------------------------------------------------------------------------- drawing primitives
def _text(x, y, s: str, size: int = FONT, anchor: str = "middle", weight: str = "normal", opacity: float = 1.0) -> str:
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="currentColor" fill-opacity="{opacity}">{escape(s)}</text>')


# a bold character of a fallback sans (DejaVu Sans, wider than Source Sans), in font sizes: a handout opened
# offline has no Source Sans, and a box's longest line touched its edge
FALLBACK_EM = 0.66
BOX_PAD = 8  # px in viewBox units kept free inside a box's edge


def _fitted(text: str, s: str, room: float) -> str:
    """A box's <text> that a wide fallback font would push past `room` (viewBox px), told to fit it
    (`textLength`): never wider than its box, in any font."""
    if len(s) * FONT * FALLBACK_EM <= room:
        return text
    return text.replace("<text ", f'<text textLength="{room:g}" lengthAdjust="spacingAndGlyphs" ', 1)


def _line(x1, y1, x2, y2, arrow: bool = True) -> str:
    head = ' marker-end="url(#gpt2viz-arrow)"' if arrow else ""
    return f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor" stroke-width="1.5"{head}/>'


def _path(d: str, arrow: bool = True) -> str:
    head = ' marker-end="url(#gpt2viz-arrow)"' if arrow else ""
    return f'<path d="{d}" fill="none" stroke="currentColor" stroke-width="1.5"{head}/>'


def _vertical_text(x, y, s: str, size: int = SMALL) -> str:
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="middle" fill="currentColor" fill-opacity="0.85" '
            f'transform="rotate(-90 {x} {y})">{escape(s)}</text>')


def _plus(x, y, r: int = 12) -> str:
    return (f'<circle cx="{x}" cy="{y}" r="{r}" fill="none" stroke="currentColor" stroke-width="1.5"/>'
            + _line(x - r + 4, y, x + r - 4, y, arrow=False) + _line(x, y - r + 4, x, y + r - 4, arrow=False))


@dataclass(frozen=True)
class Box:
    """A rectangle with up to three centred lines: title, detail, parameter count."""
    target: str  # what it links to (a key of Links.pages)
    lines: tuple[str, ...]
    x: float
    y: float
    w: float
    h: float
    override: tuple[tuple[str, str], ...] = ()  # query values this link sets (a head's box sets head)
    lit: bool | None = None  # None: lit when its page is the current one; else as given (the chosen head)

    def svg(self, links: Links) -> str:
        lit = links.is_current(self.target) if self.lit is None else self.lit
        fill, stroke, width = (HIGHLIGHT_FILL, ACCENT, 3) if lit else (BOX_FILL, "currentColor", 1.2)
        step = FONT + 3
        top = self.y + self.h / 2 - step * (len(self.lines) - 1) / 2 + FONT / 3
        body = "".join(_fitted(_text(self.x + self.w / 2, round(top + i * step, 1), s,
                                     weight="bold" if i == 0 else "normal", opacity=1.0 if i == 0 else 0.85),
                               s, self.w - 2 * BOX_PAD)
                       for i, s in enumerate(self.lines))
        rect = (f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" rx="8" fill="{fill}" '
                f'stroke="{stroke}" stroke-width="{width}"/>')
        current = ' aria-current="page"' if lit else ""
        href = escape(links.href(self.target, **dict(self.override)))
        return (f'<a href="{href}" target="_self" data-target="{escape(self.target)}"{current} '
                f'style="color: inherit; text-decoration: none">'
                f'<title>{escape(" · ".join(self.lines))}: open its page</title>{rect}{body}</a>')


def _svg(width: int, height: int, label: str, parts: list[str]) -> str:
    """One line (Markdown ends an HTML block at a blank line), scaled to the container's width. A figure,
    not an image: its boxes are links, and an image's parts are not for a keyboard or a screen reader."""
    marker = ('<defs><marker id="gpt2viz-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
              'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/>'
              '</marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width: {width}px; display: block; margin: 0 auto; font-family: inherit" role="figure" '
            f'aria-label="{escape(label)}">{marker}{"".join(parts)}</svg>')


def scroll_box(svg: str) -> str:
    """A drawing as a page shows it: on a phone it keeps the width of a page's column, 40rem at most, and scrolls
    sideways in its own box (shrunk to the phone's 358 px, its labels were 5 px tall); wider, it is as before."""
    return f'<div style="overflow-x: auto"><div style="min-width: min({WIDTH}px, 40rem)">{svg}</div></div>'


# ---------------------------------------------------------------------------- shapes and counts
def shape(short: str, mode: Mode | str, values: Mapping[str, int]) -> str:
    """The schema's symbolic shape of a recorded name, evaluated with the run's dims: "[1, 10, 768]"."""
    return "[" + ", ".join(f"{v:,}" for v in concrete(short_axes(short, mode), values)) + "]"


def params(n: int) -> str:
    return f"{n:,} parameters" if n else "0 parameters (owns no weights)"


def _edge_label(x, y, symbol: str, text: str) -> str:
    return _text(x, y, symbol, anchor="start", weight="bold") + _text(x + 8 + 10 * len(symbol), y, text, anchor="start",
                                                                     opacity=0.85)


def _mode_note(mode: Mode, values: Mapping[str, int]) -> str:
    if mode is Mode.DECODE:
        return f"decode: T = 1 new position after P = {values['P']:,} cached, reading L = P + 1 = {values['L']:,} keys"
    if mode is Mode.PREFILL:
        return f"prefill: T = {values['T']:,} positions into an empty cache (P = 0); logits for the last one only"
    if mode is Mode.TRAINING:
        return f"training: T = {values['T']:,} positions, dropout on, each position predicts the next"
    return f"full sequence: T = {values['T']:,} positions, no cache"




class _Column:
    """A top-to-bottom chain down the middle of a drawing: boxes joined by arrows that carry a
    tensor's symbol and shape. `y` is where the next piece goes."""

    def __init__(self, cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links,
                 x: float, w: float):
        self.cat, self.mode, self.values, self.links = cat, Mode.parse(mode), values, links
        self.x, self.w, self.mid = x, w, x + w / 2
        self.y = 40
        self.parts = [_text(WIDTH / 2, 20, _mode_note(self.mode, values), size=SMALL, opacity=0.8)]

    def shape(self, short: str) -> str:
        return shape(short, self.mode, self.values)

    def box(self, target: str, lines: tuple[str, ...], h: int = 66, inset: float = 0, **kw) -> None:
        self.parts.append(Box(target, lines, self.x + inset, self.y, self.w - 2 * inset, h, **kw).svg(self.links))
        self.y += h

    def edge(self, symbol: str, short: str, note: str = "", length: int = 30) -> None:
        self.parts += [_line(self.mid, self.y, self.mid, self.y + length),
                       _edge_label(self.mid + 12, self.y + length * 2 / 3, symbol, self.shape(short) + note)]
        self.y += length

    def edge_text(self, symbol: str, text: str, length: int = 30) -> None:
        """An edge labelled with `text` for a tensor the run does not record (a view on the way)."""
        self.parts += [_line(self.mid, self.y, self.mid, self.y + length),
                       _edge_label(self.mid + 12, self.y + length * 2 / 3, symbol, text)]
        self.y += length

    def entry(self, symbol: str, short: str) -> None:
        """The tensor the drawing starts from, with a short arrow into the first box."""
        self.parts += [_edge_label(self.mid + 12, self.y + 6, symbol, self.shape(short)),
                       _line(self.mid, self.y - 6, self.mid, self.y + 16)]
        self.y += 18

    def dropout(self, which: str) -> None:
        """The dropout box on the column: active in training only, with the config's p."""
        self.box("dropout", ("Dropout", f"{which} = {self.cat.config.dropout:g}, in training only"), h=50, inset=30)

    def side_note(self, y: float, title: str, *lines: str, dx: float = 14) -> None:
        """Bold title and lines to the right of the column (the KV cache beside what reads it)."""
        x = self.x + self.w + dx
        self.parts.append(_text(x, y, title, size=SMALL, anchor="start", weight="bold"))
        self.parts += [_text(x, y + 19 * (i + 1), s, size=SMALL, anchor="start", opacity=0.85)
                       for i, s in enumerate(lines)]

    def close(self, summary: str, label: str) -> str:
        self.y += 20
        self.parts.append(_text(WIDTH / 2, self.y, summary, weight="bold"))
        return _svg(WIDTH, self.y + 12, f"{self.cat.config.name} {label}", self.parts)


WIDTH = 760  # every diagram's viewBox width


# ---------------------------------------------------------------------------- the model
def overview(cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links) -> str:
    """Embeddings (wte + wpe) -> n_layer x block -> ln_f -> tied unembedding, top to bottom."""
    cfg, block = cat.config, cat["block"]
    col = _Column(cat, mode, values, links, x=210, w=340)
    col.parts.append(_edge_label(120, col.y + 14, "ids", _ids(values)))
    col.y += 24
    for target, lines, x in (("embed.tok", ("Token embedding W_E", "wte [V, d]"), 120),
                             ("embed.pos", ("Position embedding W_P", "wpe [n_ctx, d]"), 410)):
        col.parts.append(Box(target, (*lines, params(cat[target].total)), x, col.y, 230, 70).svg(links))
        foot, short = x + 115, target
        col.parts += [_path(f"M {foot} {col.y + 70} L {foot} {col.y + 92} L {col.mid + (14 if x > 200 else -14)} "
                            f"{col.y + 104}"),
                      _text(foot + 8, col.y + 88, col.shape(short), size=SMALL, anchor="start", opacity=0.85)]
    col.y += 70
    col.parts.append(_plus(col.mid, col.y + 46))
    col.y += 58
    col.parts.append(_line(col.mid, col.y, col.mid, col.y + 18))
    col.y += 18
    col.dropout("p_embd")
    col.edge("x₀", "resid_pre", length=34)
    col.box("block", (f"{block.instances} × Transformer block", "LN₁ → attention → + → LN₂ → MLP → +",
                      f"{block.per_instance:,} parameters each = {block.total:,}"), h=74)
    if col.mode in CACHED_MODES:
        col.side_note(col.y - 44, "KV cache", col.shape("attn.k_cache") + " × 2", f"in each of {cfg.n_layer} blocks")
    col.edge(f"x{_sub(cfg.n_layer)}", "resid_post", length=34)
    col.box("ln_f", ("Final LayerNorm LN_f", "μ, σ², gain g_f" + (" · bias b_f" if cat.config.bias else ""),
                     params(cat["ln_f"].total)), h=70)
    col.edge("Z_f", "ln_f.out", length=34)
    col.box("unembed", ("Unembedding W_U = W_Eᵀ (tied)", "reuses wte's weights", params(cat["unembed"].total)), h=70)
    col.edge("logits", "logits", length=34)
    return col.close(f"{cfg.name}: {cat.root.total:,} parameters in all", "overview")


def _ids(values: Mapping[str, int]) -> str:
    return "[" + ", ".join(f"{v:,}" for v in concrete(("B", "T"), values)) + "]"


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


# ---------------------------------------------------------------------------- the block
HALVES = (  # LayerNorm, its output, the sublayer, its update, the stream after the sum
    ("block.ln1", "LayerNorm 1 · LN₁", "ln1.out", "Z₁", "block.attn", "Attention · Δattn = Attention(Z₁)",
     "heads side by side → merge → W_O", "attn.out", "Δattn", "resid_mid", "x′ₙ"),
    ("block.ln2", "LayerNorm 2 · LN₂", "ln2.out", "Z₂", "block.mlp", "MLP · Δmlp = MLP(Z₂)",
     "expand 4d → GELU → project d", "mlp.out", "Δmlp", "resid_post", "xₙ₊₁"),
)


def block(cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links) -> str:
    """x_n -> LN1 -> attention -> dropout -> + -> x'_n -> LN2 -> MLP -> dropout -> + -> x_{n+1},
    with both residual bypasses drawn on the left. Δattn and Δmlp label the edges after the dropouts,
    where attn.out and mlp.out are taken."""
    blk, bypass = cat["block"], 120
    col = _Column(cat, mode, values, links, x=250, w=320)
    col.parts.append(_edge_label(col.mid - 60, col.y, "xₙ", col.shape("resid_pre")))
    col.y += 10
    stream = "xₙ"
    for ln, ln_title, z, z_sym, sub, sub_title, detail, delta, d_sym, out, out_sym in HALVES:
        split = col.y + 8
        col.parts += [_line(col.mid, col.y, col.mid, col.y + 30),
                      f'<circle cx="{col.mid}" cy="{split}" r="3.5" fill="currentColor"/>']
        col.y += 30
        col.box(ln, (ln_title, "μ, σ², gain g" + (" · bias b" if cat.config.bias else ""),
                     params(cat[ln].per_instance)))
        col.edge(z_sym, z)
        col.box(sub, (sub_title, detail, params(cat[sub].per_instance) + " · Open →"), h=70, inset=-20)
        if sub == "block.attn" and col.mode in CACHED_MODES:
            col.side_note(col.y - 42, "KV cache K, V", col.shape("attn.k_cache") + " each", dx=34)
        col.parts.append(_line(col.mid, col.y, col.mid, col.y + 22))  # the sublayer's output, before dropout
        col.y += 22
        col.dropout("p_resid")
        col.edge(d_sym, delta, length=34)  # Δ as recorded: after the dropout
        col.y += 14
        # the residual bypass: from the split above the LayerNorm around to the sum
        col.parts += [_plus(col.mid, col.y),
                      _path(f"M {col.mid} {split} L {bypass} {split} L {bypass} {col.y} L {col.mid - 14} {col.y}"),
                      _vertical_text(bypass - 10, (split + col.y) / 2, f"residual: {stream} bypasses")]
        col.y += 12
        col.edge(out_sym, out)
        stream = out_sym
    return col.close(f"one block: {blk.per_instance:,} parameters; × {blk.instances} = {blk.total:,}",
                     "Transformer block")


# ---------------------------------------------------------------------------- inside attention and the MLP
MAX_HEADS = 16  # more heads than this are drawn as the first ones, "…", and the last


def _heads_drawn(nh: int) -> list[int | None]:
    """The heads drawn side by side; None stands for the ones left out."""
    if nh <= MAX_HEADS:
        return list(range(nh))
    return [*range(MAX_HEADS - 3), None, nh - 2, nh - 1]


def attention(cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links, head: int = 0) -> str:
    """Z1 -> W_QKV -> the nh heads side by side -> merge -> W_O -> dropout -> Δattn (the chosen head lit)."""
    col = _Column(cat, mode, values, links, x=200, w=360)
    col.entry("Z₁", "ln1.out")
    col.box("block.attn.qkv", ("Query, key and value projection W_QKV", "c_attn [d, 3d]",
                               params(cat["block.attn.qkv"].per_instance)))
    if col.mode in CACHED_MODES:
        col.side_note(col.y - 42, "KV cache K, V", col.shape("attn.k_cache") + " each",
                      "read and extended" if col.mode is Mode.DECODE else "filled")
    col.edge("q, k, v", "attn.q", " each, split into heads", length=34)
    col.parts += [_text(col.mid, col.y + 10, "each head h: softmax(Qₕ Kₕᵀ / √dh + M) Vₕ, with the causal mask M",
                        size=SMALL, opacity=0.85),
                  _text(col.mid, col.y + 28, f"in training, dropout (p_attn = {cat.config.dropout:g}) on the pattern "
                        "before it weighs Vₕ", size=SMALL, opacity=0.85)]
    col.y += 38
    drawn = _heads_drawn(cat.config.n_head)
    gap, left = 6, 30
    hw = round((WIDTH - 2 * left - gap * (len(drawn) - 1)) / len(drawn), 1)
    for i, h in enumerate(drawn):
        hx = round(left + i * (hw + gap), 1)
        if h is None:
            col.parts.append(_text(hx + hw / 2, col.y + 30, "…", size=18))
            continue
        col.parts += [Box("block.attn.heads", (f"h{h}",), hx, col.y, hw, 44, override=(("head", str(h)),),
                          lit=h == head).svg(links),
                      _line(hx + hw / 2, col.y + 44, col.mid, col.y + 74, arrow=False)]
    col.y += 74
    col.edge("H = z", "attn.z", ": the heads' outputs")
    col.box("block.attn.merge", ("Merge heads", "transpose to [B, T, nh, dh], then reshape", params(0)))
    col.edge("merge(H)", "attn.merged")
    col.box("block.attn.merge", ("Output projection W_O", "c_proj [d, d]",
                                 params(cat["block.attn.merge"].per_instance)))
    col.parts.append(_line(col.mid, col.y, col.mid, col.y + 22))
    col.y += 22
    col.dropout("p_resid")
    col.edge("Δattn", "attn.out")
    return col.close(f"attention: {cat['block.attn'].per_instance:,} parameters per block", "attention")


def merge(cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links) -> str:
    """H [B, nh, T, dh] -> transpose [B, T, nh, dh] -> reshape [B, T, d] -> W_O -> Δattn. The
    transpose comes first: a reshape alone would lay one head's positions side by side."""
    col = _Column(cat, mode, values, links, x=200, w=360)
    col.entry("H = z", "attn.z")
    col.box("block.attn.merge", ("Transpose heads and positions", "[B, nh, T, dh] → [B, T, nh, dh]", params(0)))
    col.edge_text("Hᵀ", "[" + ", ".join(f"{v:,}" for v in concrete(("B", "T", "nh", "dh"), values)) + "]")
    col.box("block.attn.merge", ("Reshape: each position's heads in one row", "[B, T, nh, dh] → [B, T, nh · dh = d]",
                                 params(0)))
    col.edge("merge(H)", "attn.merged")
    merge_ = cat["block.attn.merge"]
    projection = "c_proj [d, d]" + (" and bias b_O" if cat.config.bias else "")  # nanoGPT's bias=False has none
    col.box("block.attn.merge", ("Output projection W_O", projection, params(merge_.per_instance)))
    col.edge("Δattn", "attn.out")
    return col.close(f"merge: 0 parameters · W_O: {merge_.per_instance:,} parameters per block", "merge and project")


def mlp(cat: ComponentTree, mode: Mode | str, values: Mapping[str, int], links: Links) -> str:
    """Z2 -> expand to 4d (W_fc) -> GELU -> project back to d (W_proj) -> dropout -> Δmlp."""
    col = _Column(cat, mode, values, links, x=200, w=360)
    col.entry("Z₂", "ln2.out")
    form = "exact (erf) form" if cat.config.exact_gelu else "tanh form"  # the model's own (nanoGPT: erf)
    for target, lines, out, sym in (
            ("block.mlp.fc", ("Expand W_fc", "c_fc [d, 4d]: each position from d to 4d"), "mlp.pre", "A"),
            ("block.mlp.gelu", ("GELU", f"{form}, on each of the 4d features"), "mlp.post", "G"),
            ("block.mlp.proj", ("Project W_proj", "c_proj [4d, d]: back to d"), "mlp.out", "")):
        col.box(target, (*lines, params(cat[target].per_instance)))
        if sym:
            col.edge(sym, out)
    col.parts.append(_line(col.mid, col.y, col.mid, col.y + 22))
    col.y += 22
    col.dropout("p_resid")
    col.edge("Δmlp", "mlp.out")
    return col.close(f"MLP: {cat['block.mlp'].per_instance:,} parameters per block; no position reads another", "MLP")
