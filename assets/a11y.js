// gpt2viz's keyboard and screen-reader fixes for markup Streamlit draws: headings numbered without a
// gap, and a region that scrolls sideways (a wide equation, a wide table, a long line of code) reachable
// with Tab and named. Installed once per page (app.py), it follows every rerun's new elements. No user
// text reaches it. Every chart's box takes role="figure" and, as its accessible name, the sentence the app
// writes under it (gpt2viz/ui/words.py: a box of class gpt2viz-figure-words naming its sentence's id).
(() => {
  if (window.gpt2vizA11y) return;
  window.gpt2vizA11y = true;
  const NAMES = [[".katex-display", "equation (scrolls sideways)"],
                 ["[data-testid='stTable'], .gpt2viz-table", "table (scrolls sideways)"],
                 ["[data-testid='stCode'] pre", "code (scrolls sideways)"]];
  // Streamlit draws st.title as h1 and st.subheader as h3, and a page without an h2 between them skips a
  // level for a screen reader. The levels a page uses keep their order but are numbered without a gap
  // (h1, h3, h5 are read as levels 1, 2, 3) through aria-level; how they look stays.
  const levels = () => {
    // the headings drawn: a hidden one (presented, a lesson's note stands for the page's question) is not read
    const heads = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter(h => h.getClientRects().length);
    // an icon in a heading (the page's question: ":material/help:") is decoration: read, it put "help icon"
    // before every question
    for (const icon of document.querySelectorAll(":is(h1, h2, h3, h4, h5, h6) [role='img'][aria-label$=' icon']"))
      if (icon.getAttribute("aria-hidden") !== "true") icon.setAttribute("aria-hidden", "true");
    const used = [...new Set(heads.map(h => +h.tagName[1]))].sort();
    for (const h of heads) {
      const level = used.indexOf(+h.tagName[1]) + 1;
      if (level === +h.tagName[1]) h.removeAttribute("aria-level");
      else if (h.getAttribute("aria-level") !== String(level)) h.setAttribute("aria-level", String(level));
    }
  };
  // the chart a sentence belongs to: the nearest chart drawn before the sentence's own element
  const figures = () => {
    // Streamlit's chart element, and the app's own box (which names its sentence already: gpt2viz/plots/chart_box.py)
    const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart'], .gpt2viz-chart")];
    for (const words of document.querySelectorAll(".gpt2viz-figure-words[data-figure]")) {
      const chart = charts.filter(c => c.compareDocumentPosition(words) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
      if (!chart || chart.getAttribute("aria-labelledby") === words.dataset.figure) continue;
      chart.setAttribute("role", "figure");
      chart.setAttribute("aria-labelledby", words.dataset.figure);
    }
  };
  let queued = false;
  const mark = () => {
    queued = false;
    levels();
    figures();
    for (const [selector, name] of NAMES) {
      for (const el of document.querySelectorAll(selector)) {
        if (el.hasAttribute("tabindex") || el.scrollWidth <= el.clientWidth) continue;
        el.tabIndex = 0;
        el.setAttribute("role", "region");
        el.dataset.gpt2vizRegion = name;
      }
      // two regions of one name are told apart by their place: "equation 2 (scrolls sideways)"
      const regions = [...document.querySelectorAll("[data-gpt2viz-region]")]
        .filter(el => el.dataset.gpt2vizRegion === name);
      regions.forEach((el, i) => el.setAttribute("aria-label",
                                                 regions.length > 1 ? name.replace(" (", ` ${i + 1} (`) : name));
    }
  };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(mark); } };
  // a chart's "Show the numbers" keeps its table (the app's own escaped HTML, ui/words.py) in data-numbers
  // until it is first opened
  document.addEventListener("toggle", ev => {
    const fold = ev.target;
    if (!(fold instanceof HTMLDetailsElement) || !fold.open || !fold.matches(".gpt2viz-show[data-numbers]")) return;
    fold.insertAdjacentHTML("beforeend", fold.dataset.numbers);
    fold.removeAttribute("data-numbers");
    later();
  }, true);
  new MutationObserver(later).observe(document.body, {subtree: true, childList: true});
  window.addEventListener("resize", later);
  later();
})();
