"""Tokens in Markdown are code spans: markup in them is shown, not rendered."""

import pytest

from gpt2viz.ui.text import code_span, plain


@pytest.mark.parametrize("token,expected", [("␣the", "`␣the`"), ("a`b", "``a`b``"), ("`", "`` ` ``"),
                                            ("![x](http://example.invalid/i.png)", "`![x](http://example.invalid/i.png)`"),
                                            ("<script>", "`<script>`")])
def test_code_span(token, expected):
    assert code_span(token) == expected


def test_plain_escapes_links_and_images():
    assert plain("![x](http://t.invalid/a.png)") == r"\!\[x\]\(http\://t\.invalid/a\.png\)"
    assert plain("tensor 'h.0.attn'") == r"tensor 'h\.0\.attn'"
