"""Give memory back to the operating system after a run.

glibc keeps freed memory in its arenas (one per thread that allocated it, and Streamlit runs each
session's script on its own thread), so a server's RSS grows towards the sum of every thread's
peak. After a run's tensors are freed, malloc_trim(0) returns the free pages of every arena.
Without glibc (macOS, musl) this does nothing.
"""

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # mallopt's parameters (malloc.h)
LARGE = 2**30  # bytes: a block below this comes from the heap, and freed blocks stay there until a trim


@functools.cache
def _libc(function: str):
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return getattr(libc, function) if libc is not None and hasattr(libc, function) else None
    except OSError:
        return None


# Set in the environment of a server's process before it starts (`gpt2viz app`, the class server's
# processes): mallopt's one arena, once Streamlit runs, binds only threads not yet given one, and
# each session's script runs on a thread of its own; glibc reads this at the process's start.
ONE_ARENA_ENV = ("MALLOC_ARENA_MAX", "1")


@functools.cache
def reuse_freed_memory_within_a_run() -> bool:
    """Let a run reuse the memory it freed instead of asking the kernel for fresh pages: by default
    glibc maps every block over 32 MiB (an attention pattern at 1,024 tokens is 48 MiB) on its own
    and unmaps it when freed, and every thread's arena gives its free pages back soon, so each new
    tensor costs a page fault per 4 KiB. Measured on a training run at 1,024 tokens on gpt2: 2.6
    million faults and 9-11 s; with large blocks from one heap, 1.2 million and 7.4 s (even trimmed
    after every run; the trace cache trims once it idles). One arena for every thread, so that a session's
    script thread reuses what the last one freed; Python's small objects do not use malloc's arenas.
    Once per process; False without glibc."""
    mallopt = _libc("mallopt")
    if mallopt is None:
        return False
    return all(mallopt(param, value) == 1
               for param, value in ((M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, LARGE), (M_TRIM_THRESHOLD, LARGE)))


class _Mallinfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h, glibc 2.33 on): every field a size_t."""
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def freed_bytes_held() -> int | None:
    """The bytes malloc holds free for the next allocations (freed blocks and the heap's unused top:
    mallinfo2's fordblks), which a trim would give back; None without glibc's mallinfo2."""
    info = _libc("mallinfo2")
    if info is None:
        return None
    info.restype = _Mallinfo2
    return int(info().fordblks)


def release_freed_memory() -> bool:
    """malloc_trim(0) where glibc has it; whether it ran."""
    trim = _libc("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True
