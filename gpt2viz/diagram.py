"""The model drawn as SVG: the overview, the Transformer block, and small diagrams of attention and
the MLP. Pure: a catalogue, a mode, the run's dims (B, T, P, L) and where each box links in, an SVG
string out (no Streamlit).

Every box shows its symbol and its exact parameter count from the catalogue's accounting rows; every
edge shows the catalogue's symbolic shape of the tensor it carries, evaluated with the run's dims (so
decode shows T = 1 and the KV cache [B, nh, L, dh]). Each box is a link to the page that shows it,
carrying the view's query string, and the boxes of the current page are highlighted.

The SVG scales to its container's width (viewBox, width 100%) and draws text and lines in
`currentColor`, so it reads on a light and a dark theme alike.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from urllib.parse import quote, urlencode

from .catalog import Catalogue, concrete, short_axes
from .modes import Mode

FONT = 14  # px in viewBox units; the diagrams are drawn about as wide as they are shown
ACCENT = "#1c83e1"
BOX_FILL = "rgba(128, 128, 128, 0.10)"
HIGHLIGHT_FILL = "rgba(28, 131, 225, 0.22)"


# ---------------------------------------------------------------------------- links
@dataclass(frozen=True)
class Links:
    """Where boxes link: the page of each target (component ids, or `dropout`), the view's query
    parameters (carried by every link) and the current page (its boxes are highlighted)."""
    pages: Mapping[str, str]  # target -> url path of its page ("overview" is served at "/")
    query: Mapping[str, str] = field(default_factory=dict)
    current: str = ""
    default: str = "overview"

    def page(self, target: str) -> str:
        return self.pages[target]

    def href(self, target: str, **override) -> str:
        """The page's address with the view's query string (`override` replaces some values)."""
        url = self.page(target)
        path = "/" if url == self.default else "/" + url
        query = urlencode({**self.query, **{k: str(v) for k, v in override.items()}}, quote_via=quote)
        return path + ("?" + query if query else "")

    def is_current(self, target: str) -> bool:
        return self.page(target) == self.current


# ---------------------------------------------------------------------------- drawing primitives
def _text(x, y, s: str, size: int = FONT, anchor: str = "middle", weight: str = "normal", opacity: float = 1.0) -> str:
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="currentColor" fill-opacity="{opacity}">{escape(s)}</text>')


def _line(x1, y1, x2, y2, arrow: bool = True, dash: bool = False) -> str:
    style = ' stroke-dasharray="5 4"' if dash else ""
    head = ' marker-end="url(#gpt2viz-arrow)"' if arrow else ""
    return f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor" stroke-width="1.5"{style}{head}/>'


def _path(d: str, arrow: bool = True) -> str:
    head = ' marker-end="url(#gpt2viz-arrow)"' if arrow else ""
    return f'<path d="{d}" fill="none" stroke="currentColor" stroke-width="1.5"{head}/>'


def _vertical_text(x, y, s: str, size: int = 13) -> str:
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
        step = FONT + 4
        top = self.y + self.h / 2 - step * (len(self.lines) - 1) / 2 + FONT / 3
        body = "".join(_text(self.x + self.w / 2, round(top + i * step, 1), s, weight="bold" if i == 0 else "normal",
                             opacity=1.0 if i == 0 else 0.85)
                       for i, s in enumerate(self.lines))
        rect = (f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" rx="8" fill="{fill}" '
                f'stroke="{stroke}" stroke-width="{width}"/>')
        current = ' aria-current="page"' if lit else ""
        href = escape(links.href(self.target, **dict(self.override)))
        return (f'<a href="{href}" target="_self" data-target="{escape(self.target)}"{current}>'
                f'<title>{escape(" · ".join(self.lines))}: open its page</title>{rect}{body}</a>')


def _svg(width: int, height: int, label: str, parts: list[str]) -> str:
    """One line (Markdown ends an HTML block at a blank line), scaled to the container's width."""
    marker = ('<defs><marker id="gpt2viz-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
              'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/>'
              '</marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width: {width}px; display: block; margin: 0 auto; font-family: inherit" role="img" '
            f'aria-label="{escape(label)}">{marker}{"".join(parts)}</svg>')


# ---------------------------------------------------------------------------- shapes and counts
def shape(short: str, mode: str, values: Mapping[str, int]) -> str:
    """The catalogue's symbolic shape of a recorded name, evaluated with the run's dims: "[1, 10, 768]"."""
    return "[" + ", ".join(f"{v:,}" for v in concrete(short_axes(short, mode), values)) + "]"


def params(n: int) -> str:
    return f"{n:,} parameters" if n else "0 parameters (owns no weights)"


def _edge_label(x, y, symbol: str, text: str) -> str:
    return _text(x, y, symbol, anchor="start", weight="bold") + _text(x + 8 + 9 * len(symbol), y, text, anchor="start",
                                                                     opacity=0.85)


def _mode_note(mode: str, values: Mapping[str, int]) -> str:
    if mode == Mode.DECODE.value:
        return f"decode: T = 1 new position after P = {values['P']:,} cached, reading L = P + 1 = {values['L']:,} keys"
    if mode == Mode.PREFILL.value:
        return f"prefill: T = {values['T']:,} positions into an empty cache (P = 0); logits for the last one only"
    if mode == Mode.TRAINING.value:
        return f"training: T = {values['T']:,} positions, dropout on, each position predicts the next"
    return f"full sequence: T = {values['T']:,} positions, no cache"


def _cache_line(cat: Catalogue, mode: str, values: Mapping[str, int]) -> str | None:
    """The KV cache a block reads and writes in this mode (None without a cache)."""
    if mode not in (Mode.PREFILL.value, Mode.DECODE.value):
        return None
    verb = "reads and extends" if mode == Mode.DECODE.value else "fills"
    return f"KV cache: {verb} K and V {shape('attn.k_cache', mode, values)} each, in every block"


# ---------------------------------------------------------------------------- the model
def overview(cat: Catalogue, mode: str, values: Mapping[str, int], links: Links) -> str:
    """Embeddings (wte + wpe) -> n_layer x block -> ln_f -> tied unembedding, top to bottom."""
    cfg, W, bw = cat.config, 760, 340
    x = (W - bw) / 2
    block = cat["block"]
    parts = [_text(W / 2, 20, _mode_note(mode, values), size=13, opacity=0.8)]
    y = 40
    half = (bw - 20) / 2
    tok, pos = cat["embed.tok"], cat["embed.pos"]
    parts.append(_edge_label(x - 90, y + 14, "ids", _ids(values)))
    parts.append(Box("embed.tok", ("Token embedding W_E", "wte [V, d]", params(tok.total)), x - 90, y + 24,
                     half + 70, 70).svg(links))
    parts.append(Box("embed.pos", ("Position embedding W_P", "wpe [n_ctx, d]", params(pos.total)), x + half + 40,
                     y + 24, half + 70, 70).svg(links))
    y += 94
    mid = W / 2
    parts += [_path(f"M {x - 90 + (half + 70) / 2} {y} L {x - 90 + (half + 70) / 2} {y + 22} L {mid - 14} {y + 34}"),
              _path(f"M {x + half + 40 + (half + 70) / 2} {y} L {x + half + 40 + (half + 70) / 2} {y + 22} "
                    f"L {mid + 14} {y + 34}"),
              _plus(mid, y + 46)]
    parts.append(_text(x - 90 + (half + 70) / 2 + 8, y + 18, shape("embed.tok", mode, values), size=13, anchor="start",
                       opacity=0.85))
    parts.append(_text(x + half + 40 + (half + 70) / 2 + 8, y + 18, shape("embed.pos", mode, values), size=13,
                       anchor="start", opacity=0.85))
    y += 58
    parts += [_line(mid, y, mid, y + 34), _edge_label(mid + 12, y + 22, "x₀", shape("embed.out", mode, values))]
    y += 36
    title = f"{block.instances} × Transformer block"
    each = f"{block.per_instance:,} parameters each = {block.total:,}"
    parts.append(Box("block", (title, "LN₁ → attention → + → LN₂ → MLP → +", each), x, y, bw, 74).svg(links))
    cache = _cache_line(cat, mode, values)
    if cache:
        parts.append(_text(x + bw + 14, y + 30, "KV cache", size=13, anchor="start", weight="bold"))
        parts.append(_text(x + bw + 14, y + 48, shape("attn.k_cache", mode, values) + " × 2", size=13, anchor="start",
                           opacity=0.85))
        parts.append(_text(x + bw + 14, y + 66, f"in each of {cfg.n_layer} blocks", size=13, anchor="start",
                           opacity=0.85))
    y += 74
    parts += [_line(mid, y, mid, y + 34),
              _edge_label(mid + 12, y + 22, f"x{_sub(cfg.n_layer)}", shape("resid_post", mode, values))]
    y += 36
    lnf = cat["ln_f"]
    parts.append(Box("ln_f", ("Final LayerNorm LN_f", "μ, σ², gain g_f · bias b_f", params(lnf.total)), x, y, bw,
                     70).svg(links))
    y += 70
    parts += [_line(mid, y, mid, y + 34), _edge_label(mid + 12, y + 22, "Z_f", shape("ln_f.out", mode, values))]
    y += 36
    un = cat["unembed"]
    parts.append(Box("unembed", ("Unembedding W_U = W_Eᵀ (tied)", "reuses wte's weights", params(un.total)),
                     x, y, bw, 70).svg(links))
    y += 70
    parts += [_line(mid, y, mid, y + 34), _edge_label(mid + 12, y + 22, "logits", shape("logits", mode, values))]
    y += 44
    parts.append(_text(W / 2, y + 6, f"{cfg.name}: {cat.root.total:,} parameters in all", weight="bold"))
    return _svg(W, y + 16, f"{cfg.name} overview", parts)


def _ids(values: Mapping[str, int]) -> str:
    return "[" + ", ".join(f"{v:,}" for v in concrete(("B", "T"), values)) + "]"


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


# ---------------------------------------------------------------------------- the block
def block(cat: Catalogue, mode: str, values: Mapping[str, int], links: Links) -> str:
    """x_n -> LN1 -> attention -> dropout -> + -> x'_n -> LN2 -> MLP -> dropout -> + -> x_{n+1},
    with both residual bypasses drawn on the left."""
    cfg, W, bw = cat.config, 760, 320
    x, mid, bypass = 250, 250 + bw / 2, 120
    p = f"p_resid = {cfg.dropout:g}, in training only"
    parts = [_text(W / 2, 20, _mode_note(mode, values), size=13, opacity=0.8)]
    y = 42
    parts.append(_edge_label(mid - 60, y, "xₙ", shape("resid_pre", mode, values)))
    stream = ("resid_pre", "xₙ")
    halves = (("block.ln1", "LayerNorm 1 · LN₁", "ln1.out", "Z₁", "block.attn", "Attention · Δattn = Attention(Z₁)",
               "attn.out", "Δattn", "resid_mid", "x′ₙ"),
              ("block.ln2", "LayerNorm 2 · LN₂", "ln2.out", "Z₂", "block.mlp", "MLP · Δmlp = MLP(Z₂)",
               "mlp.out", "Δmlp", "resid_post", "xₙ₊₁"))
    y += 10
    for ln, ln_title, z, z_sym, sub, sub_title, delta, d_sym, out, out_sym in halves:
        split = y + 8
        parts += [_line(mid, y, mid, y + 30)]
        parts.append(f'<circle cx="{mid}" cy="{split}" r="3.5" fill="currentColor"/>')
        y += 30
        parts.append(Box(ln, (ln_title, "μ, σ², gain g · bias b", params(cat[ln].per_instance)), x, y, bw, 66)
                     .svg(links))
        y += 66
        parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, z_sym, shape(z, mode, values))]
        y += 30
        detail = "heads side by side → merge → W_O" if sub == "block.attn" else "expand 4d → GELU → project d"
        parts.append(Box(sub, (sub_title, detail, params(cat[sub].per_instance) + " · Open →"), x - 20, y, bw + 40,
                         70).svg(links))
        if sub == "block.attn":
            cache = _cache_line(cat, mode, values)
            if cache:
                parts.append(_text(x + bw + 30, y + 28, "KV cache K, V", size=13, anchor="start", weight="bold"))
                parts.append(_text(x + bw + 30, y + 46, shape("attn.k_cache", mode, values) + " each", size=13,
                                   anchor="start", opacity=0.85))
        y += 70
        parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, d_sym, shape(delta, mode, values))]
        y += 30
        parts.append(Box("dropout", ("Dropout", p), x + 30, y, bw - 60, 50).svg(links))
        y += 50
        parts.append(_line(mid, y, mid, y + 18))
        y += 32
        parts.append(_plus(mid, y))
        # the residual bypass: from the split above LayerNorm around to the sum
        parts.append(_path(f"M {mid} {split} L {bypass} {split} L {bypass} {y} L {mid - 14} {y}"))
        parts.append(_vertical_text(bypass - 10, (split + y) / 2, f"residual: {stream[1]} bypasses"))
        y += 12
        parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, out_sym, shape(out, mode, values))]
        y += 30
        stream = (out, out_sym)
    blk = cat["block"]
    y += 18
    parts.append(_text(W / 2, y, f"one block: {blk.per_instance:,} parameters; × {blk.instances} = {blk.total:,}",
                       weight="bold"))
    return _svg(W, y + 12, f"{cfg.name} Transformer block", parts)


# ---------------------------------------------------------------------------- inside attention and the MLP
MAX_HEADS = 16  # more heads than this are drawn as the first ones, "…", and the last


def _heads_drawn(nh: int) -> list[int | None]:
    """The heads drawn side by side; None stands for the ones left out."""
    if nh <= MAX_HEADS:
        return list(range(nh))
    return [*range(MAX_HEADS - 3), None, nh - 2, nh - 1]


def attention(cat: Catalogue, mode: str, values: Mapping[str, int], links: Links, head: int = 0) -> str:
    """Z1 -> W_QKV -> the nh heads side by side -> merge -> W_O -> Δattn (the chosen head lit)."""
    cfg, W, bw = cat.config, 760, 360
    x, mid = (W - bw) / 2, W / 2
    parts = [_text(W / 2, 20, _mode_note(mode, values), size=13, opacity=0.8)]
    y = 40
    parts += [_edge_label(mid + 12, y + 6, "Z₁", shape("ln1.out", mode, values)), _line(mid, y - 6, mid, y + 16)]
    y += 18
    qkv = cat["block.attn.qkv"]
    parts.append(Box("block.attn.qkv", ("Query, key and value projection W_QKV", "c_attn [d, 3d]",
                                        params(qkv.per_instance)), x, y, bw, 66).svg(links))
    y += 66
    parts += [_line(mid, y, mid, y + 30),
              _edge_label(mid + 12, y + 20, "Q, K, V", shape("attn.q", mode, values) + " each, split into heads")]
    y += 34
    cache = _cache_line(cat, mode, values)
    if cache:
        parts.append(_text(mid, y + 8, cache, size=13, opacity=0.85))
        y += 20
    parts.append(_text(mid, y + 10, "each head: softmax(Q Kᵀ / √dh + M) V, with the causal mask M", size=13,
                       opacity=0.85))
    y += 20
    drawn = _heads_drawn(cfg.n_head)
    gap, left = 6, 30
    hw = (W - 2 * left - gap * (len(drawn) - 1)) / len(drawn)
    for i, h in enumerate(drawn):
        hx = round(left + i * (hw + gap), 1)
        if h is None:
            parts.append(_text(hx + hw / 2, y + 30, "…", size=18))
            continue
        parts.append(Box("block.attn.heads", (f"h{h}",), hx, y, round(hw, 1), 44, override=(("head", str(h)),),
                         lit=h == head).svg(links))
        parts.append(_line(hx + hw / 2, y + 44, mid, y + 74, arrow=False))
    y += 74
    parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, "H = z", shape("attn.z", mode, values)
                                                      + ": the heads' outputs")]
    y += 30
    parts.append(Box("block.attn.merge", ("Merge heads", "lay the nh outputs side by side (a reshape)",
                                          "0 parameters"), x, y, bw, 66).svg(links))
    y += 66
    parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, "merge(H)", shape("attn.merged", mode, values))]
    y += 30
    merge = cat["block.attn.merge"]
    parts.append(Box("block.attn.merge", ("Output projection W_O", "c_proj [d, d]", params(merge.per_instance)),
                     x, y, bw, 66).svg(links))
    y += 66
    parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, "Δattn", shape("attn.out", mode, values))]
    y += 50
    attn = cat["block.attn"]
    parts.append(_text(W / 2, y, f"attention: {attn.per_instance:,} parameters per block", weight="bold"))
    return _svg(W, y + 12, f"{cfg.name} attention", parts)


def mlp(cat: Catalogue, mode: str, values: Mapping[str, int], links: Links) -> str:
    """Z2 -> expand to 4d (W_fc) -> GELU -> project back to d (W_proj) -> Δmlp."""
    cfg, W, bw = cat.config, 760, 360
    x, mid = (W - bw) / 2, W / 2
    parts = [_text(W / 2, 20, _mode_note(mode, values), size=13, opacity=0.8)]
    y = 40
    parts += [_edge_label(mid + 12, y + 6, "Z₂", shape("ln2.out", mode, values)), _line(mid, y - 6, mid, y + 16)]
    y += 18
    stages = (("block.mlp.fc", ("Expand W_fc", "c_fc [d, 4d]: each position from d to 4d"), "mlp.pre", "A"),
              ("block.mlp.gelu", ("GELU", "tanh form, on each of the 4d features"), "mlp.post", "G"),
              ("block.mlp.proj", ("Project W_proj", "c_proj [4d, d]: back to d"), "mlp.out", "Δmlp"))
    for target, lines, out, sym in stages:
        parts.append(Box(target, (*lines, params(cat[target].per_instance)), x, y, bw, 66).svg(links))
        y += 66
        parts += [_line(mid, y, mid, y + 30), _edge_label(mid + 12, y + 20, sym, shape(out, mode, values))]
        y += 30
    y += 20
    m = cat["block.mlp"]
    parts.append(_text(W / 2, y, f"MLP: {m.per_instance:,} parameters per block; no position reads another",
                       weight="bold"))
    return _svg(W, y + 12, f"{cfg.name} MLP", parts)
