"""A class server's memory under a hostile student's attacks, against the formula docs/deploy.md gives
(runtime + first model + GPT2VIZ_TRACE_BUDGET_MB, uploads off).

`streamlit run app.py --server.address 0.0.0.0` (tests/streamlit_server.py), no GPT2VIZ_ALLOW_UPLOAD
and no GPT2VIZ_RANDOM_MODELS, driven with Streamlit's protocol (st_protocol.Session) as a script
would. After a warm-up view (random gpt2, seed 0: the first model; the baseline RSS), in order:

- xl: `/glossary?weights=random&model=gpt2-xl&seed=1` (before: +5,913 MiB);
- seeds: K sessions on random gpt2 with seeds 1..K, each another 475 MiB model (before: 4 kept by count);
- long: one session asks for a 1,024-token text on the Overview, Attention, MLP, Output and Logit lens
  pages in full mode, then on the Training page in training mode (before: +4,044 MiB against 2,048);
- puts: four PUTs of 700 MB to the upload route, headers only (before: +2,002 MiB held), and one of a
  40 MiB lesson file;
- small: S sessions each PUT five files of 0.9 MB (under the route's limit).

Each step prints what the server answered (the refusal line, HTTP status) and the RSS; the end, the
peak (VmRSS every 0.2 s, and the kernel's VmHWM) and the RSS held, against the baseline and the budget.

    .venv/bin/python benchmarks/hostile_memory.py [--budget-mb 2048] [--seeds 6] [--small 20]
"""

import argparse
import asyncio
import os
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from load_test import _status_kib  # noqa: E402
from st_protocol import Session  # noqa: E402
from streamlit_server import StreamlitServer  # noqa: E402

MIB = 2**20


class Sampler:
    """VmRSS of `pid` every 0.2 s, in a thread; `peak` the highest seen or the kernel's VmHWM."""

    def __init__(self, pid: int):
        self.pid, self.most, self.stop = pid, 0, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stop.wait(0.2):
            self.most = max(self.most, _status_kib(self.pid, "VmRSS"))

    def rss(self) -> float:
        return _status_kib(self.pid, "VmRSS") / 1024

    def peak(self) -> float:
        return max(self.most, _status_kib(self.pid, "VmHWM")) / 1024


def said(view) -> str:
    """The refusal or notice lines a view showed (the ones this benchmark looks for)."""
    keys = ("builds random", "gives one run", "not built", "more than the")
    return " | ".join(t for t in view.texts + view.captions + view.errors if any(k in t for k in keys))[:300]


def put_status(base: str, s: Session, length: int) -> str:
    xsrf = s._xsrf() or ""
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall((f"PUT /_stcore/upload_file/{s.session_id}/f HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"Cookie: _streamlit_xsrf={xsrf}\r\nX-Xsrftoken: {xsrf}\r\n"
                      f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {length}\r\n\r\n").encode())
        try:
            return sock.recv(200).decode(errors="replace").split("\r\n")[0]
        except TimeoutError:
            return "no answer in 20 s (reading the body)"


async def tab(base: str, page: str = "", query: str = ""):
    s = Session(base)
    await s.open(page, query)
    if not s._xsrf():
        await asyncio.to_thread(s._get, base + "/_stcore/health", 30)
    return s, await s.view(page, query, timeout=600)


async def attack(base: str, mem: Sampler, seeds: int, small: int) -> None:
    def line(step: str, what: str) -> None:
        print(f"{step:<8} RSS {mem.rss():7,.0f} MiB  {what}", flush=True)

    s, v = await tab(base, "glossary", "weights=random&model=gpt2-xl&seed=1")
    line("xl", f"ok={v.ok} {said(v)}")
    await s.close()
    for seed in range(1, seeds + 1):
        s, v = await tab(base, "", f"model=gpt2&seed={seed}")
        line(f"seed {seed}", f"ok={v.ok} {said(v)}")
        await s.close()
    text = "word " * 1100
    s, _ = await tab(base, "", "model=gpt2")
    for page, mode in (("", "full"), ("attention", "full"), ("mlp", "full"), ("output", "full"), ("lens", "full"),
                       ("training", "training")):
        v = await s.view(page, f"model=gpt2&mode={mode}&text={text}", timeout=600)
        line(f"1,024 {page or 'overview'}", f"ok={v.ok} {v.seconds or 0:.1f} s {said(v)}")
    for i in range(4):
        line(f"put {i + 1}", put_status(base, s, 700 * MIB))
    line("lesson", put_status(base, s, 40 * MIB))
    await s.close()
    tabs = [await tab(base, "", "model=gpt2") for _ in range(small)]
    statuses = []
    for t, _ in tabs:
        for i in range(5):
            statuses.append(await t.upload(f"nothing-{i}", "f.bin", b"x" * 900_000))
    line("small", f"{small} sessions x 5 PUTs of 0.9 MB: statuses {sorted(set(statuses))}")
    for t, _ in tabs:
        await t.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-mb", type=int, default=2048)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--small", type=int, default=20)
    a = ap.parse_args()
    for name in ("GPT2VIZ_ALLOW_UPLOAD", "GPT2VIZ_ALLOW_DOWNLOAD", "GPT2VIZ_RANDOM_MODELS"):
        os.environ.pop(name, None)
    os.environ["GPT2VIZ_TRACE_BUDGET_MB"] = str(a.budget_mb)
    server = StreamlitServer(ROOT / "app.py", ROOT, address="0.0.0.0")
    try:
        server.wait_healthy(180)
        mem = Sampler(server.proc.pid)

        async def warm():
            s, v = await tab(server.base, "", "model=gpt2")
            await s.close()
            return v
        assert asyncio.run(warm()).ok
        time.sleep(6)  # the idle trim
        base = mem.rss()
        print(f"baseline (runtime + random gpt2, the first model): {base:,.0f} MiB; budget {a.budget_mb:,} MiB")
        asyncio.run(attack(server.base, mem, a.seeds, a.small))
        time.sleep(6)
        held, peak = mem.rss(), mem.peak()
        mem.stop.set()
        print(f"peak {peak:,.0f} MiB (+{peak - base:,.0f} over the baseline, budget {a.budget_mb:,}); held "
              f"{held:,.0f} MiB (+{held - base:,.0f}); formula: baseline + budget = {base + a.budget_mb:,.0f} MiB")
        tracebacks = server.log_tail(10**9).count("Traceback")
        print(f"server log: {tracebacks} tracebacks")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
