"""Overview: the model drawn, each part a link to its page, with this text's shapes and the parameter
counts; the prediction at the end and the residual stream on the way."""


from gpt2viz import plots
from gpt2viz.model import ranking
from gpt2viz.teaching import notices
from gpt2viz.ui import anatomy
from gpt2viz.ui.anatomy import axis_tokens, plot
from gpt2viz.ui.links import draw_diagram
from gpt2viz.ui.overview import residual_norm_series, top_next_tokens

SHOWS = ("blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "logits")



def drawn_model(sel, box) -> None:
    """Before the run: the model drawn needs only the config and the text's length (none without a text)."""
    if sel.text_error:
        return
    box.markdown("Type a text in the sidebar; every page shows what GPT-2 computes on it. Click a part of "
                 "the model to open it; the shapes are this text's, in this mode.")
    draw_diagram("overview", sel, "overview", box)


page = anatomy.header("model", SHOWS, before_run=drawn_model)
sel, trace = page.sel, page.trace
probs, tokens = top_next_tokens(trace, k=10)
labels, norms = residual_norm_series(trace)
q, _, offset = axis_tokens(trace)
plot(plots.topk_tokens(probs, tokens, f"Next token after {trace.tokens[-1]!r}"))
anatomy.notice(notices.output_notice(probs[0], tokens[0], sel.config.vocab_size, notices.weights_kind(sel.weights),
                                     ranking.tied_at_top(trace.at("logits", -1)[0])))
plot(plots.residual_norms(norms, labels, q, "Residual stream norm through the blocks", offset=offset))
anatomy.notice(notices.residual_notice(norms, labels))
anatomy.footer(page)
