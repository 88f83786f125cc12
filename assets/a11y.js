// gpt2viz's keyboard fixes for markup Streamlit draws: a region that scrolls sideways (a wide equation,
// a wide table, a long line of code) is reachable with Tab and named for a screen reader. Installed once
// per page (app.py), it follows every rerun's new elements. No user text reaches it.
(() => {
  if (window.gpt2vizA11y) return;
  window.gpt2vizA11y = true;
  const NAMES = [[".katex-display", "equation (scrolls sideways)"],
                 ["[data-testid='stTable']", "table (scrolls sideways)"],
                 ["[data-testid='stCode'] pre", "code (scrolls sideways)"]];
  let queued = false;
  const mark = () => {
    queued = false;
    for (const [selector, name] of NAMES) {
      for (const el of document.querySelectorAll(selector)) {
        if (el.hasAttribute("tabindex") || el.scrollWidth <= el.clientWidth) continue;
        el.tabIndex = 0;
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", name);
      }
    }
  };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(mark); } };
  new MutationObserver(later).observe(document.body, {subtree: true, childList: true});
  window.addEventListener("resize", later);
  later();
})();
