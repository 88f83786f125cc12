"""On the Attention page: one cell of the score map taken apart. Query i and key j (URL-bound, so a
link or a lesson stop can open on a cell) give q_i and k_j as dh coordinates, their products sorted,
the sum, the division by √dh, and where the score lands in its row's softmax."""

import streamlit as st

from .. import plots
from ..analysis.dot import score_parts
from ..model.trace import Trace
from ..teaching import dot_text as say
from .anatomy import plot
from .links import anchor
from .state import Selection, number
from .text import code_span


def caveat(sel: Selection) -> None:
    """Beside a pattern: where a head reads is not whether it matters (the misreading of attention
    maps that the literature reports most), with the two pages that measure the latter."""
    b, h = sel.block, sel.head
    share = anchor(f"head {b}.{h}'s share of the answer", "attribution")
    knock = anchor(f"knock head {b}.{h} out", "whatif", part="head", method="zero")
    st.markdown(f":material/warning: A large weight shows where a head reads, not that what it reads matters "
                f"for the prediction: see {share} or {knock}.", unsafe_allow_html=True)


def pick(trace: Trace, block: int, head: int) -> tuple[int, int]:
    """(query i, key j): by default the last query and the key it weighs most."""
    cols = st.columns(2)
    i = number(cols[0], "Query i (a row of the map)", 0, trace.T - 1, trace.T - 1, key="qi",
               help="0-based among this step's queries (decode computes one)")
    row = trace.get("attn.pattern", block, head=head, queries=slice(i, i + 1))[0, 0]  # [L]
    j = number(cols[1], "Key j (a column)", 0, trace.L - 1, int(row.argmax()), key="kj",
               help="0-based among the keys this step reads (the cache's first in decode)")
    return i, j


def section(sel: Selection, trace: Trace, queries: list[str], keys: list[str], offset: int) -> None:
    b, h = sel.block, sel.head
    st.subheader("The dot product behind one score")
    i, j = pick(trace, b, h)
    s = trace.memo(("score parts", b, h, i, j), lambda: score_parts(trace, b, h, i, j))
    dh = s.d_head
    row = trace.get("attn.pattern", b, head=h, queries=slice(i, i + 1))[0, 0]  # [L]
    plot(plots.token_lines(row, queries, keys, i, f"Query {offset + i} {queries[i]}: a line to every key it reads, "
                           "as thick as its weight", query_offset=offset), f"block {b} head {h}")
    plot(plots.stacked_vectors([(f"q: query {offset + i} {queries[i]}", s.q), (f"k: key {j} {keys[j]}", s.k)],
                               f"Query {offset + i} and key {j} of block {b} head {h}, coordinate by coordinate",
                               x_title=f"coordinate c (of dh = {dh})"), f"block {b} head {h}")
    plot(plots.sorted_products(s.q, s.k, f"The {dh} products q[c] · k[c], largest first, and their running sum"),
         f"block {b} head {h}")
    st.markdown(say.agree_cancel(s.products.tolist(), s.dot))
    st.latex(say.score_equation(offset + i, j, s.dot, dh))
    st.caption(say.recorded(s.recorded, code_span(f"blocks.{b}.attn.scores")))
    st.markdown(say.in_softmax(offset + i, j, s.masked, s.readable, s.weight, s.rank, s.best_other, s.scaled))
