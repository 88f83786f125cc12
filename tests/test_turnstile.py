"""server/turnstile.py: pages drawn `width` at a time in the order they came, a run waited for or computed
aside, and no thread in line holding what a thread inside waits for (the lesson's warm-up pattern)."""

import threading
import time

import pytest
import torch

from gpt2viz.server.trace_cache import TraceCache
from gpt2viz.server.turnstile import Turnstile

WAIT_S = 20  # generous: a loaded machine; a deadlock fails the test instead of hanging it


def started(target, *args) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def joined(*threads: threading.Thread) -> None:
    """Every thread ended within WAIT_S (else: stuck, a deadlock)."""
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive(), "deadlock"


def settle(cond, timeout: float = WAIT_S) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_width_threads_inside_the_others_in_the_order_they_came():
    gate, release = Turnstile(2), threading.Event()
    order, inside_max = [], []

    def page(i):
        with gate.turn():
            order.append(i)
            inside_max.append(gate.inside)
            release.wait(WAIT_S)

    threads = []
    for i in range(6):
        threads.append(started(page, i))
        settle(lambda: len(gate._line) + gate.inside == i + 1)  # each in line before the next comes
    assert sorted(order) == [0, 1] and gate.inside == 2 and gate.waited == 4
    release.set()
    joined(*threads)
    assert order == list(range(6)) and max(inside_max) == 2 and gate.inside == 0


def test_a_turn_held_once_per_thread_and_no_limit_at_width_zero():
    gate = Turnstile(1)
    with gate.turn(), gate.turn():  # a page drawn within a page: the same turn
        assert gate.inside == 1 and gate.holds()
    assert gate.inside == 0 and not gate.holds()
    free = Turnstile(0)
    with free.turn(), Turnstile(0).turn():
        assert free.inside == 1
    with pytest.raises(ValueError, match="0 \\(no limit\\) or more"):
        Turnstile(-1)


def test_aside_lets_the_next_one_in_and_comes_back_at_once():
    gate = Turnstile(1)
    computing, done, second_in = threading.Event(), threading.Event(), threading.Event()

    def long_run():
        with gate.turn():
            with gate.aside():  # a run: the page's turn given to the next in line meanwhile
                computing.set()
                done.wait(WAIT_S)
            assert gate.holds()  # back at once, though the other holds the only turn

    def other():
        with gate.turn():
            second_in.set()
            done.wait(WAIT_S)

    a = started(long_run)
    computing.wait(WAIT_S)
    b = started(other)
    assert second_in.wait(WAIT_S)
    done.set()
    joined(a, b)
    assert gate.inside == 0


def test_no_deadlock_when_those_inside_wait_for_a_lock_the_one_aside_holds():
    """The lesson's warm-up: the first student computes every stop's run holding a cache's lock; the
    next students get in and wait for that lock; the first comes back from each run at once."""
    gate, lock, finished = Turnstile(2), threading.Lock(), []
    cache = TraceCache(2**30, aside=gate.aside)
    first_holds = threading.Event()

    def first():
        with gate.turn(), lock:
            first_holds.set()
            settle(lambda: gate.inside == 2)  # two others inside, waiting for the lock
            for k in range(3):
                cache.get_or_compute(("warm", k), lambda: torch.zeros(1))
        finished.append("first")

    def student(i):
        with gate.turn(), lock:
            finished.append(i)

    a = started(first)
    first_holds.wait(WAIT_S)
    others = [started(student, i) for i in range(4)]
    joined(a, *others)
    assert finished[0] == "first" and sorted(finished[1:]) == [0, 1, 2, 3]


def test_askers_of_one_short_run_keep_their_turns_and_draw_in_the_order_they_came():
    gate, cache = Turnstile(1), TraceCache(2**30)
    cache.aside = gate.aside
    go, drawn = threading.Event(), []

    def compute():
        go.wait(WAIT_S)
        return torch.zeros(1)

    def page(i):
        with gate.turn():
            cache.get_or_compute("text", compute)
            drawn.append(i)

    leader = started(page, 0)
    settle(lambda: "text" in cache._flights and gate.inside == 0)  # computing, aside
    followers = []
    for i in range(1, 4):
        followers.append(started(page, i))
        settle(lambda: len(gate._line) + gate.inside == i)
    go.set()  # within HOLD_TURN_S: the first follower kept its turn, the others waited in line
    joined(leader, *followers)
    assert drawn[1:] == [1, 2, 3] or drawn == [1, 0, 2, 3]


def test_a_thread_coming_back_goes_ahead_of_those_that_came_after_it():
    gate, order = Turnstile(1), []
    inside, release, back, aside_now = threading.Event(), threading.Event(), threading.Event(), threading.Event()

    def first():  # inside, then aside (a run), then back while `late` waits in line
        with gate.turn():
            with gate.aside(rejoin=True):
                aside_now.set()
                back.wait(WAIT_S)
            order.append("first, back")

    def holder():
        with gate.turn():
            inside.set()
            release.wait(WAIT_S)
            order.append("holder")

    def late():
        with gate.turn():
            order.append("late")

    a = started(first)
    aside_now.wait(WAIT_S)
    b = started(holder)
    inside.wait(WAIT_S)
    c = started(late)
    settle(lambda: len(gate._line) == 1)  # late waits
    back.set()
    settle(lambda: len(gate._line) == 2)  # first waits too, ahead of late
    assert gate._line[0][0] == 0
    release.set()
    joined(a, b, c)
    assert order == ["holder", "first, back", "late"]


def test_a_thread_coming_back_goes_in_after_a_bounded_wait_if_those_inside_wait_for_its_lock(monkeypatch):
    """A page back from a pause (`rejoin=True`) while holding a lock may find the turns taken by pages that
    wait for that lock: it goes in after REJOIN_WAIT_S, so they are delayed, not stuck."""
    from gpt2viz.server import turnstile
    monkeypatch.setattr(turnstile, "REJOIN_WAIT_S", 0.2)
    gate, lock, done = Turnstile(1), threading.Lock(), []
    stepped, others_in = threading.Event(), threading.Event()

    def holder():
        with gate.turn(), lock:
            with gate.aside(rejoin=True):
                stepped.set()
                others_in.wait(WAIT_S)
            done.append("holder")

    def other():
        with gate.turn():
            others_in.set()
            with lock:
                done.append("other")

    a = started(holder)
    stepped.wait(WAIT_S)
    b = started(other)
    joined(a, b)
    assert done == ["holder", "other"] and gate.inside == 0
