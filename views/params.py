"""Parameter accounting: every size, every component, the arithmetic; checkpoint cross-check."""

import streamlit as st

from gpt2viz import plots
from gpt2viz.anatomy.params import accounting_csv
from gpt2viz.teaching import page_text
from gpt2viz.ui import present
from gpt2viz.ui.anatomy import page_question, plot, selection
from gpt2viz.ui.layout import wide_table
from gpt2viz.ui.params_view import (
    checkpoint_check,
    component_rows,
    report_for,
    shapes_and_costs,
    size_picker,
    totals_table,
)

sel = selection()
st.title("Parameter accounting")
page_question("params")
with present.folded(sel.present):  # projected, the chart starts in the first screen
    st.markdown("Every count is computed from the config (closed form), checked against a model's parameters "
                "and, for a checkpoint, against its safetensors header alone. The tied output matrix adds 0.")
    if not sel.present:
        st.subheader("Every size")
    st.dataframe(totals_table(), hide_index=True, width="stretch")
cfg = size_picker(sel.config)
if cfg is None:
    st.stop()
size = cfg.name
report = report_for(cfg)
leaves = [c for c in report["components"]
          if c["rows"] and not any(o["parent"] == c["id"] for o in report["components"])]


def breakdown() -> None:
    plot(plots.param_breakdown([c["title"] + (f" ×{c['instances']}" if c["instances"] > 1 else "") for c in leaves],
                               [c["total"] for c in leaves], f"{size}: where the parameters are",
                               wrap=not sel.present),
         sizes_of=size)  # the size chosen here, not the sidebar's weights and text


if sel.present:  # projected, the picture first; the table it sums under it
    breakdown()
st.subheader(page_text.params_headline(size, report["total"], list(cfg.variant())))
st.markdown(page_text.params_formula(report["formula"]["symbolic"], report["formula"]["calculation"], report["total"]))
wide_table(component_rows(report), height=520)
if not sel.present:
    breakdown()
st.download_button("Accounting table (CSV)", accounting_csv(report), file_name=f"{size}-parameters.csv",
                   mime="text/csv", icon=":material/download:")
st.subheader("Other totals you will meet")
for row in report["other_totals"]:
    value = f"**{row['value']:,}**" if row["value"] is not None else ""
    calc = f": {row['calculation']} = {value}" if row["calculation"] else ""
    st.markdown(f"- **{row['label']}**{calc}  \n  {row['explanation']}")
st.subheader("Shapes, memory and FLOPs per mode")
shapes_and_costs(cfg)
st.subheader("Checkpoint cross-check")
checkpoint_check(sel)
