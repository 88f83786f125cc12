"""Tokens drawn as chips: the text as GPT-2 cuts it, legible (a mark for a leading space and for a
newline, byte pieces as bytes), with the token id on hover. HTML for st.markdown."""

from html import escape

from ..model.tokenizer import readable

STYLE = ("display:inline-block;margin:2px 3px;padding:2px 6px;border:1px solid #b8bcc8;border-radius:4px;"
         "font-family:monospace;font-size:1.05rem;background:rgba(128,132,149,0.08)")


def token_chips(ids, limit: int = 300) -> str:
    """One chip per token (the first `limit`), its id in the tooltip; the rest counted."""
    chips = "".join(f'<span style="{STYLE}" title="id {int(t)}">{escape(readable(int(t)))}</span>'
                    for t in ids[:limit])
    more = f" … and {len(ids) - limit:,} more" if len(ids) > limit else ""
    return f'<div style="line-height:2.1">{chips}{more}</div>'
