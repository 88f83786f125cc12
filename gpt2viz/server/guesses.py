"""A limit on wrong lecturer passwords per session and per address, with a log line for each.

Each session already waits a second after a wrong guess. Beyond GPT2VIZ_PASSWORD_GUESSES (10) wrong
guesses in a minute from one address, or half as many (at least one) from one session, that
address's or session's guesses are refused unchecked until its oldest wrong one is a minute old. A
server-wide count would let one student lock the lecturer out by failing on purpose: counted per
address, the lecturer's own correct password opens from their machine whatever another machine
does (behind one NAT address a class shares the address's count; signing from the command line,
`python -m gpt2viz lesson link`, works meanwhile). The operator reads each wrong guess in the
server's log, with its session and address.
"""

import logging
import os
import threading
import time
from collections import deque

GUESSES_ENV = "GPT2VIZ_PASSWORD_GUESSES"
GUESSES = 10
WINDOW_S = 60.0
log = logging.getLogger(__name__)


def guesses_allowed(env=os.environ) -> int:
    n = env.get(GUESSES_ENV, "")
    return int(n) if n.isdigit() and int(n) > 0 else GUESSES


class GuessLimit:
    """At most `allowed` wrong guesses per `window` seconds from one address, and `per_session` (half
    of `allowed`, at least one) from one session."""

    def __init__(self, allowed: int = GUESSES, window: float = WINDOW_S, clock=time.monotonic,
                 per_session: int | None = None):
        self.allowed, self.window, self.clock = allowed, window, clock
        self.per_session = per_session or max(1, allowed // 2)
        self._wrong: dict[tuple[str, str], deque[float]] = {}  # ("address" or "session", who) -> times
        self._lock = threading.Lock()

    def _forget(self, now: float) -> None:
        for key in list(self._wrong):
            times = self._wrong[key]
            while times and now - times[0] >= self.window:
                times.popleft()
            if not times:
                del self._wrong[key]

    def wait(self, session: str = "", address: str = "") -> float:
        """Seconds until this session's guess from this address may be checked (0: now)."""
        with self._lock:
            now = self.clock()
            self._forget(now)
            waits = [0.0]
            for key, allowed in ((("session", session), self.per_session), (("address", address), self.allowed)):
                times = self._wrong.get(key, ())
                if len(times) >= allowed:
                    waits.append(self.window - (now - times[-allowed]))
            return max(waits)

    def failed(self, session: str = "", address: str = "") -> None:
        with self._lock:
            now = self.clock()
            for key in (("session", session), ("address", address)):
                self._wrong.setdefault(key, deque()).append(now)
            n = len(self._wrong[("address", address)])
        log.warning("wrong lecturer password (session %s, address %s): %d wrong from that address in the last "
                    "%.0f s, %d allowed", session, address, n, self.window, self.allowed)
