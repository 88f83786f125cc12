"""axe-core (4.12, as the `axe-playwright-python` package bundles it) on every page of the registry, in
Debian's chromium: the violations by rule and impact, at each window size asked for.

    python benchmarks/a11y_audit.py [--sizes 1280x720 800x900] [--pages overview attention] [--json]

It starts `streamlit run app.py` on a free port, opens each page on random gpt2 (the default view) in one
tab, waits for the run to end, runs axe and prints one line per page and size: the count of serious and
critical violations and the rules behind them; last, the totals. What it measures is the page as a
browser builds it (Streamlit's own markup included): the baseline for issue "every chart for every
reader", and the figure its tests hold at zero.
"""

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from streamlit_server import EXCEPTION, StreamlitServer, chromium_for_tests, new_context, wait_rendered  # noqa: E402

from gpt2viz.spec.pages import PAGES  # noqa: E402

SERIOUS = ("serious", "critical")


def audit(page, url: str) -> list[dict]:
    """axe's violations on the page at `url`: [{"id", "impact", "nodes"}]."""
    from axe_playwright_python.sync_playwright import Axe

    page.goto(url)
    wait_rendered(page, timeout_ms=180_000)
    page.wait_for_timeout(500)
    if page.locator(EXCEPTION).count():
        raise RuntimeError(f"{url} shows an exception: {page.locator(EXCEPTION).first.inner_text()[:300]}")
    result = Axe().run(page)
    return [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]),
             "targets": [n["target"] for n in v["nodes"]][:3]} for v in result.response["violations"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["1280x720", "800x900"])
    ap.add_argument("--pages", nargs="+", default=[p.url for p in PAGES])
    ap.add_argument("--query", default="", help="added to every page's address, e.g. present=1")
    ap.add_argument("--json", action="store_true", help="every violation as JSON, not the summary")
    a = ap.parse_args()
    everything, totals = [], Counter()
    with StreamlitServer("app.py", cwd=ROOT) as server, chromium_for_tests() as browser:
        server.wait_healthy(120)
        for size in a.sizes:
            width, height = (int(x) for x in size.split("x"))
            context = new_context(browser, width, height)
            tab = context.new_page()
            for url in a.pages:
                violations = audit(tab, f"{server.base}/{url}" + (f"?{a.query}" if a.query else ""))
                serious = [v for v in violations if v["impact"] in SERIOUS]
                totals.update(f"{v['impact']}:{v['id']}" for v in violations)
                everything.append({"page": url, "size": size, "violations": violations})
                if not a.json:
                    print(f"{size} /{url}: {len(serious)} serious or critical, {len(violations)} in all"
                          + (f" ({', '.join(sorted({v['id'] for v in serious}))})" if serious else ""), flush=True)
            context.close()
    if a.json:
        print(json.dumps(everything, indent=1))
        return
    serious_total = sum(n for k, n in totals.items() if k.split(":")[0] in SERIOUS)
    print(f"pages x sizes: {len(everything)}; serious or critical (page, rule) pairs: {serious_total}; "
          f"all: {sum(totals.values())}")
    for rule, n in totals.most_common():
        print(f"  {rule}: on {n} page views")


if __name__ == "__main__":
    main()
