"""A lesson as a static website: `index.html` (the title, the stops, where the numbers come from) and
one page per stop beside it, each the stop as the app draws it, linked by relative links; plotly.js
written once beside them, so the folder opens from `file://`, offline, or behind any static host.

A stop's page is written from a neutral tree of what the app drew (`Node`: Markdown, captions,
numbers, tables, code, charts as plotly JSON, columns, tabs); gpt2viz/lesson_site.py reads that tree
from a run of the app itself. A stop whose student may change a few controls (`Variant`s: up to
MAX_VARIANTS) carries each variant's tree, shown one at a time by a few lines of inline JavaScript.

Pure: nodes and strings in, files out; no streamlit import. Nothing on a page asks another host for
anything: no fonts, no scripts, no pictures; links to the app (`/page?...`) become links to `base`
when one is given, else plain text."""

import io
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt

from ..spec.paths import PLOTLY_BUNDLE
from . import chart_text
from .handout import OFFLINE_CONFIG, untemplated
from .votes_text import number

MAX_VARIANTS = 16  # pre-rendered pictures of a stop's free controls; beyond, the control is fixed here
PLOTLY_JS = "plotly.min.js"  # the site's copy of the app's Plotly bundle (PLOTLY_BUNDLE): every trace it draws
CHART_CONFIG = OFFLINE_CONFIG


@dataclass(frozen=True)
class Node:
    """One thing a page drew. kind: markdown, caption, title, header, subheader, info, warning, success,
    error, code (data: its language), latex, table (data: (columns, rows)), metric (text: label, data:
    (value, delta)), chart (data: the figure's dict), control (text: label, data: its value), row (children:
    columns), column, tabs (children: tab), tab (text: label), expander (text: label), group (children
    only), other (text: its type)."""
    kind: str
    text: str = ""
    data: object = None
    children: tuple["Node", ...] = ()
    html: bool = False  # markdown, caption: the app wrote it with unsafe_allow_html (its own links, drawings)


@dataclass(frozen=True)
class Variant:
    values: dict[str, object]  # the free controls' values this picture shows ({"head": 2}); {} when none
    body: tuple[Node, ...]
    view: str = ""  # the view in a line: weights, text, mode, block, head


@dataclass(frozen=True)
class StopPage:
    title: str  # the page's title ("Attention")
    note: str
    source: str  # where its numbers come from
    variants: tuple[Variant, ...]
    fixed: tuple[str, ...] = ()  # free controls too many to pre-render, fixed here to the lesson's value
    cannot: str = ""  # why this page could not be exported (then variants may be empty)
    live: str = ""  # the address of this view in the live app, when a base URL was given
    default: int = 0  # the variant shown first: the lesson's own values
    question: dict | None = None  # the stop's class question, written here as a self-check (no vote, no request)


@dataclass
class Site:
    title: str
    source: str  # the weights and texts, in a line
    free: tuple[str, ...]
    stops: list[StopPage] = field(default_factory=list)
    base: str = ""


def stop_file(i: int, page: str) -> str:
    """Stop i's file (from 0): "stop-1-attention.html"."""
    return f"stop-{i + 1}-{page}.html"


# ---------------------------------------------------------------------------- Markdown as Streamlit writes it
def _safe_link(url: str) -> bool:
    """A link the site keeps: http(s), a heading on the page (#...), a page of the site, or an app page
    (/page?..., pointed at `base` or unlinked). Never javascript:, data:, vbscript:, file: or another scheme."""
    url = re.sub(r"[\x00-\x20\x7f]", "", url)  # a browser drops these inside a scheme ("java\tscript:")
    return bool(re.match(r"(?i)(https?://|#|/(?!/)|[\w.-]+\.html(?:#|$))", url))


def _markdown_it(html: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": html}).enable("table").enable("strikethrough")
    md.validateLink = _safe_link
    md.add_render_rule("image", _picture_as_link)
    return md


def _picture_as_link(self, tokens, idx, options, env) -> str:
    """A picture in a lesson's Markdown (![alt](url)): the site fetches nothing, so it is a link to the picture,
    named by its words and "(picture)" (it was "!" and a link). Its URL passed _safe_link when parsed."""
    token = tokens[idx]
    words = escape(self.renderInlineAsText(token.children or [], options, env))
    return f'<a href="{escape(token.attrs.get("src", ""))}">{f"{words} (picture)" if words else "picture"}</a>'


_MD = _markdown_it(html=False)  # every text a lesson or a reader wrote, and every element of the app's
_MD_APP = _markdown_it(html=True)  # st.markdown(..., unsafe_allow_html=True): the app's own links and drawings
_ICON = re.compile(r":material/[a-z0-9_]+:\s?")
_COLOR = re.compile(r":(?:red|orange|yellow|green|blue|violet|gray|grey|rainbow|primary)(?:-background|-badge)?"
                    r"\[([^\]]*)\]")
LEAVES = " (leaves the lesson)"  # the app's label on a link out of a lesson (ui/state.py LEAVES)
# the app's HTML the site keeps: text, tables, links, and the SVG of its drawings; anything else is dropped
# (its text kept), and script, style and frames with their content
_TAGS = frozenset(("a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
                   "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "small", "span", "strong", "sub", "sup",
                   "table", "tbody", "td", "th", "thead", "tr", "u", "ul", "svg", "g", "defs", "marker", "path",
                   "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "title"))
_DROPPED = frozenset(("script", "style", "iframe", "frame", "frameset", "object", "embed", "template", "noscript",
                      "textarea", "select", "option", "math", "svg:script", "foreignobject"))
_VOID = frozenset(("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"))
_URL_ATTRS = frozenset(("href", "xlink:href"))
_NAME = re.compile(r"[a-zA-Z][-a-zA-Z0-9_:.]*$")


class _Clean(HTMLParser):
    """HTML with only _TAGS, no on* attribute, no URL but a _safe_link, no style that fetches; links to the
    app's pages pointed at `base`, or, without one, their text kept without the link (and without the
    app's "(leaves the lesson)": on a static page the phrase is no link)."""

    def __init__(self, base: str):
        super().__init__(convert_charrefs=True)
        self.base, self.out, self.dropping, self.open = base, [], 0, []  # open: a's kept (True) or unlinked

    def handle_starttag(self, tag, attrs):
        if self.dropping or tag in _DROPPED:  # within a dropped element: count its depth
            self.dropping += tag not in _VOID
            return
        if tag not in _TAGS:
            return
        kept, unlink = [], False
        for name, value in attrs:
            value = value or ""
            low = name.lower()
            if not _NAME.match(name) or low.startswith("on") or low in ("srcdoc", "src", "action", "formaction"):
                continue
            if low == "style" and re.search(r"(?i)url\(|expression|javascript|@import", value):
                continue
            if low in _URL_ATTRS:
                if not _safe_link(value):
                    unlink = tag == "a"
                    continue
                if value.startswith("/"):  # an app page: live on `base`, else no link
                    if not self.base:
                        unlink = tag == "a"
                        continue
                    value = self.base.rstrip("/") + value
            kept.append(f' {name}="{escape(value)}"')
        if tag == "a":
            self.open.append(not unlink)
            if unlink:
                self.out.append(("unlinked", ""))
                return
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if self.dropping:
            self.dropping -= tag not in _VOID
            return
        if tag not in _TAGS or tag in _VOID:
            return
        if tag == "a" and self.open and not self.open.pop():
            self._close_unlinked()
            return
        self.out.append(f"</{tag}>")

    def _close_unlinked(self):
        """The text of an unlinked link, since its start, without the app's "(leaves the lesson)"."""
        start = max(i for i, x in enumerate(self.out) if isinstance(x, tuple))
        text = "".join(x for x in self.out[start + 1:] if isinstance(x, str))
        self.out[start:] = [text.replace(escape(LEAVES), "").replace(LEAVES, "")]

    def handle_data(self, data):
        if not self.dropping:
            self.out.append(escape(data, quote=False))

    def html(self) -> str:
        self.close()
        while any(isinstance(x, tuple) for x in self.out):  # a link left open
            self._close_unlinked()
        return "".join(self.out)


def clean(html: str, base: str = "") -> str:
    """`html` with nothing in it that runs or fetches (_Clean)."""
    parser = _Clean(base if re.match(r"(?i)https?://", base) else "")
    parser.feed(html)
    return parser.html()


def markdown(text: str, base: str = "", inline: bool = False, html: bool = False) -> str:
    """Streamlit's Markdown as HTML: its :material/...: icons dropped, its :color[text] kept as text, and
    links to the app's pages pointed at `base` (a live server) or, without one, kept as plain text. Raw
    HTML is text, unless `html` (the app's own st.markdown(unsafe_allow_html=True)); either way the
    result is cleaned (clean): no lesson's text runs on a page of the site."""
    text = _COLOR.sub(r"\1", _ICON.sub("", text))
    md = _MD_APP if html else _MD
    return clean(md.renderInline(text) if inline else md.render(text), base)


# ---------------------------------------------------------------------------- a tree as HTML
def _figure_json(spec: dict) -> str:
    """A figure's JSON, safe inside a <script> element: no "<" at all (a "<!--" would keep it open), and
    json.dumps writes U+2028 and U+2029 escaped."""
    return json.dumps(spec, separators=(",", ":")).replace("<", "\\u003c")


_BOXES = {"row": '<div class="row">', "column": '<div class="col">', "tabs": '<div class="tabs">', "group": ""}


def render(node: Node, charts: list[dict], base: str = "") -> str:
    """A node as HTML; each chart's figure goes into `charts`, drawn by the page's script from its index."""
    k, t = node.kind, node.text
    inner = "".join(render(c, charts, base) for c in node.children)
    if k == "markdown":
        return f'<div class="md">{markdown(t, base, html=node.html)}</div>'
    if k == "caption":
        return f'<div class="caption">{markdown(t, base, html=node.html)}</div>'
    if k in ("title", "header", "subheader"):
        tag = {"title": "h1", "header": "h2", "subheader": "h3"}[k]
        anchor = f' id="{escape(node.data)}"' if node.data else ""  # a link on the page may lead to it
        return f"<{tag}{anchor}>{markdown(t, base, inline=True)}</{tag}>"
    if k in ("info", "warning", "success", "error"):
        return f'<div class="alert {k}">{markdown(t, base)}</div>'
    if k == "code":
        return f'<pre class="code"><code>{escape(t)}</code></pre>'
    if k == "latex":
        return f'<pre class="tex" title="an equation, in TeX">{escape(t)}</pre>'
    if k == "table":
        columns, rows = node.data
        head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
        return f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    if k == "metric":
        value, delta = node.data
        extra = f'<div class="delta">{escape(str(delta))}</div>' if delta else ""
        return (f'<div class="metric"><div class="label">{markdown(t, base, inline=True)}</div>'
                f'<div class="value">{escape(str(value))}</div>{extra}</div>')
    if k == "chart":  # with its sentence, its accessible name, and its numbers (teaching.chart_text)
        charts.append(untemplated(node.data))
        n = len(charts) - 1
        return (f'<div class="chart" data-chart="{n}" role="figure" aria-labelledby="chart-{n}"></div>'
                + chart_text.figure_html(node.data, f"chart-{n}"))
    if k == "control":
        return (f'<div class="control">{markdown(t, base, inline=True)}: <b>{escape(str(node.data))}</b> '
                '<span class="set">(as the lesson sets it)</span></div>')
    if k in _BOXES:
        return f"{_BOXES[k]}{inner}</div>" if _BOXES[k] else inner
    if k in ("tab", "expander"):  # a tab stands open: a static page shows every tab's content
        return (f'<details{" class=tab open" if k == "tab" else ""}><summary>{markdown(t, base, inline=True)}'
                f"</summary>{inner}</details>")
    return f'<div class="other">(the app draws a {escape(t)} here, which this static page does not show)</div>'


# ---------------------------------------------------------------------------- pages
_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#262730;margin:0;line-height:1.5}
main{max-width:1180px;margin:0 auto;padding:0 1rem 3rem}
.bar{position:sticky;top:0;z-index:10;background:#f0f2f6;border-bottom:1px solid #d5d8de;padding:.5rem 1rem;
 display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
.bar.end{position:static;border-top:1px solid #d5d8de}
.bar .place{flex:1;min-width:12rem}.bar a{color:#1c5fb5;text-decoration:none;font-weight:600}
.note{background:#e8f0fb;border-left:4px solid #1c83e1;padding:.6rem 1rem;margin:1rem 0;border-radius:4px}
.source,.caption,.set,.view{color:#6b6f7b;font-size:.9rem}
.alert{padding:.5rem 1rem;border-radius:4px;margin:.6rem 0}.alert p{margin:.2rem 0}
.info{background:#e8f0fb}.warning{background:#fff6dd}.success{background:#e5f5ea}.error{background:#fde8e8}
.row{display:flex;gap:1rem;flex-wrap:wrap}.col{flex:1 1 0;min-width:260px}
.chart{margin:1rem 0;min-height:200px}.metric .value{font-size:1.6rem}.metric .label{font-size:.9rem}
pre{background:#f6f7f9;padding:.6rem;overflow-x:auto;font-size:.85rem}.tex{white-space:pre-wrap}
.table{overflow-x:auto}table{border-collapse:collapse;font-size:.9rem}
td,th{border:1px solid #e0e2e6;padding:.2rem .5rem;text-align:left}
details{margin:.6rem 0}summary{cursor:pointer;font-weight:600}
.switch{margin:1rem 0;display:flex;gap:.4rem;flex-wrap:wrap;align-items:center}
.switch button{font:inherit;padding:.2rem .7rem;border:1px solid #b9bdc7;background:#fff;border-radius:4px;
 cursor:pointer}
.switch button[aria-pressed=true]{background:#1c83e1;color:#fff;border-color:#1c83e1}
.variant[hidden]{display:none}.diagram svg{max-width:100%;height:auto}
ol.stops li{margin:.6rem 0}ol.stops p{margin:.1rem 0 .6rem}
.question{border:1px solid #d5d8de;border-radius:6px;padding:.4rem 1rem;margin:1rem 0}
""" + chart_text.STYLE

# each chart is drawn when its variant is first shown (a chart drawn hidden has no width); the variant
# in view is in the address's #fragment (#head=2), so a link can name one
_SCRIPT = """
(function(){
var figs=JSON.parse(document.getElementById('figures').textContent);
var cfg=%s;
function show(key,initial){
  var all=document.querySelectorAll('.variant');
  var known=Array.prototype.some.call(all,function(v){return v.dataset.key===key;});
  if(!known){if(!initial)return;var d=document.querySelector('.variant[data-default]');if(!d)return;key=d.dataset.key;}
  all.forEach(function(v){v.hidden=v.dataset.key!==key;});
  document.querySelectorAll('.switch button').forEach(function(b){b.setAttribute('aria-pressed',b.dataset.key===key);});
  document.querySelectorAll('.variant:not([hidden]) .chart:not(.drawn)').forEach(function(d){
    var f=figs[+d.dataset.chart];d.classList.add('drawn');
    Plotly.newPlot(d,f.data,f.layout||{},cfg);});
}
document.querySelectorAll('.switch button').forEach(function(b){b.addEventListener('click',function(){
  history.replaceState(null,'','#'+b.dataset.key);show(b.dataset.key);});});
window.addEventListener('hashchange',function(){show(location.hash.slice(1));});
show(location.hash.slice(1),true);
})();
"""


def _anchored(body: str, prefix: str) -> str:
    """A variant's headings' ids and the links to them, each prefixed: every variant has the same
    headings, and the address's #fragment names the variant in view, so a bare #heading would not do."""
    return re.sub(r'(<h[1-6] id="|href="#)', rf"\g<1>{prefix}", body)


def _key(values: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in values.items()) or "fixed"


def _document(title: str, body: str, scripts: str = "") -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>{body}{scripts}</body></html>")


def _bar(site: Site, i: int, pages: Sequence[str]) -> str:
    n = len(site.stops)
    back = f'<a href="{stop_file(i - 1, pages[i - 1])}" rel="prev">← back</a>' if i > 0 else ""
    nxt = f'<a href="{stop_file(i + 1, pages[i + 1])}" rel="next">next →</a>' if i + 1 < n else ""
    return (f'<nav class="bar"><span class="place"><a href="index.html">{escape(site.title)}</a> · stop {i + 1} of '
            f"{n} · {escape(site.stops[i].title)}</span>{back}{nxt}</nav>")


def question_html(question: dict) -> str:
    """A stop's class question as a self-check: the question and its choices, then the answer folded
    (choose, then open it). Plain HTML: no script, no form, no request."""
    if "choices" in question:
        choices = "".join(f"<li>{escape(c)}</li>" for c in question["choices"])
        asked = f'<ol class="choices" type="A">{choices}</ol>'
        right = question["choices"][question["answer"]]
        answer = f"{chr(ord('A') + question['answer'])}: {escape(right)}"
    else:
        asked = "<p>Your answer: a number.</p>"
        tolerance = f" (within {number(question['tolerance'])})" if question["tolerance"] else ""
        answer = f"{number(question['number'])}{tolerance}"
    after = " The charts below show why." if question.get("reveal") == "after" else ""
    return (f'<section class="question"><p><strong>Question:</strong> {escape(question["text"])}</p>{asked}'
            f"<details><summary>Show the answer</summary><p>The answer: {answer}.{after}</p></details></section>")


def stop_html(site: Site, i: int, pages: Sequence[str]) -> str:
    """Stop i's page: the bar (the lesson, the place, back and next), the note, the switch between its
    variants, each variant's drawing, and the way to the live app."""
    stop, base = site.stops[i], site.base
    charts: list[dict] = []
    parts = [f'<div class="note">{markdown(stop.note, base)}</div>' if stop.note else "",
             question_html(stop.question) if stop.question else "",
             f'<p class="source">Numbers from: {escape(stop.source)}</p>']
    if stop.cannot:
        parts.append(f'<div class="alert warning">This page cannot be exported: {escape(stop.cannot)}</div>')
    if len(stop.variants) > 1:
        names = list(stop.variants[0].values)
        buttons = "".join(f'<button type="button" data-key="{escape(_key(v.values))}">'
                          f'{escape(", ".join(str(x) for x in v.values.values()))}</button>' for v in stop.variants)
        parts.append(f'<div class="switch"><span>{escape(" and ".join(names))}:</span>{buttons}</div>')
    for name in stop.fixed:
        parts.append(f'<p class="view">The lesson lets students change the {escape(name)}; this page shows the '
                     f"lesson's value only (too many to draw each here): the live app changes it.</p>")
    for j, v in enumerate(stop.variants):
        body = _anchored("".join(render(node, charts, base) for node in v.body), f"v{j}-")
        view = f'<p class="view">{escape(v.view)}</p>' if v.view else ""
        default = " data-default" if j == stop.default else ""
        parts.append(f'<section class="variant" data-key="{escape(_key(v.values))}"{default}>{view}{body}</section>')
    if stop.live and re.match(r"(?i)https?://", stop.live):
        parts.append(f'<p><a href="{escape(stop.live)}">Open this view live</a> (in the app, on its server)</p>')
    scripts = (f'<script src="{PLOTLY_JS}"></script><script type="application/json" id="figures">'
               f"{_figure_json(charts)}</script><script>{_SCRIPT % json.dumps(CHART_CONFIG)}</script>")
    bar = _bar(site, i, pages)
    return _document(f"{stop.title} · {site.title}", bar + "<main>" + "".join(parts) + "</main>"
                     + bar.replace('class="bar"', 'class="bar end"'), scripts)


def index_html(site: Site, pages: Sequence[str]) -> str:
    items = "".join(f'<li><a href="{stop_file(i, p)}">Stop {i + 1}: {escape(s.title)}</a>'
                    + (f'<div>{markdown(s.note, site.base)}</div>' if s.note else "") + "</li>"
                    for i, (s, p) in enumerate(zip(site.stops, pages)))
    free = ", ".join(site.free) or "nothing but the stop"
    body = (f"<main><h1>{escape(site.title)}</h1><p class=\"source\">Numbers from: {escape(site.source)}. Every "
            "chart and number was computed by gpt2viz on these weights and texts when this site was written; "
            "the charts are interactive and need no server.</p>"
            f"<p>In the live app students may change: {escape(free)}.</p><ol class=\"stops\">{items}</ol></main>")
    return _document(site.title, body)


def write(site: Site, pages: Sequence[str], out: Path) -> list[Path]:
    """The site's files in `out` (made if missing): index.html, one page per stop, plotly.js once.
    `pages`: each stop's page URL (its file's name). Returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"index.html": index_html(site, pages)}
    files |= {stop_file(i, p): stop_html(site, i, pages) for i, p in enumerate(pages)}
    written = []
    for name, html in files.items():
        (out / name).write_text(html, encoding="utf-8")
        written.append(out / name)
    (out / PLOTLY_JS).write_bytes(PLOTLY_BUNDLE.read_bytes())
    return [*written, out / PLOTLY_JS]



def zipped(folder: Path) -> bytes:
    """The site's folder as a zip, its files at the top, in name order with a fixed date: the same
    site gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(path.relative_to(folder).as_posix(), date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    return buffer.getvalue()


# the static site's files and HTML: placing sentences built elsewhere (the notices, the lesson's own notes,
# its questions)
NOT_SENTENCES = (stop_file, markdown, render, stop_html, index_html, clean, question_html)
