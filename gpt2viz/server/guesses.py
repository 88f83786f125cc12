"""A server-wide limit on wrong lecturer passwords, with a log line for each.

Each session already waits a second after a wrong guess, but thirty sessions guess thirty times a
second. This counts wrong guesses over the whole server: beyond GPT2VIZ_PASSWORD_GUESSES (10) in a
minute, every guess is refused unchecked until the oldest one is a minute old, and the operator
reads each wrong guess in the server's log (signing from the command line still works meanwhile).
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
    """At most `allowed` wrong guesses per `window` seconds, all sessions together."""

    def __init__(self, allowed: int = GUESSES, window: float = WINDOW_S, clock=time.monotonic):
        self.allowed, self.window, self.clock = allowed, window, clock
        self._wrong: deque[float] = deque()
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Seconds until a guess may be checked again (0: now)."""
        with self._lock:
            now = self.clock()
            while self._wrong and now - self._wrong[0] >= self.window:
                self._wrong.popleft()
            return 0.0 if len(self._wrong) < self.allowed else self.window - (now - self._wrong[0])

    def failed(self, who: str) -> None:
        with self._lock:
            self._wrong.append(self.clock())
            n = len(self._wrong)
        log.warning("wrong lecturer password (session %s): %d wrong in the last %.0f s, %d allowed",
                    who, n, self.window, self.allowed)
