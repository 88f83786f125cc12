"""A lesson's static site behind Debian's nginx on loopback, under a class at once: how long a page takes.

    python benchmarks/static_site_load.py [--lesson lessons/attention-demo.json] [--site DIR]
                                          [--clients 200] [--rounds 5]

Exports the lesson (`python -m gpt2viz lesson export`, unless --site names a folder already written),
serves it with deploy/lesson-site.nginx.conf.template on a free loopback port (unless --no-gzip-files,
the pages and plotly.js first compressed once beside themselves, `gzip -k -9`, as docs/deploy.md says,
which nginx's gzip_static then sends as they are), then:

1. a baseline: one client alone reads every page (index and stops) `rounds` times;
2. pages: `clients` clients at once, each on its own keep-alive connection, read every page `rounds`
   times (clients x pages x rounds requests), asking for gzip as a browser does;
3. first visits: `clients` clients at once, each on a new connection, read the index, the first stop
   and plotly.min.js, as a browser with an empty cache opens the lesson.

Each request's time runs from sending it to the last byte of its body. Printed: requests, errors (a
status other than 200, a broken connection, a timeout), p50, p95 and max, and p95 against the baseline
measured in the same run; with the machine's load average, since these figures are taken on whatever
else the machine is doing. Raw HTTP/1.1 on asyncio: no dependency beyond the standard library.
"""

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # streamlit_server, for nginx_proxy: a gpt2viz-independent helper
from nginx_proxy import NGINX, Proxy  # noqa: E402

TEMPLATE = ROOT / "deploy" / "lesson-site.nginx.conf.template"
TIMEOUT = 60.0  # a request slower than this is an error


@dataclass
class Tally:
    times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bytes: int = 0

    def line(self, name: str, baseline: float | None = None) -> str:
        t = sorted(self.times)
        if not t:
            return f"{name}: no request answered, {len(self.errors)} errors ({self.errors[:1]})"
        p95 = t[min(len(t) - 1, int(0.95 * len(t)))]
        ratio = f" = {p95 / baseline:.1f} x the baseline's" if baseline else ""
        return (f"{name}: {len(t) + len(self.errors):,} requests, {len(self.errors)} errors, "
                f"p50 {statistics.median(t) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms{ratio}, max {t[-1] * 1000:.1f} ms, "
                f"{self.bytes / 1e6:.1f} MB read")

    def p95(self) -> float:
        t = sorted(self.times)
        return t[min(len(t) - 1, int(0.95 * len(t)))]


# ---------------------------------------------------------------------------- nginx
def static_nginx(root: Path) -> Proxy:
    """Debian's nginx in the foreground, serving `root` on a free loopback port."""
    def config(prefix: str, listen: str) -> str:
        return TEMPLATE.read_text().replace("@PREFIX@", prefix).replace("@LISTEN@", listen).replace("@ROOT@", str(root))
    return Proxy([], config=config, health="/index.html")


# ---------------------------------------------------------------------------- raw HTTP/1.1
async def _get(reader, writer, path: str) -> tuple[int, int]:
    """One GET on an open keep-alive connection: (status, body bytes). Reads a Content-Length body or
    a chunked one (nginx's gzip answers are chunked)."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
        return status, len(body)
    size = 0
    while True:
        n = int((await reader.readline()).split(b";")[0], 16)
        await reader.readexactly(n + 2)
        size += n
        if n == 0:
            return status, size


async def client(port: int, paths: list[str], tally: Tally, start: asyncio.Event) -> None:
    """One browser: a connection of its own, the paths in order, each timed."""
    await start.wait()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), TIMEOUT)
    except (TimeoutError, OSError) as e:
        tally.errors.extend([f"connect: {type(e).__name__}"] * len(paths))
        return
    try:
        for i, path in enumerate(paths):
            t0 = time.perf_counter()
            try:
                status, size = await asyncio.wait_for(_get(reader, writer, path), TIMEOUT)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as e:
                tally.errors.extend([f"{path}: {type(e).__name__}"] * (len(paths) - i))
                return
            if status != 200:
                tally.errors.append(f"{path}: HTTP {status}")
            else:
                tally.times.append(time.perf_counter() - t0)
                tally.bytes += size
    finally:
        writer.close()


async def crowd(port: int, paths_of: list[list[str]]) -> Tally:
    """Every client at once (released together), each with its own paths."""
    tally, start = Tally(), asyncio.Event()
    tasks = [asyncio.create_task(client(port, paths, tally, start)) for paths in paths_of]
    await asyncio.sleep(0)
    start.set()
    await asyncio.gather(*tasks)
    return tally


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lesson", default=str(ROOT / "lessons" / "attention-demo.json"))
    p.add_argument("--site", help="a site already exported (else the lesson is exported into a temporary folder)")
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--no-gzip-files", action="store_true",
                   help="serve without the .gz files docs/deploy.md has written beside the pages (nginx then "
                        "compresses each answer itself)")
    a = p.parse_args(argv)
    if not os.access(NGINX, os.X_OK):
        print(f"no nginx at {NGINX} (Debian: apt-get install nginx-light)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="gpt2viz-site-")
    try:
        site = Path(a.site) if a.site else Path(tmp) / "site"
        if not a.site:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gpt2viz", "lesson", "export", a.lesson, "--out", str(site)],
                           cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
            print(f"exported in {time.perf_counter() - t0:.1f} s")
        os.chmod(tmp, 0o755)  # nginx's workers (nobody) read the site
        for path in [site, *site.rglob("*")]:  # the .gz files too
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        if not a.no_gzip_files:  # docs/deploy.md's step: `gzip -k -9` the pages and plotly.js once
            for path in [*site.glob("*.html"), *site.glob("*.js")]:
                subprocess.run(["gzip", "-k", "-9", "-f", str(path)], check=True)
        pages = ["/index.html"] + sorted(f"/{f.name}" for f in site.glob("stop-*.html"))
        first = ["/index.html", pages[1], "/plotly.min.js"]
        print(f"{len(pages)} pages; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{os.cpu_count()} cores")
        server = static_nginx(site)
        try:
            baseline = asyncio.run(crowd(server.port, [pages * a.rounds]))
            print(baseline.line("baseline, 1 client alone"))
            load = asyncio.run(crowd(server.port, [pages * a.rounds] * a.clients))
            print(load.line(f"pages, {a.clients} clients at once", baseline.p95()))
            visits = asyncio.run(crowd(server.port, [first] * a.clients))
            print(visits.line(f"first visits (index, stop 1, plotly.min.js), {a.clients} clients at once"))
        finally:
            server.stop()
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        errors = load.errors + visits.errors + baseline.errors
        if errors:
            print("errors, first 5:", errors[:5])
        return 1 if errors else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
