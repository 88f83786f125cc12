"""Data and the checkpoint section for the parameter accounting page."""

import csv
import io

import streamlit as st

from ..config import PRESETS
from ..params import accounting_report


@st.cache_data(max_entries=8)
def report_for(size: str, checkpoint: str | None = None, weights_key: tuple | None = None) -> dict:
    """The accounting report; `weights_key` (path, mtime, size) makes a replaced file a new entry."""
    return accounting_report(size, checkpoint=checkpoint)


def totals_table() -> list[dict]:
    rows = []
    for name, cfg in PRESETS.items():
        r = report_for(name)
        rows.append({"model": name, "blocks": cfg.n_layer, "heads": cfg.n_head, "d": cfg.n_embd,
                     "parameters": f"{r['total']:,}", "fp32 weights": f"{r['total'] * 4:,} B"})
    return rows


def component_rows(report: dict) -> list[dict]:
    out = []
    for c in report["components"]:
        for row in c["rows"] or [{"name": "(owns no weights)", "calculation": "", "parameters": 0, "tensors": []}]:
            out.append({"component": c["title"], "id": c["id"], "row": row["name"], "calculation": row["calculation"],
                        "parameters": f"{row['parameters']:,}", "per instance": f"{c['per_instance']:,}",
                        "instances": c["instances"], "total": f"{c['total']:,}",
                        "checkpoint tensors": ", ".join(row["tensors"])})
    return out


def accounting_csv(report: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["model", "component_id", "component", "row", "calculation", "parameters", "per_instance",
                "instances", "total", "tensors"])
    for c in report["components"]:
        for row in c["rows"]:
            w.writerow([report["model"], c["id"], c["title"], row["name"], row["calculation"], row["parameters"],
                        c["per_instance"], c["instances"], c["total"], " ".join(row["tensors"])])
    return buf.getvalue()


def checkpoint_check(sel) -> None:
    key = sel.weights.key
    if sel.weights.path is None:
        st.markdown("Load a checkpoint (Hugging Face cache or a local file) in the sidebar to count its "
                    "tensors from the header alone and reconcile them with the model, tensor by tensor. "
                    "The command line does the same: `python -m gpt2viz params --checkpoint model.safetensors`.")
        return
    report = report_for(sel.config.name if sel.config.name in PRESETS else "gpt2", sel.weights.path, key)
    ck = report["checkpoint"]
    verdict = "✅ matches" if ck["matches"] else "❌ does not match"
    st.markdown(f"`{ck['path']}`: **{ck['total']:,}** parameters in the header, {ck['expected_total']:,} expected "
                f"for this shape: {verdict}.")
    st.dataframe([{k: t[k] for k in ("key", "dtype", "shape", "parameters", "component", "status")}
                  for t in ck["tensors"]], hide_index=True, height=300)
    for b in ck["buffers"][:3]:
        st.caption(f"{b['key']}: {b['note']}")
    for problem in ck["mismatches"]:
        st.error(problem)
