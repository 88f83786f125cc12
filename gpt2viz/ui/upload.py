"""The sidebar's upload of a model.safetensors: offered where the operator allows it (the rule of
downloads, `serving.operator_allows`), moved to disk as soon as it arrives, parsed one at a time.

Streamlit receives a file into memory (its uploaded-file manager) before the script sees it, and
the widget's value (an UploadedFile, a BytesIO over the same bytes) stays in the session's state.
Once the bytes are on disk (`Uploads.receive`), `_forget` removes the file from the manager (as
Streamlit's own chat input does with what it has read) and closes the UploadedFile, which lets go
of its buffer: nothing of the session holds the bytes any more. On later runs the widget's value is
a `DeletedFile` with the same file id (the browser still shows the file), which says the session's
upload is still chosen; an empty uploader says it was removed.
"""

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit import config, runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ..model.folder import load_weights
from ..model.weights import checkpoint_config
from ..server.received import MODEL_UPLOAD_MB, cap_session_files, max_upload_mb, received_files_mb
from ..server.uploads import MIB, Held, UploadError, Uploads, uploads_allowed
from .cache import LoadedModel, check_fits, trace_cache
from .errors import serving
from .visitor import server_address

UPLOAD_MAX_MB = MODEL_UPLOAD_MB  # the route's limit where model uploads are on (upload_limits)
HELD = "_upload_held"  # the session's claim on its uploaded file (never the bytes)
REFUSED = "_upload_refused"  # (file id, message) of a refused upload, said again while it is shown
NO_UPLOADS = ("Uploads are off on this server: it is shared, and each upload takes memory from every "
              "student (the operator turns them on with GPT2VIZ_ALLOW_UPLOAD=1). Real weights come from "
              "the Hugging Face cache, filled beforehand with `python -m gpt2viz download gpt2`.")


def uploads_offered() -> bool:
    return uploads_allowed(server_address())


def upload_limits() -> None:
    """The upload route takes what this server's uploaders offer (server/received.py): 700 MB where
    model uploads are on, the lesson uploader's 1 MB elsewhere; a session holds one such file, all
    sessions together GPT2VIZ_RECEIVED_FILES_MB. Set on
    every run (cheap): the route reads the option on each request. Not under AppTest (errors.serving)."""
    if not serving():
        return
    # the server's rule, not this visitor's (the option is the whole server's): the largest any visitor needs
    model_uploads = uploads_allowed(st.get_option("server.address"))
    mb = max_upload_mb(model_uploads)
    if config.get_option("server.maxUploadSize") != mb:
        config.set_option("server.maxUploadSize", mb)
    cap_session_files(runtime.get_instance().uploaded_file_mgr, mb * MIB, received_files_mb(model_uploads) * MIB)


def read_once(file, key: str, max_mb: int, parse: Callable[[bytes, str], Any]) -> Any:
    """The file of uploader `key`, parsed once: its own limit (`max_mb`) held here, on the server (the
    route takes up to the largest uploader's), parsed when it arrives and its bytes then dropped from
    the session; later runs get the parse back by the file's id while the uploader shows it. None
    while it shows none; raises what `parse` raised (a ValueError: one line), again on later runs."""
    memo = f"_read_{key}"
    if file is not None:
        try:
            if file.size > max_mb * MIB:
                raise UploadError(f"{file.name} is {file.size / MIB:,.1f} MB; this uploader takes files of up to "
                                  f"{max_mb} MB")
            kept = (file.file_id, parse(file.getvalue(), file.name), None)
        except ValueError as e:  # the message and type, not the exception: its frames hold the bytes
            kept = (file.file_id, None, (type(e), str(e)))
        finally:
            _forget(file, key)
        st.session_state[memo] = kept
    kept = st.session_state.get(memo)
    if kept is None or kept[0] != getattr(st.session_state.get(key), "file_id", None):
        st.session_state.pop(memo, None)  # the uploader was emptied
        return None
    if kept[2] is not None:
        raise kept[2][0](kept[2][1])
    return kept[1]


@st.cache_resource
def upload_store() -> Uploads:
    """The server's uploads (GPT2VIZ_UPLOAD_BUDGET_MB, GPT2VIZ_UPLOAD_DISK_MB)."""
    return Uploads.from_env()


def uploaded_weights(box) -> LoadedModel | None:
    """The uploader; the session's uploaded model, or None while there is none. Raises ValueError
    (one line) for an upload that cannot be used."""
    file = box.file_uploader("model.safetensors", type=["safetensors"], key="upload", max_upload_size=UPLOAD_MAX_MB)
    # Streamlit writes any limit above 512 MB as "1GB per file": say the cap ourselves
    box.html("<style>[data-testid='stFileUploaderDropzoneInstructions'] {display: none}</style>")
    box.caption(f"Up to {UPLOAD_MAX_MB} MB per file: gpt2 and distilgpt2 in fp32. "
                "Larger checkpoints load from the Hugging Face cache.")
    store = upload_store()
    store.sweep(_session_alive)
    if file is not None:
        return _receive(store, file, box)
    shown = getattr(st.session_state.get("upload"), "file_id", None)  # a DeletedFile while a read file is shown
    held: Held | None = st.session_state.get(HELD)
    if held is not None and held.file_id != shown:  # the student removed it from the uploader
        _drop_held()
        held = None
    refused = st.session_state.get(REFUSED)
    if refused is not None and refused[0] == shown:
        raise UploadError(refused[1])
    if held is None:
        return None
    return _model(store, held, box)


def _receive(store: Uploads, file, box) -> LoadedModel:
    """A file that just arrived: to disk, out of the session's memory, then its model."""
    _drop_held()
    st.session_state.pop(REFUSED, None)
    try:
        held = store.receive(file.getvalue(), file.name, owner=_session_id(), file_id=file.file_id)
    except UploadError as e:
        st.session_state[REFUSED] = (file.file_id, str(e))
        raise
    finally:
        _forget(file)
    try:
        weights = _model(store, held, box)
    except Exception as e:  # refused or unreadable: nothing of it stays
        held.release()
        st.session_state[REFUSED] = (held.file_id, str(e) if isinstance(e, ValueError) else
                                     f"Could not use these weights: {type(e).__name__}")
        raise
    st.session_state[HELD] = held
    return weights


def _model(store: Uploads, held: Held, box) -> LoadedModel:
    waiting = box.empty()

    def wait() -> None:
        waiting.info("Another upload is being checked; this one waits its turn…", icon=":material/hourglass:")

    with st.spinner("Checking the uploaded weights…"):
        weights, rebuilt = store.model(held, lambda path: _build(path, held), wait)
    waiting.empty()
    if rebuilt:
        box.caption(f"Your upload's model had been unloaded after {store.idle_seconds / 60:.0f} idle minutes to "
                    "make room for another upload; it was rebuilt from your file.")
    return weights


def _build(path: Path, held: Held) -> LoadedModel:
    check_fits(checkpoint_config(path), trace_cache().budget)  # its context, as the folder path checks it
    loaded = load_weights(path)  # a file alone, as the folder path reads one: GPT-2's vocabulary fits its rows
    return LoadedModel(loaded.model, ("upload", held.digest),
                       f"{loaded.model.config.name} from an upload ({held.size / MIB:,.0f} MiB)", False,
                       tuple(loaded.notes))


def _forget(file, key: str = "upload") -> None:
    """Drop Streamlit's copies of an uploaded file's bytes: the manager's record, and the
    UploadedFile objects over them (closing a BytesIO releases its buffer): the one the widget
    returned and the one its state (`key`) keeps, a second object over the same bytes."""
    ctx = get_script_run_ctx()
    manager = getattr(ctx, "uploaded_file_mgr", None)
    if ctx is not None and hasattr(manager, "remove_file"):
        manager.remove_file(session_id=ctx.session_id, file_id=file.file_id)
    for held_by in (file, st.session_state.get(key)):
        if isinstance(held_by, io.BytesIO):
            held_by.close()


def _drop_held() -> None:
    held = st.session_state.pop(HELD, None)
    if held is not None:
        held.release()


def _session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def _session_alive(session_id: str) -> bool:
    """Whether a session may still come back: connected, or disconnected but kept for a while by
    Streamlit's session storage (a dropped connection resumes it). Without a runtime (tests), yes."""
    if not runtime.exists():
        return True
    manager = getattr(runtime.get_instance(), "_session_mgr", None)
    if manager is not None and hasattr(manager, "get_session_info"):
        return manager.get_session_info(session_id) is not None
    return runtime.get_instance().is_active_session(session_id)
