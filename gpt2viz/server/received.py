"""What the upload route takes: as much as this server's uploaders offer, and per session as much as
one such file.

Streamlit's `PUT /_stcore/upload_file/<session>/<file>` takes a file for any session, whether or not
its page shows an uploader, up to `server.maxUploadSize`, and keeps it in memory until the session
ends: four PUTs of 700 MB held 2 GB. The route refuses a larger body from its Content-Length before
reading it (413), so the limit is what the largest uploader offered needs: the model uploader's
700 MB where model uploads are on, the lesson uploader's 1 MB elsewhere (.streamlit/config.toml says
1 for a server that has not run the app yet). `cap_session_files` bounds what one session holds.
"""

MODEL_UPLOAD_MB = 700  # gpt2 and distilgpt2 in fp32 (548 MB, 353 MB)
LESSON_UPLOAD_MB = 1
MIB = 2**20


def max_upload_mb(model_uploads: bool) -> int:
    return MODEL_UPLOAD_MB if model_uploads else LESSON_UPLOAD_MB


def cap_session_files(manager, cap: int) -> None:
    """Make Streamlit's uploaded-file manager keep at most `cap` bytes per session: a file that would
    pass it drops the session's oldest files first (a file is at most the route's limit, so the
    newest always stays). The app moves a model upload to disk and drops a lesson file once parsed,
    so a student's files are never the ones dropped. Installed once per manager; later calls only
    change the cap."""
    if not hasattr(manager, "file_storage") or not hasattr(manager, "add_file"):
        return  # not the in-memory manager this knows
    capped = getattr(manager, "_gpt2viz_cap", None)
    if capped is not None:
        capped[0] = cap
        return
    manager._gpt2viz_cap = limit = [cap]
    add = manager.add_file

    def add_file(session_id, file):
        add(session_id, file)
        held = list(manager.file_storage.get(session_id, {}).items())  # oldest first
        total = sum(len(rec.data) for _, rec in held)
        for file_id, rec in held[:-1]:
            if total <= limit[0]:
                break
            if file_id != file.file_id:
                manager.remove_file(session_id, file_id)
                total -= len(rec.data)

    manager.add_file = add_file
