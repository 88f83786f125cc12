"""Putting user-derived text (tokens) into Markdown safely: as code spans, never as markup."""

import html
import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def plain(text: str) -> str:
    """`text` with every Markdown-significant character escaped: shown as typed, never as a link,
    an image or markup."""
    return _MARKDOWN.sub(r"\\\1", text)


def code_span(text: str) -> str:
    """`text` as a Markdown code span that shows it literally, backticks included."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(text) -> str:
    """`text` inside HTML that Streamlit's Markdown draws (unsafe_allow_html): escaped as HTML, and its
    $ (math) and : (":icon:" codes), which Markdown reads even there, as character references."""
    return html.escape(str(text)).replace("$", "&#36;").replace(":", "&#58;")
