"""What plotly's figure JSON costs on the heaviest pages: the standard library's json against orjson.

Each page runs once in Streamlit's AppTest (random gpt2, seed 0, the default text, or --text/--tokens);
every figure the page hands to st.plotly_chart (Streamlit serialises it with plotly.io.to_json, whose
"auto" engine is orjson when it is installed) is kept. Then, in the same process and round, each page's
figures are serialised with engine="json" and engine="orjson", alternating, --repeats times; the
figure lines give the median over the repeats of the page's total (CPU seconds of this process,
time.process_time, so the other processes on a shared machine do not count), the ratio, and the
JSON's size. The load average is printed beside the figures.

Usage:  .venv/bin/python benchmarks/figure_json.py [--pages whatif heads attention ...] [--tokens 256]
                                                   [--repeats 5] [--model gpt2]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEAVY = ("attention", "lens", "heads", "whatif", "attribution", "patch", "training", "mlp", "overview")


def page_figures(url: str, params: dict) -> list:
    """The figures one run of `url` passes to plotly.io.to_json (Streamlit's serialisation)."""
    import plotly.io
    from streamlit.testing.v1 import AppTest

    from gpt2viz.spec.pages import BY_URL

    seen = []
    real = plotly.io.to_json

    def keep(fig, *args, **kwargs):
        seen.append(fig)
        return real(fig, *args, **kwargs)

    plotly.io.to_json = keep
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        for key, value in params.items():
            at.query_params[key] = str(value)
        at.run()
        if url != "overview":
            seen.clear()
            at.switch_page(BY_URL[url].file)
            at.run()
        if at.exception:
            print(f"  {url}: {at.exception[0].value}", file=sys.stderr)
    finally:
        plotly.io.to_json = real
    return seen


def cpu_seconds(figs, engine: str) -> tuple[float, int]:
    import plotly.io

    start, size = time.process_time(), 0
    for fig in figs:
        size += len(plotly.io.to_json(fig, validate=False, engine=engine))
    return time.process_time() - start, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", nargs="*", default=list(HEAVY))
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--tokens", type=int, default=0, help="a text of about this many tokens (0: the app's default)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    import plotly.io

    print(f"plotly's default engine: {plotly.io.json.config.default_engine!r} (auto: orjson when installed)")
    params = {"model": a.model}
    if a.tokens:
        params["text"] = " ".join(["the cat sat on the mat and looked at the dog"] * (a.tokens // 11 + 1))
    total = {"json": 0.0, "orjson": 0.0}
    for url in a.pages:
        figs = page_figures(url.lstrip("/") or "overview", params)
        times = {"json": [], "orjson": []}
        for _ in range(a.repeats):
            for engine in times:
                seconds, size = cpu_seconds(figs, engine)
                times[engine].append(seconds)
        j, o = (statistics.median(times[e]) for e in ("json", "orjson"))
        total["json"] += j
        total["orjson"] += o
        print(f"{url:12s} {len(figs):3d} figures {size / 1e6:6.2f} MB  json {j:.4f} s  orjson {o:.4f} s  "
              f"ratio {j / o if o else float('nan'):.1f}x   load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'all':12s} json {total['json']:.3f} s  orjson {total['orjson']:.3f} s  "
          f"ratio {total['json'] / total['orjson']:.1f}x (CPU seconds of the serialisation alone)")


if __name__ == "__main__":
    main()
