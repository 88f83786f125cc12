"""The sidebar's offer to fetch a real GPT-2 into the Hugging Face cache, with a progress bar.

Shown only where the operator allows downloads (`download.download_allowed`: a server listening
on this machine alone, or GPT2VIZ_ALLOW_DOWNLOAD=1); a shared server never fetches on a visitor's
click unless its operator said so.
"""

import streamlit as st

from ..model.download import REPOS, DownloadError, describe, download, download_allowed
from .cache import cached_checkpoints
from .visitor import server_address

JUST_FETCHED = "_just_fetched"  # the checkpoint to select on the run after a download


def offer_download(container, expanded: bool) -> None:
    """An expander with a size picker and a download button; after a download, a rerun shows
    the new checkpoint in the picker, selected."""
    if not download_allowed(server_address()):
        return
    box = container.expander("Download a real GPT-2", icon=":material/download:", expanded=expanded)
    name = box.selectbox("Checkpoint", list(REPOS), key="download_name",
                         help="From the Hugging Face Hub into its cache on this server, where the app finds it. "
                              "gpt2 is the 124M model; the larger ones take minutes and gigabytes.")
    if not box.button(f"Download {name}", key="download_go", icon=":material/download:"):
        return
    bar = box.progress(0.0, text="Connecting to the Hugging Face Hub…")

    def progress(file: str, done: int, size: int | None) -> None:
        bar.progress(min(done / size, 1.0) if size else 0.0, text=describe(file, done, size))

    try:
        download(name, progress)
    except (DownloadError, ValueError) as e:
        bar.empty()
        box.error(str(e), icon=":material/cloud_off:")
        return
    cached_checkpoints.clear()
    st.session_state[JUST_FETCHED] = name
    st.rerun()


def select_fetched(names: list[str]) -> None:
    """Before the checkpoint picker is drawn: select what was just downloaded."""
    name = st.session_state.pop(JUST_FETCHED, None)
    if name in names:
        st.session_state["checkpoint"] = name
