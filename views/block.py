"""The Transformer block: two residual updates, x' = x + attn(LN1(x)), then x' + mlp(LN2(x'))."""


from gpt2viz import plots
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import demo_beside, draw_diagram
from gpt2viz.ui.overview import residual_norm_series

SHOWS = ("blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "blocks.{b}.attn.out",
         "blocks.{b}.mlp.out")
STREAM = [("xₙ (resid_pre)", "resid_pre"), ("+ Δattn (attn.out)", "attn.out"), ("= x′ₙ (resid_mid)", "resid_mid"),
          ("+ Δmlp (mlp.out)", "mlp.out"), ("= xₙ₊₁ (resid_post)", "resid_post")]

page = anatomy.header("block", SHOWS)
sel, trace, b = page.sel, page.trace, page.sel.block
q, _, offset = axis_tokens(trace)
labels, norms = residual_norm_series(trace)
if trace.T == 1:  # decode: the one position's stream and the two updates added to it
    plot(plots.stacked_vectors([(label, trace.get(short, b)[0, 0]) for label, short in STREAM],
                               f"Block {b} on the new token {q[0]!r}: the stream and its two updates"))
    demo_beside("block", sel)
else:
    attn, mlp = trace.get("attn.out", b)[0], trace.get("mlp.out", b)[0]  # [T, d] each
    anatomy.side_by_side(plots.position_norms(attn, q, f"‖Δattn‖ added by block {b}", offset=offset),
                         plots.position_norms(mlp, q, f"‖Δmlp‖ added by block {b}", offset=offset))
    anatomy.notice(notices.updates_notice(attn.norm(dim=-1), mlp.norm(dim=-1), notices.weights_kind(sel.weights), b,
                                          q))
    demo_beside("block", sel)
    x, mid = trace.get("resid_pre", b)[0], trace.get("resid_mid", b)[0]  # [T, d] each
    anatomy.side_by_side(  # what each update is beside the stream it is added to: the running sum's steps
        plots.position_values(attn.norm(dim=-1) / x.norm(dim=-1), q, f"‖Δattn‖ / ‖xₙ‖ · block {b}", "ratio",
                              offset=offset),
        plots.position_values(mlp.norm(dim=-1) / mid.norm(dim=-1), q, f"‖Δmlp‖ / ‖x′ₙ‖ · block {b}", "ratio",
                              offset=offset))
    anatomy.worked(notices.block_worked(x[-1], attn[-1], mid[-1], mlp[-1], trace.get("resid_post", b)[0, -1],
                                     offset + trace.T - 1))
plot(plots.residual_norms(norms, labels, q, "‖residual stream‖ through the blocks", offset=offset))
anatomy.notice(notices.residual_notice(norms, labels))
draw_diagram("block", sel, "block")
anatomy.footer(page)
