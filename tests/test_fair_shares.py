"""Fair shares on a class server, written as the attacks: two students keep the heavy pages busy,
and a third student's short view must still find a slot and room at once; on a shared server the
heavy pages and sweeps take bounded texts, and say so."""

import re
import sys
import threading
import time
from pathlib import Path

import pytest

from gpt2viz.server.trace_cache import TraceCache, view_asked

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run  # noqa: E402

MIB = 2**20


class Blocked:
    """A computation that holds its slot until released, and notes when it started."""

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self):
        self.started.set()
        assert self.release.wait(30)
        return Small()


class Small:
    nbytes = 1


def cache_of(budget: int, max_runs: int) -> TraceCache:
    cache = TraceCache(budget, max_runs=max_runs)
    cache.release = lambda: None  # its idle trim would give back memory another test measures
    return cache


def served_within(cache: TraceCache, seconds: float, estimate: int) -> bool:
    """A student's short view asked now: did it finish within `seconds`?"""
    done = threading.Event()
    start(cache, f"student {time.monotonic()}", lambda: done.set() or Small(), estimate)
    return done.wait(seconds)


def start(cache: TraceCache, key: str, compute, estimate: int, **kw) -> threading.Thread:
    t = threading.Thread(target=cache.get_or_compute, args=(key, compute, estimate), kwargs=kw, daemon=True)
    t.start()
    return t


def test_two_heavy_runs_leave_a_slot_for_a_short_view():
    """Two heavy runs on a 2-slot server: the second waits, and a short view runs beside the first."""
    cache = cache_of(1536 * MIB, max_runs=2)
    first, second = Blocked(), Blocked()
    threads = [start(cache, "training a", first, 600 * MIB), start(cache, "training b", second, 600 * MIB)]
    time.sleep(0.3)
    assert served_within(cache, 2, 20 * MIB)  # a short text: runs now, not after the heavy ones
    assert cache.heavy_running == 1 and not (first.started.is_set() and second.started.is_set())
    first.release.set()
    second.release.set()
    for t in threads:
        t.join(10)
    assert cache.running == 0 and cache.heavy_running == 0 and cache.in_flight == 0 and cache.light_in_flight == 0


def test_runs_waiting_for_a_slot_start_in_the_order_they_asked():
    """A class that presses enter at once: with every slot busy, the waiting runs start in the order
    they asked as slots free, and one asked later does not go ahead (a freed slot went to whichever
    thread took the lock first: one student's first view waited 19 s while later ones went ahead)."""
    cache = cache_of(1000 * MIB, max_runs=1)
    busy = Blocked()
    threads = [start(cache, "busy", busy, 10 * MIB)]
    assert busy.started.wait(5)
    order, waiting = [], [Blocked() for _ in range(5)]
    for i, blocked in enumerate(waiting):
        threads.append(start(cache, f"student {i}", lambda i=i, b=blocked: order.append(i) or b(), 10 * MIB))
        deadline = time.monotonic() + 5
        while len(cache._line) < i + 1 and time.monotonic() < deadline:  # in line before the next one asks
            time.sleep(0.01)
    busy.release.set()
    for i, blocked in enumerate(waiting):
        assert blocked.started.wait(5)
        late = start(cache, f"late {i}", lambda: order.append("late") or Small(), 10 * MIB)  # asks as a slot frees
        blocked.release.set()
        threads.append(late)
    for t in threads:
        t.join(10)
    assert order[:5] == [0, 1, 2, 3, 4] and order.count("late") == 5
    assert cache.running == 0 and not cache._line


def test_a_views_second_run_keeps_the_views_place_in_line():
    """A page that computes two runs (About: full, then decode) waits in line from when its view was
    asked: its second run starts before the runs of views asked after it, not behind them (it waited
    in line twice, and its view was the class's slowest, 5-9 s)."""
    cache = cache_of(1000 * MIB, max_runs=1)
    busy, order, threads = Blocked(), [], []
    threads.append(start(cache, "busy", busy, 10 * MIB))
    assert busy.started.wait(5)
    first_run_done = threading.Event()

    def about():  # a view asked now: its first run waits for the busy slot, its second asks after that
        with view_asked():
            cache.get_or_compute("about full", lambda: order.append("about full") or Small(), 10 * MIB)
            first_run_done.set()
            time.sleep(0.2)  # the page draws between its runs; the others are in line meanwhile
            cache.get_or_compute("about decode", lambda: order.append("about decode") or Small(), 10 * MIB)
    threads.append(threading.Thread(target=about, daemon=True))
    threads[-1].start()
    while not cache._line:
        time.sleep(0.01)
    others = [Blocked() for _ in range(3)]
    for i, blocked in enumerate(others):  # three views asked after About's: in line before its second run asks
        threads.append(start(cache, f"later {i}", lambda i=i, b=blocked: order.append(f"later {i}") or b(), 10 * MIB))
    while len(cache._line) < 4:
        time.sleep(0.01)
    busy.release.set()
    assert first_run_done.wait(5)
    assert others[0].started.wait(5)  # the first later view took the slot while About drew
    while len(cache._line) < 3:  # About's second run in line, with the two other later views
        time.sleep(0.01)
    for blocked in others:
        blocked.release.set()
    for t in threads:
        t.join(10)
    assert order == ["about full", "later 0", "about decode", "later 1", "later 2"]
    assert cache.running == 0 and not cache._line


def test_a_run_that_fails_before_it_computes_leaves_no_slot_taken():
    """Whatever fails between a run's turn and its computation (choosing its threads) gives the turn
    back: with one slot, a slot kept would make every run after it wait for ever, in line."""
    cache = cache_of(1000 * MIB, max_runs=1)
    cache.threads = lambda running: 1 / 0
    with pytest.raises(ZeroDivisionError):
        cache.get_or_compute("fails", Small, 10 * MIB)
    assert cache.running == 0 and cache.in_flight == 0 and cache.light_in_flight == 0 and not cache._line
    cache.threads = None
    assert served_within(cache, 2, 10 * MIB)


def test_a_run_that_fits_is_not_held_behind_an_earlier_one_that_does_not():
    """The order holds among the runs that may start: a short view asked after a heavy run that must
    wait for the budget starts in the slot that is free."""
    cache = cache_of(1000 * MIB, max_runs=4)
    heavy, other = Blocked(), Blocked()
    threads = [start(cache, "heavy", heavy, 700 * MIB)]
    assert heavy.started.wait(5)
    threads.append(start(cache, "heavy 2", other, 300 * MIB))  # waits: not beside the reserve
    time.sleep(0.3)
    assert served_within(cache, 2, 100 * MIB) and not other.started.is_set()
    heavy.release.set()
    assert other.started.wait(5)
    other.release.set()
    for t in threads:
        t.join(10)


def test_a_sweep_is_heavy_whatever_its_bytes():
    cache = cache_of(1536 * MIB, max_runs=2)
    sweep, other = Blocked(), Blocked()
    threads = [start(cache, "sweep", sweep, 10 * MIB, heavy=True), start(cache, "sweep 2", other, 10 * MIB, heavy=True)]
    time.sleep(0.3)
    assert served_within(cache, 2, 10 * MIB)
    assert cache.heavy_running == 1
    sweep.release.set()
    other.release.set()
    for t in threads:
        t.join(10)
    assert cache.heavy_running == 0


def test_a_heavy_run_leaves_the_short_views_room_in_the_budget():
    """A heavy run holding most of the budget does not make a short view wait for its bytes."""
    cache = cache_of(1000 * MIB, max_runs=4)
    heavy, other = Blocked(), Blocked()
    threads = [start(cache, "heavy", heavy, 700 * MIB)]
    assert heavy.started.wait(5)
    threads.append(start(cache, "heavy 2", other, 300 * MIB))  # fits the budget, but not beside the reserve
    time.sleep(0.3)
    assert served_within(cache, 2, 200 * MIB)
    assert not other.started.is_set() and cache.peak_reserved <= cache.budget
    heavy.release.set()
    other.release.set()
    for t in threads:
        t.join(10)


def test_a_long_text_s_run_is_heavy_whatever_its_bytes(monkeypatch):
    """The heavy pages' capped runs (256-512 tokens) have small estimates: two tabs on them took both
    slots of a 2-core server as light runs, and a third student's short view waited 15-22 s. A run of
    a long text is heavy, so it leaves a slot; a short text's run is still judged by its bytes."""
    from gpt2viz.model.modes import Mode
    from gpt2viz.model.tokenizer import encode
    from gpt2viz.ui.cache import LIGHT_TOKENS, get_trace, random_weights

    cache = cache_of(1536 * MIB, max_runs=2)
    asked = []
    real = cache.get_or_compute
    monkeypatch.setattr(cache, "get_or_compute", lambda *a, **k: asked.append(k.get("heavy")) or real(*a, **k))
    weights = random_weights("tiny", 0)
    long_ids = tuple(encode(long_text(300)))[:LIGHT_TOKENS + 1]
    for ids in (tuple(encode("a short view")), long_ids):
        get_trace(weights, ids, Mode.FULL, 0, ("logits",), cache=cache)
    assert asked == [None, True]
    first, second = Blocked(), Blocked()  # two such runs, small in bytes, on a 2-slot server
    threads = [start(cache, "about a", first, 20 * MIB, heavy=True),
               start(cache, "heads b", second, 20 * MIB, heavy=True)]
    time.sleep(0.3)
    assert served_within(cache, 2, 20 * MIB) and cache.heavy_running == 1
    first.release.set()
    second.release.set()
    for t in threads:
        t.join(10)


def test_the_benchmark_s_90th_percentile_counts_two_slow_views_in_14():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from fairness import MIN_VIEWS, nearest_rank

    views = [0.3] * 12 + [15.0, 22.0]  # the red team's run: 2 of 14 views past a 3 s goal
    assert MIN_VIEWS == 14 and nearest_rank(views, 0.9) == 15.0 and nearest_rank(views, 0.5) == 0.3
    assert nearest_rank([0.3] * 13 + [22.0], 0.9) == 0.3  # one slow view in 14 is the p90's allowance
    assert nearest_rank([], 0.9) is None


# ---------------------------------------------------------------------------- token caps, said on the page
def long_text(words: int = 700) -> str:
    return " ".join(["every student brings a sentence to the model"] * (words // 8))


@pytest.fixture
def server_address():
    """Streamlit's server.address for AppTest (which runs the app in this process)."""
    from streamlit import config as st_config

    before = st_config.get_option("server.address")
    yield lambda address: st_config.set_option("server.address", address)
    st_config.set_option("server.address", before)


def page(url: str, **params):
    at = run(url, **params)
    assert not at.exception, at.exception[0].value
    return at


@pytest.mark.parametrize("url,mode,cap", [("training", "training", 256), ("whatif", "full", 256),
                                          ("heads", "full", 512), ("about", "full", 512),
                                          ("attribution", "full", 256)])
def test_a_shared_server_runs_the_heavy_pages_on_the_start_of_a_long_text(server_address, url, mode, cap):
    server_address("0.0.0.0")
    at = page(url, model="tiny", mode=mode, text=long_text())
    said = [i.value for i in at.info if "This shared server runs" in i.value]
    assert len(said) == 1 and f"first {cap:,} of this text's" in said[0] and "\n" not in said[0]


def test_the_operators_own_server_runs_the_whole_text(server_address):
    server_address("127.0.0.1")
    at = page("training", model="tiny", mode="training", text=long_text())
    assert not [i for i in at.info if "This shared server" in i.value]


def test_a_shared_server_sweeps_short_texts_only(server_address):
    """What if's sweep knocks out every head one at a time: n_layer x n_head runs of the text."""
    server_address("0.0.0.0")
    at = page("whatif", model="tiny", text=long_text(120))
    (said,) = [w.value for w in at.warning if "sweeps texts of up to 64 tokens" in w.value]
    assert "this page runs 120." in said  # what the page runs: a trial's 1,000 tokens, cut to 256, said "has 256"
    assert not [b for b in at.button if b.key in ("sweep_heads", "sweep_mlps")]
    at = page("whatif", model="tiny", text="a short text to sweep")
    assert {b.key for b in at.button} >= {"sweep_heads", "sweep_mlps"}


def test_attribution_sweeps_under_what_ifs_cap(server_address):
    """Attribution's "beside What if's knock-outs" runs What if's sweep: it ran the 144 knock-outs on a
    161-token text that What if refused to sweep on the same server (a trial found it)."""
    server_address("0.0.0.0")
    at = page("attribution", model="tiny", text=long_text(120))
    assert not at.exception
    assert [w.value for w in at.warning if "sweeps texts of up to 64 tokens" in w.value]
    assert not [b for b in at.button if b.key == "attr_sweep"]
    at = page("attribution", model="tiny", text="a short text to sweep")
    assert not at.exception and not [w for w in at.warning if "sweeps texts of up to" in w.value]


# ---------------------------------------------------------------------------- one run per session
def test_a_tab_that_asks_again_replaces_its_own_run():
    """A student starts a 1,024-token Training run, then asks for a short view in the same tab: the
    training run stops at its next step (it never completes), and the short view does not wait for it."""
    import asyncio
    from urllib.parse import quote, urlencode

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from st_protocol import Session
    from streamlit_server import StreamlitServer

    root = Path(__file__).resolve().parents[1]
    long = " ".join(["every student brings a sentence to the model"] * 160)  # over 1,024 tokens

    async def student(base: str) -> float:
        s = Session(base)
        await s.open("tokens", "")
        await s.view("tokens", "")  # the weights loaded
        await s._send(s._rerun("training", urlencode({"text": long, "mode": "training"}, quote_via=quote)))
        await asyncio.sleep(3)  # the training run is under way
        view = await s.view("attention", "text=" + quote("A short sentence, asked again"))
        await s.close()
        assert view.ok, view.error or view.exceptions
        return view.seconds

    with pytest.MonkeyPatch.context() as env:
        env.setenv("GPT2VIZ_LOG_RUNS", "1")
        with StreamlitServer("app.py", cwd=root) as server:  # loopback: the operator's, no token caps
            server.wait_healthy(timeout=120)
            seconds = asyncio.run(student(server.base))
            time.sleep(1)
            log = server.log_tail(10**7)
    assert "(training summary)" not in log, log[-2000:]  # stopped, never completed
    assert "(full)" in log and seconds < 30


def test_a_shared_server_runs_training_on_the_longest_start_its_memory_for_one_run_holds(server_address, monkeypatch):
    """A class server's process (512 MiB) refused the Training page a 161-token text ("needs about 467
    MiB, more than the 384 MiB this server gives one run"), though the page runs a long text's start:
    it now runs the longest start that fits, and says so in one line."""
    from gpt2viz.ui.cache import random_weights, trace_cache, training_summary_bytes

    server_address("0.0.0.0")
    monkeypatch.setenv("GPT2VIZ_TRACE_BUDGET_MB", "200")  # 150 MiB for runs: about 150 tokens of tiny
    trace_cache.clear()
    try:
        at = page("training", model="tiny", mode="training", text=long_text())
        (said,) = [i.value for i in at.info if "This shared server runs" in i.value]
        n = int(re.search(r"first ([\d,]+) of", said).group(1).replace(",", ""))
        weights, budget = random_weights("tiny", 0), trace_cache().budget
        assert training_summary_bytes(weights, n, True) <= budget < training_summary_bytes(weights, n + 1, True)
        assert "more memory than it gives one run" in said and "\n" not in said
        assert not [w for w in at.warning if "this server gives one run" in w.value] and len(at.metric) == 3
    finally:
        trace_cache.clear()
