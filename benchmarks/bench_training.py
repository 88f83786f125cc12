"""The Training page's run against transformers' own forward + backward, on the same text.

GPT-2 small with random weights (seed 0), batch 1, fp32, CPU, dropout on (p = 0.1, train mode).
At T = 256 and 1024 tokens, in one process:

  transformers sdpa  GPT2LMHeadModel in train mode, `model(input_ids=ids, labels=ids).loss.backward()`:
                     the baseline (sdpa is transformers' default attention)
  ours, page         `modes.run(model, ids, "training", names=TRAINING_NEEDS, on_grad=norms)`: what
                     the Training page runs (the loss, the dropout masks, every weight's gradient,
                     handed on a block at a time and kept as its norm, the stream's gradient at every
                     block), and the page's numbers made from it (`training_summary`)
  ours, everything   `modes.run(model, ids, "training")`: every name of a training run recorded

With --server, the Training page itself (`streamlit run app.py`, its default settings) is timed too,
at T = 1024 only: each round opens the page on a text no one asked before (student i's text of
1024 tokens, benchmarks/load_test.session_text), spoken in Streamlit's protocol (no browser), from
the rerun to script-finished; transformers' forward + backward runs on the same tokens in the same
round, in this process, while the server idles. That ratio is what a user waits for against what
transformers computes.

Gradients are zeroed (set to None) before each call, so every call computes them afresh; the
transformers weights are ours (bench_forward.hf_model) and its loss on the text without dropout
is checked against ours first. Rounds rotate the order; a ratio is the median over rounds of
case / baseline within the round (see bench_forward.paired_ratio). No absolute-time thresholds.

Usage:  .venv/bin/python benchmarks/bench_training.py [--quick] [--threads N] [--server]
The last line: `ratio_training_page_vs_transformers T=1024: X.XX` (the page's view with --server).
"""

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_forward import OtherLoad, hf_model, our_model, paired_ratio, token_ids  # noqa: E402

from gpt2viz.model.memory import ONE_ARENA_ENV  # noqa: E402
from gpt2viz.model.modes import run  # noqa: E402
from gpt2viz.ui.classroom import TRAINING_NEEDS, TrainingNorms, training_summary  # noqa: E402

TARGET = 1.10


def cases(ours, hf, ids: torch.Tensor) -> dict:
    cfg = ours.config

    def transformers_step():
        hf.zero_grad(set_to_none=True)
        loss = hf(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss

    def page():
        ours.zero_grad(set_to_none=True)
        norms = TrainingNorms()
        trace = run(ours, ids, "training", names=TRAINING_NEEDS, seed=0, on_grad=norms)
        return training_summary(trace, norms, cfg.n_layer, cfg.dropout, True)

    def everything():
        ours.zero_grad(set_to_none=True)
        return run(ours, ids, "training", seed=0)

    return {"transformers sdpa": transformers_step, "ours, page": page, "ours, everything": everything}


def timed_rounds(fns: dict, reps: int, warmup: int) -> dict[str, list[float]]:
    keys, times = list(fns), {k: [] for k in fns}
    for r in range(warmup + reps):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            gc.collect()
            start = time.perf_counter()
            result = fns[k]()
            elapsed = time.perf_counter() - start
            del result
            if r >= warmup:
                times[k].append(elapsed)
    return times


def loss_check(ours, hf, ids: torch.Tensor) -> float:
    """|our evaluation loss − transformers'| on the text, dropout off: the same weights."""
    with torch.no_grad():
        hf.eval()
        theirs = hf(input_ids=ids, labels=ids).loss.item()
        hf.train()
    return abs(run(ours, ids, "training", names=("loss",), dropout=False, grads=False)["loss"].item() - theirs)


def transformers_worker(conn, threads: int) -> None:
    """A process of its own, like the server: transformers' GPT-2 with our weights, in train mode;
    for each list of ids received, the seconds of one forward + backward, sent back."""
    torch.set_num_threads(threads)
    hf, _ = hf_model(our_model(), "sdpa")
    hf.train()
    while (ids := conn.recv()) is not None:
        ids = torch.tensor([ids])  # [1, T]
        hf.zero_grad(set_to_none=True)
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        hf(input_ids=ids, labels=ids).loss.backward()
        conn.send((time.perf_counter() - start, time.process_time() - cpu))


def faults_and_cpu(pid: int) -> tuple[int, float]:
    """(minor page faults, CPU seconds) of a process so far, from /proc/PID/stat; (0, 0) without it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0, 0.0
    # after the command's ")": state is field 3, minflt 10, utime 14, stime 15 (proc(5))
    return int(fields[7]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_rounds(threads: int, reps: int, T: int) -> tuple[list[float], list[float]]:
    """(the Training page's view, transformers' forward + backward) on the same new text, per round.
    Both run in processes of their own, one after the other: on this machine a page fault costs a
    process more after another process freed much memory, so neither runs in this one."""
    import asyncio
    import multiprocessing

    sys.path.insert(0, str(ROOT / "tests"))
    from first_view import query
    from load_test import session_text
    from st_protocol import Session
    from streamlit_server import StreamlitServer

    from gpt2viz.model.tokenizer import encode

    async def view(base: str, text: str) -> float:
        session = Session(base)
        await session.open("training", query(text, 0, 0, "training"))
        r = await session.view("training", query(text, 0, 0, "training"), timeout=600)
        await session.close()
        if not r.ok:
            raise RuntimeError(f"/training: {r.error or r.exceptions}")
        return r.seconds

    pages, theirs = [], []
    mine, its = multiprocessing.get_context("spawn").Pipe()
    worker = multiprocessing.get_context("spawn").Process(target=transformers_worker, args=(its, threads))
    worker.start()
    try:
        with StreamlitServer("app.py", cwd=ROOT) as server:
            server.wait_healthy(timeout=180)
            warm = session_text(900, T)
            asyncio.run(view(server.base, warm))  # each process's own start and first run
            mine.send(encode(warm))
            mine.recv()
            for r in range(reps):
                text = session_text(901 + r, T)
                faults, cpu = faults_and_cpu(server.proc.pid)
                pages.append(asyncio.run(view(server.base, text)))
                faults, cpu = (a - b for a, b in zip(faults_and_cpu(server.proc.pid), (faults, cpu)))
                mine.send(encode(text))
                wall, their_cpu = mine.recv()
                theirs.append(wall)
                print(f"  round {r}: page {pages[-1]:.2f} s ({faults:,} minor faults, {cpu:.2f} s CPU in the "
                      f"server), transformers {theirs[-1]:.2f} s ({their_cpu:.2f} s CPU; {len(encode(text))} "
                      f"tokens) · CPU ratio {cpu / their_cpu:.2f} · load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        mine.send(None)
        worker.join(timeout=60)
    return pages, theirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="T = 256 only, 3 rounds")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--server", action="store_true", help="time the Training page's view too (T = 1024)")
    ap.add_argument("--server-only", action="store_true", help="only the Training page's view (implies --server)")
    ap.add_argument("--one-arena", action="store_true",
                    help="start the server with MALLOC_ARENA_MAX=1, as `gpt2viz app` and the class server do")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ours = our_model()
    hf, _ = hf_model(ours, "sdpa")
    hf.train()
    args.server = args.server or args.server_only
    if args.one_arena:
        os.environ.update([ONE_ARENA_ENV])  # the server inherits it (this process has its arenas already)
    lengths, reps, warmup = ([256], 3, 1) if args.quick else ([256, 1024], 5, 1)
    lengths = [] if args.server_only else lengths
    load = OtherLoad()
    print(f"bench_training · gpt2 random weights · torch {torch.__version__} · threads {args.threads} · "
          f"{reps} rounds after {warmup} warm-up")
    last = None
    for T in lengths:
        ids = token_ids(T)
        print(f"\nT = {T}: |loss ours − transformers| without dropout {loss_check(ours, hf, ids):.2e}")
        times = timed_rounds(cases(ours, hf, ids), reps, warmup)
        base = times["transformers sdpa"]
        for k, t in times.items():
            ratio = paired_ratio(t, base)
            print(f"  {k:18s} median {statistics.median(t):7.2f} s  min {min(t):7.2f} s  ratio {ratio:.2f}")
        last = (T, paired_ratio(times["ours, page"], base))
    if args.server:
        print("\nthe Training page (a server of its own, default settings) against transformers (a process of its "
              "own), T = 1024:")
        pages, theirs = server_rounds(args.threads, reps, 1024)
        ratio = paired_ratio(pages, theirs)
        print(f"  page view median {statistics.median(pages):.2f} s, transformers median "
              f"{statistics.median(theirs):.2f} s, ratio {ratio:.2f}")
        last = (1024, ratio)
    print(load.report())
    print(f"target: ours, page{' (its view)' if args.server else ''} / transformers ≤ {TARGET:.2f} at T = {last[0]}: "
          f"{'met' if last[1] <= TARGET else 'MISSED'}")
    print(f"ratio_training_page_vs_transformers T={last[0]}: {last[1]:.2f}")


if __name__ == "__main__":
    main()
