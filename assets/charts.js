// gpt2viz's charts: every box of class gpt2viz-chart that the app draws (gpt2viz/plots/chart_box.py) is
// drawn here with Plotly's cartesian bundle, loaded once per tab from Streamlit's static serving
// (static/plotly-cartesian.min.js). Installed once per page (app.py). A box holds its figure as JSON in an
// attribute, which is parsed, never put in the page as markup. A box Streamlit replaces (the next run drew
// another figure) is freed. window.gpt2vizCharts.drawn() is how many drawn charts it holds (a test reads it).
// Streamlit's sanitiser drops a script whose text has a less-than sign before a letter, "/" or "!": this
// file has none (tests/test_chart_element.py).
(() => {
  if (window.gpt2vizCharts) return;
  const drawnCharts = new Set();
  window.gpt2vizCharts = {drawn: () => drawnCharts.size};
  const ATTRIBUTE = "data-gpt2viz-chart";
  // the app's static files sit beside Streamlit's own under the same base URL (behind a proxy's path too)
  const main = document.querySelector("script[src*='static/js/index.']");
  const base = main ? main.src.replace(/static\/js\/index\.[^/]*\.js.*$/, "") : new URL(".", location.href).href;
  // the library as it loaded (a page with one of Streamlit's charts too may set window.Plotly to its own);
  // a load that failed is tried again by the next box that comes
  let Plotly = null;
  let loading = null;
  const load = () => loading || (loading = new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = base + "app/static/plotly-cartesian.min.js";
    script.async = true;
    script.onload = () => (window.Plotly ? resolve(Plotly = window.Plotly) : reject(new Error("no Plotly")));
    script.onerror = () => { script.remove(); reject(new Error("the chart library did not load")); };
    document.head.appendChild(script);
  }).catch(error => { loading = null; throw error; }));
  // a page that draws charts fetches the library at once, while the server runs the page; one that draws
  // none, or draws them with Streamlit's element (window.gpt2vizLater, app.py; presented: its first chart
  // fills the screen), when a box comes, if one does
  const page = location.pathname.split("/").pop();
  const later = (window.gpt2vizLater || []).some(url => url === page || encodeURIComponent(url) === page)
    || ["1", "true"].includes(new URLSearchParams(location.search).get("present"));
  if (!later) load().catch(() => {});  // said in each box that comes
  // Streamlit's own chart element has a full-screen button; this one has it in Plotly's toolbar
  const EXPAND = {width: 24, height: 24, path: "M4 4h6v2H6v4H4zm10 0h6v6h-2V6h-4zM4 14h2v4h4v2H4zm14 0h2v6h-6v-2h4z"};
  const fullScreen = {name: "fullscreen", title: "Fullscreen", icon: EXPAND,
                      click: gd => (document.fullscreenElement ? document.exitFullscreen() : gd.requestFullscreen())};
  // a box that changes width (the window, the sidebar, a column) is drawn again at its new width; a hidden
  // one (width 0: a tab or fold not shown) waits until it is shown
  const widths = new WeakMap();
  const resized = new ResizeObserver(entries => {
    for (const {target, contentRect} of entries) {
      const before = widths.get(target);
      widths.set(target, contentRect.width);
      if (before !== contentRect.width && contentRect.width > 0 && target.isConnected)
        Plotly.Plots.resize(target).catch(() => {});
    }
  });
  // a box whose chart cannot be drawn says so in one line, and is not tried again
  const failed = (box, error) => { box.textContent = `This chart could not be drawn: ${error.message}.`; };
  // drawn in a box of its own inside the chart's, as Streamlit's element draws it
  const draw = box => {
    const payload = box.getAttribute(ATTRIBUTE);
    box.removeAttribute(ATTRIBUTE);
    if (!box.isConnected) return;
    try {
      const {figure, config} = JSON.parse(payload);
      const layout = figure.layout || {};
      const gd = box.appendChild(document.createElement("div"));
      gd.style.height = "100%";
      gd.dataset.height = layout.height || "";
      drawnCharts.add(gd);
      Plotly.newPlot(gd, figure.data || [], layout, {...config, modeBarButtonsToAdd: [fullScreen]})
        .then(() => { widths.set(gd, gd.clientWidth); resized.observe(gd); }, error => failed(box, error));
    } catch (error) {
      failed(box, error);
    }
  };
  let queued = false;
  const sweep = () => {
    queued = false;
    for (const gd of drawnCharts) {
      if (gd.isConnected) continue;
      drawnCharts.delete(gd);
      resized.unobserve(gd);
      Plotly.purge(gd);
    }
    const waiting = [...document.querySelectorAll(`.gpt2viz-chart[${ATTRIBUTE}]`)];
    if (!waiting.length) return;
    load().then(() => waiting.forEach(box => box.hasAttribute(ATTRIBUTE) && draw(box)),
                error => waiting.forEach(box => { box.removeAttribute(ATTRIBUTE); failed(box, error); }));
  };
  // full screen: the chart as tall as the screen; back, as tall as its layout says
  document.addEventListener("fullscreenchange", () => {
    const full = document.fullscreenElement;
    for (const gd of drawnCharts) {
      if (!gd.isConnected || (gd !== full && !gd.dataset.full)) continue;
      Plotly.relayout(gd, {height: gd === full ? window.screen.height : (+gd.dataset.height || null)}).catch(() => {});
      if (gd === full) gd.dataset.full = "1"; else delete gd.dataset.full;
    }
  });
  new MutationObserver(() => { if (!queued) { queued = true; queueMicrotask(sweep); } })
    .observe(document.body, {subtree: true, childList: true});
  sweep();
})();
