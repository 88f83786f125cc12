"""Calls made at the same moment from several threads, as sessions of the app make them."""

import threading


def together(*calls, timeout: float = 60.0) -> list:
    """Start every call in its own thread, wait for all, and return their results in call order."""
    results = [None] * len(calls)

    def run(i):
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return results
