"""Data, the size picker (a preset or any custom config, every field in the URL) and the
checkpoint section for the parameter accounting page."""

import streamlit as st

from ..anatomy.params import accounting_report
from ..cli import shapes_report
from ..model.modes import Mode
from ..spec import costs
from ..spec.config import LIMITS, PRESETS, GPT2Config, custom_config, get_config
from ..teaching import page_text
from .layout import wide_table
from .state import number

CUSTOM = "custom"
CUSTOM_FIELDS = {"vocab_size": "Vocabulary V", "n_positions": "Context n_ctx", "n_embd": "Width d",
                 "n_layer": "Blocks n_layer", "n_head": "Heads nh", "n_inner": "MLP width d_mlp (0: 4d)"}


@st.cache_data(max_entries=8, show_spinner="Counting the parameters…")
def report_for(model: str | GPT2Config, checkpoint: str | None = None, weights_key: tuple | None = None) -> dict:
    """The accounting report of a preset or a config; `weights_key` (path, mtime, size) makes a
    replaced file a new entry."""
    return accounting_report(model, checkpoint=checkpoint)


# ---------------------------------------------------------------------------- choosing a size
THIS_MODEL = "the model in use"


def size_picker(loaded: GPT2Config) -> GPT2Config | None:
    """A preset, the loaded model's own config when it is none of them (a converted nanoGPT model:
    V = 65, no biases), or the custom config the fields describe; None (with the error shown) when
    the fields describe no GPT-2."""
    own = PRESETS.get(loaded.name) != loaded
    names = [*([THIS_MODEL] if own else []), *PRESETS, CUSTOM]
    size = st.selectbox("Size", names, index=names.index(THIS_MODEL if own else loaded.name),
                        key="params_size", bind="query-params",
                        help="custom: any GPT-2-shaped model (nanoGPT's, minGPT's, your own)")
    if size == THIS_MODEL:
        return loaded
    return get_config(size) if size != CUSTOM else custom_form()


def custom_form() -> GPT2Config | None:
    raw = {k: st.query_params.get(k) for k in CUSTOM_FIELDS}  # what a link asked for, before the widgets
    st.caption("Start from GPT-2 small's sizes and change any of them. nanoGPT's Shakespeare model: V 65, "
               "n_ctx 256, d 384, 6 blocks, 6 heads, biases off.")
    cols = st.columns(3)
    values = {}
    for i, (field, label) in enumerate(CUSTOM_FIELDS.items()):
        lo, default = (0, 0) if field == "n_inner" else (1, getattr(PRESETS["gpt2"], field))
        values[field] = number(cols[i % 3], label, lo, LIMITS[field], default, key=field)
    bias = st.toggle("Biases in every Linear and LayerNorm (nanoGPT's bias=False turns them off)", True,
                     key="bias", bind="query-params")
    tied = st.toggle("Output matrix tied to the token table (as in GPT-2 and nanoGPT)", True,
                     key="tied", bind="query-params")
    for note in _kept(link_notes(raw, values), tuple(values.values())):
        st.warning(note, icon=":material/link:")
    try:
        return custom_config(**(values | {"n_inner": values["n_inner"] or None}), bias=bias, tied=tied)
    except ValueError as e:  # d not divisible by nh, a size out of range
        st.error(f"No GPT-2 has this shape: {e}.", icon=":material/error:")
        return None


def link_notes(raw: dict, shown: dict) -> list[str]:
    """One note per link value the fields could not take (not a number, or out of range)."""
    notes = []
    for field, value in raw.items():
        try:
            same = value is None or float(value) == shown[field]
        except ValueError:
            same = False
        if not same:
            lo = 0 if field == "n_inner" else 1
            notes.append(page_text.link_bounds_note(field, value, lo, LIMITS[field], shown[field]))
    return notes


def _kept(notes: list[str], signature: tuple) -> list[str]:
    """The link is cleaned after the first run: keep its notes until the fields change."""
    if notes:
        st.session_state["_custom_link_notes"] = (notes, signature)
    kept, kept_for = st.session_state.get("_custom_link_notes", ((), None))
    return list(kept) if kept_for == signature else []


# ---------------------------------------------------------------------------- shapes and costs
def shapes_and_costs(cfg: GPT2Config) -> None:
    """Every recorded tensor of one mode (block 0 for the blocks), then weights, cache and FLOPs."""
    left, right = st.columns([2, 1])
    # a bound widget keeps its shown option in the URL: the options are shown as their URL values
    mode = left.segmented_control("Mode", [m.value for m in Mode], default=Mode.FULL.value, key="params_mode",
                                  bind="query-params") or Mode.FULL.value
    limit = min(cfg.n_positions, 1024)
    n = number(right, "Tokens (decode: cached P + 1)", 2, limit, min(8, limit), key="params_tokens")
    T, P = (None, n - 1) if mode == Mode.DECODE.value else (n, None)
    report = shapes_report(cfg, mode, T=T, P=P)
    rows = [{"tensor": t["name"], "symbolic": t["symbolic"], "shape": str(t["shape"]), "dtype": t["dtype"]}
            for t in report["tensors"] if not t["name"].startswith(("blocks.", "grad.h.", "grad.blocks."))
            or t["name"].startswith(("blocks.0.", "grad.h.0.", "grad.blocks.0."))]
    st.caption(f"B={report['B']} T={report['T']} P={report['P']} L={report['L']}; block 0 shown, every block "
               "is the same.")
    wide_table(rows, height=320)
    st.code(costs.format_costs(report["costs"]), language=None)


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


def checkpoint_check(sel) -> None:
    key = sel.weights.key
    if sel.weights.path is None:
        st.markdown("Load a checkpoint (Hugging Face cache or a local file) in the sidebar to count its "
                    "tensors from the header alone and reconcile them with the model, tensor by tensor. "
                    "The command line does the same: `python -m gpt2viz params --checkpoint model.safetensors`.")
        return
    report = report_for(sel.config.name if sel.config.name in PRESETS else "gpt2", sel.weights.path, key)
    ck = report["checkpoint"]
    st.markdown(page_text.checkpoint_line(ck["path"], ck["total"], ck["expected_total"], ck["matches"]))
    st.dataframe([{k: t[k] for k in ("key", "dtype", "shape", "parameters", "component", "status")}
                  for t in ck["tensors"]], hide_index=True, height=300)
    for b in ck["buffers"][:3]:
        st.caption(f"{b['key']}: {b['note']}")
    for problem in ck["mismatches"]:
        st.error(problem)
