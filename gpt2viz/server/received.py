"""What the upload route takes: as much as this server's uploaders offer, and per session as much as
one such file.

Streamlit's `PUT /_stcore/upload_file/<session>/<file>` takes a file for any session, whether or not
its page shows an uploader, up to `server.maxUploadSize`, and keeps it in memory until the session
ends: four PUTs of 700 MB held 2 GB. The route refuses a larger body from its Content-Length before
reading it (413), so the limit is what the largest uploader offered needs: the model uploader's
700 MB where model uploads are on, the lesson uploader's 1 MB elsewhere (.streamlit/config.toml says
1 for a server that has not run the app yet). `cap_session_files` bounds what one session holds,
and what all sessions hold together: a script may open many sessions (one per websocket) and send
each its file, so the server drops its oldest received files, whoever sent them, past
GPT2VIZ_RECEIVED_FILES_MB (default: 64 MiB where only lesson files arrive, two model files where
model uploads are on). The app parses a lesson file and moves a model file to disk on the run that
follows its arrival, so a file dropped this way had been waiting unread.
"""

import os

MODEL_UPLOAD_MB = 700  # gpt2 and distilgpt2 in fp32 (548 MB, 353 MB)
LESSON_UPLOAD_MB = 1
MIB = 2**20
RECEIVED_ENV = "GPT2VIZ_RECEIVED_FILES_MB"
RECEIVED_MB = {False: 64, True: 2 * MODEL_UPLOAD_MB}  # by whether model uploads are on


def max_upload_mb(model_uploads: bool) -> int:
    return MODEL_UPLOAD_MB if model_uploads else LESSON_UPLOAD_MB


def received_files_mb(model_uploads: bool, env=os.environ) -> int:
    """What all sessions together may hold in received files, in MiB: the operator's setting, at
    least one file's worth (the newest file always stays)."""
    n = env.get(RECEIVED_ENV, "")
    chosen = int(n) if n.isdigit() and int(n) > 0 else RECEIVED_MB[model_uploads]
    return max(chosen, max_upload_mb(model_uploads))


def cap_session_files(manager, cap: int, server_cap: int | None = None) -> None:
    """Make Streamlit's uploaded-file manager keep at most `cap` bytes per session and `server_cap`
    bytes over all sessions (default: no bound beyond the sessions'): a file that would pass either
    drops the oldest files first, the session's own, then anyone's (a file is at most the route's
    limit, so the newest always stays). The app moves a model upload to disk and drops a lesson file
    once parsed, so a student's files are never the ones dropped. Installed once per manager; later
    calls only change the caps."""
    if not hasattr(manager, "file_storage") or not hasattr(manager, "add_file"):
        return  # not the in-memory manager this knows
    capped = getattr(manager, "_gpt2viz_cap", None)
    if capped is not None:
        capped[:] = [cap, server_cap]
        return
    manager._gpt2viz_cap = limit = [cap, server_cap]
    arrivals: list[tuple[str, str]] = []  # (session, file id), oldest first, over all sessions
    add = manager.add_file

    def drop_oldest(held: list, total: int, bound: int, newest: tuple[str, str]) -> None:
        for key, size in held:
            if total <= bound:
                return
            if key != newest:
                manager.remove_file(*key)
                total -= size

    def add_file(session_id, file):
        add(session_id, file)
        newest = (session_id, file.file_id)
        mine = [((session_id, f), len(rec.data)) for f, rec in list(manager.file_storage.get(session_id, {}).items())]
        drop_oldest(mine, sum(size for _, size in mine), limit[0], newest)
        if limit[1] is None:
            return
        sizes = {(s, f): len(rec.data) for s, files in list(manager.file_storage.items())
                 for f, rec in list(files.items())}
        arrivals[:] = [key for key in arrivals if key in sizes and key != newest] + [newest]
        known = set(arrivals)
        older = [key for key in sizes if key not in known]  # arrived before the caps were installed
        drop_oldest([(key, sizes[key]) for key in older + arrivals], sum(sizes.values()), limit[1], newest)

    manager.add_file = add_file
