"""Merge and project: heads side by side, then W_O back into the residual stream."""


from gpt2viz import plots
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import draw_diagram

SHOWS = ("blocks.{b}.attn.z", "blocks.{b}.attn.merged", "blocks.{b}.attn.out")

page = anatomy.header("block.attn.merge", SHOWS)
draw_diagram("merge", page.sel, "merge", page.diagram)
trace, b = page.trace, page.sel.block
q, _, offset = axis_tokens(trace)
if trace.T == 1:  # decode: the new token's heads becoming one vector, then Δattn
    merged, out = trace.get("attn.merged", b)[0, 0], trace.get("attn.out", b)[0, 0]  # [d], [d]
    plot(plots.heads_merged(trace.get("attn.z", b)[0, :, 0], merged,  # z [nh, dh]
                            f"Block {b}, the new token {q[0]!r}: z (H) of every head → merge(H)"))
    plot(plots.stacked_vectors([("merge(H)", merged), ("Δattn = merge(H) W_O + b_O", out)],
                               f"Block {b}: the projection W_O"))
else:
    anatomy.side_by_side(
        plots.position_norms(trace.get("attn.merged", b)[0], q, f"‖merged heads‖ · block {b}", offset=offset),
        plots.position_norms(trace.get("attn.out", b)[0], q, f"‖Δattn‖ · block {b}", offset=offset))
plot(plots.histogram(trace.get("attn.out", b), f"Values of Δattn · block {b}", "value"))
anatomy.footer(page)
