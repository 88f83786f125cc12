"""A hostile lesson's static site in chromium (file://, every other request refused): its title, texts,
notes and a claim hold each payload (an onerror image, a script, a details' ontoggle, an iframe's
srcdoc, a Markdown and an HTML javascript: link, an svg's onload), each of which sets window.__pwned
where it runs. Every page of the site is opened and the flag read, and the DOM queried for any
on* attribute, srcdoc, javascript:/data: URL, frame or script that is not the page's own. The same
check first sees one payload run, so it can fail. The files themselves: test_site_safety.py."""

import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from gpt2viz import lesson_site
from gpt2viz.teaching import lessons as lf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exported import PAYLOADS, export, hostile_lesson  # noqa: E402
from streamlit_server import chromium_for_tests  # noqa: E402

# what on the page could run: attributes, URLs, frames, and scripts other than the site's own three
DANGER = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const name = a.name.toLowerCase(), value = a.value.replace(/[\\u0000-\\u0020]/g, '').toLowerCase();
      if (name.startsWith('on') || name === 'srcdoc') bad.push(el.tagName + ' ' + name);
      const raster = el.tagName === 'image' && value.startsWith('data:image/png;base64,');  // plotly's heatmap
      if (['href', 'src', 'xlink:href', 'action', 'formaction'].includes(name) && !raster
          && /^(javascript|data|vbscript):/.test(value)) bad.push(el.tagName + ' ' + name + '=' + a.value);
    }
  }
  for (const el of document.querySelectorAll('iframe, frame, object, embed, img')) bad.push(el.tagName);
  for (const s of document.querySelectorAll('script')) {
    const own = s.getAttribute('src') === 'plotly.min.js' || s.id === 'figures' || s.textContent.includes('var figs=');
    if (!own) bad.push('SCRIPT ' + s.outerHTML.slice(0, 80));
  }
  return {flag: window.__pwned === undefined ? null : window.__pwned, bad: bad};
}"""


@pytest.fixture(scope="module")
def hostile_sites(tmp_path_factory) -> list[Path]:
    """The site written by the command line, and the one the Lessons page zips (byte for byte the same)."""
    folder = tmp_path_factory.mktemp("hostile")
    src = folder / "lesson.json"
    src.write_text(json.dumps(hostile_lesson()), encoding="utf-8")
    done = export(src, folder / "site")
    assert done.returncode == 0, done.stderr[-2000:]
    with zipfile.ZipFile(io.BytesIO(lesson_site.zipped(lf.parse(hostile_lesson())))) as z:
        z.extractall(folder / "zip")
    return [folder / "site", folder / "zip"]


@pytest.fixture(scope="module")
def page():
    with chromium_for_tests() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                      else route.abort())
        yield context.new_page()
        context.close()


def test_the_check_sees_a_payload_that_runs(page, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(f"<!DOCTYPE html><body>{PAYLOADS[0]}{PAYLOADS[2]}</body>", encoding="utf-8")
    page.goto(probe.as_uri())
    page.wait_for_function("window.__pwned === 1", timeout=5_000)
    found = page.evaluate(DANGER)
    assert found["flag"] == 1 and "IMG onerror" in found["bad"] and "DETAILS ontoggle" in found["bad"]


def test_no_payload_runs_on_any_page_of_the_site_or_of_its_zip(page, hostile_sites):
    site_files = sorted(p.name for p in hostile_sites[0].iterdir())
    assert site_files == sorted(p.name for p in hostile_sites[1].iterdir())
    for name in site_files:
        assert (hostile_sites[0] / name).read_bytes() == (hostile_sites[1] / name).read_bytes(), name
    opened = 0
    for folder in hostile_sites:
        for path in sorted(folder.glob("*.html")):
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            if path.name != "index.html":  # its charts drawn: the payloads in tick labels and titles too
                page.wait_for_function("document.querySelectorAll('.chart.drawn .main-svg').length > 0",
                                       timeout=20_000)
            page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = !d.open; })")
            page.wait_for_timeout(50)  # a toggle event fires after the task that changed it
            found = page.evaluate(DANGER)
            assert found == {"flag": None, "bad": []}, (path.name, found)
            assert "pwned" not in page.title() or "&lt;" not in page.title()
            opened += 1
    assert opened == 12
