"""How much text a link can carry: a text box bound to the URL writes its whole text into the address,
and a link that is too long is refused before the app sees it (Streamlit's server answers "Invalid
HTTP request" past 64 KB of request head; nginx, in front of a class server, 414 past its request-line
buffer: deploy/nginx.conf.template gives it 32 KB). A text is kept within LINK_TEXT_CHARS characters
as the address writes them, so that the address, a reload and a shared link show the text the page ran.

The address writes a text as a form field (the browser's URLSearchParams): a letter, a digit or one of
`*-._` as itself, a space as `+`, any other character as `%XX` for each byte of its UTF-8: 3 characters
for other ASCII, 6 to 12 for the rest (`的` is 9). No torch, no Streamlit: the sidebar, the links and
the tests share it.
"""

import bisect
import itertools
import string

# two texts (the sidebar's, and Compare and patch's text B) and the view's other values fit nginx's 32 KB;
# 1,024 tokens of English take about 6,000, of Chinese about 9,000
LINK_TEXT_CHARS = 12_000
_ITSELF = frozenset(string.ascii_letters + string.digits + "*-._ ")


def char_length(c: str) -> int:
    """Characters the address writes for one character of a text."""
    return 1 if c in _ITSELF else 3 * len(c.encode("utf-8", "surrogatepass"))


def link_length(text: str) -> int:
    """Characters the address writes for `text`."""
    return sum(char_length(c) for c in text)


def link_prefix(text: str, limit: int = LINK_TEXT_CHARS) -> str:
    """The longest start of `text` the address writes in at most `limit` characters (all of it if it fits)."""
    ends = list(itertools.accumulate(char_length(c) for c in text))  # ends[i]: text[:i + 1]'s length
    return text[:bisect.bisect_right(ends, limit)]
