"""Give memory back to the operating system after a run.

glibc keeps freed memory in its arenas (one per thread that allocated it, and Streamlit runs each
session's script on its own thread), so a server's RSS grows towards the sum of every thread's
peak. After a run's tensors are freed, malloc_trim(0) returns the free pages of every arena.
Without glibc (macOS, musl) this does nothing.
"""

import ctypes
import ctypes.util
import functools


@functools.cache
def _trim():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc.malloc_trim if libc is not None and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_freed_memory() -> bool:
    """malloc_trim(0) where glibc has it; whether it ran."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
