"""gpt2viz: the frame. Page config, the shared controls (bound to the URL), then the pages."""

from pathlib import Path

import streamlit as st

from gpt2viz.teaching import chart_text
from gpt2viz.ui import chart_element, first_paint, keyboard
from gpt2viz.ui.layout import NARROW_SIDEBAR_PX, NARROW_WINDOW_PX

A11Y_JS = "<script>" + (Path(__file__).parent / "assets" / "a11y.js").read_text() + "</script>"
CHARTS_JS = "<script>" + (Path(__file__).parent / "assets" / "charts.js").read_text() + "</script>"
# each st.Page gives the tab its own title. The icon is a file, not an emoji: Streamlit checks an
# emoji with a regular expression whose compilation took 0.5 s of the first run.
st.set_page_config(page_icon=Path(__file__).parent / "assets" / "favicon.svg", layout="wide")
# The page starts under the top bar's navigation, not 6rem below it: the first chart above the fold.
# In a narrow window (800 px: a laptop beside the projector) the sidebar gives way to the page.
# A metric's value wraps rather than ending in "…"; the random-weights line sits right under "Intermediate
# states" (its heading's padding trimmed). (tests/test_browser.py measures these.) The page's question is
# a level-2 heading drawn at the size of the level-5 one it was (no heading level skipped), and a caption
# is dark grey, not body text at 60 % opacity: 6.2:1 on white, its links 7.4:1 (axe-core asks 4.5:1); a
# chosen segment's label a darker red than the theme's (4.47:1 on its tint): 6.1:1.
# What has the keyboard's focus wears a 3 px ring (a slider's thumb too; a diagram's box, its border too),
# #1f4fd1: 6.8:1 on white and 6.0:1 on the sidebar's grey (WCAG asks 3:1 of a focus indicator). Where Streamlit
# hides or clips a control's own box, the ring goes on the box that draws it (ui/keyboard.py).
FOCUS_RING = "#1f4fd1"
st.html(f"""<style>
@media (max-width: {NARROW_WINDOW_PX}px) {{
  [data-testid='stSidebar'] {{width: {NARROW_SIDEBAR_PX}px !important; min-width: {NARROW_SIDEBAR_PX}px !important}}
  [data-testid='stSidebarUserContent'] {{padding-left: 1rem; padding-right: 1rem}}
  [data-testid='stSidebar'] [data-testid='stWidgetLabel'] p {{word-break: normal; overflow-wrap: normal}}
}}
[data-testid='stMetricValue'] > div {{white-space: normal; overflow-wrap: anywhere}}
[data-testid='stMarkdownContainer'] td, [data-testid='stMarkdownContainer'] th {{overflow-wrap: anywhere}}
.gpt2viz-table {{overflow-x: auto; margin-bottom: 1rem}}  /* ui/anatomy.py text_table: drawn as st.table is */
.gpt2viz-table table {{width: 100%; margin: 0; font-size: 0.875rem}}
.gpt2viz-table :is(th, td) {{padding: 0.25rem 0.5rem}}
.gpt2viz-table th {{font-weight: 400; color: #5c5f6a; overflow-wrap: normal}}
.st-key-values-heading h3 {{padding-bottom: 0}}
.st-key-page-question h2 {{font-size: 20px; font-weight: 600; line-height: 24px; padding: 6px 0 16px}}
[data-testid='stCaptionContainer'] {{opacity: 1; color: #5c5f6a}}
:is(a, button, summary, [tabindex]:not([tabindex='-1'])):focus-visible,
[data-testid='stSlider'] div:has(> div > input:focus-visible) {{
  outline: 3px solid {FOCUS_RING} !important; outline-offset: 2px}}
svg a:focus-visible rect {{stroke: {FOCUS_RING}; stroke-width: 4px}}
[data-variant='segmented_control'][aria-checked='true'] p {{color: #a8293a}}
.st-key-values-heading [data-testid='stMarkdownContainer'] {{margin-bottom: 0}}
[data-testid='stTextArea'] textarea {{padding-bottom: 1.75rem}}  /* a long text's last line above its counter */
{chart_text.STYLE}
{keyboard.style(FOCUS_RING)}</style>""")
# A heading a link scrolls to (/glossary#induction-head) stops below the top bar, not under it. Drawn as
# Markdown, in a hidden box of the sidebar: Streamlit scrolls to the heading as soon as it is drawn, and
# st.html's styles arrive later, moving the page's top padding (8rem -> 4rem) and the term under the bar.
early = st.sidebar.container(key="early-style")
early.markdown("""<style>
[data-testid='stLayoutWrapper']:has(> .st-key-early-style) {display: none}
[data-testid='stMainBlockContainer'] {padding-top: 4rem}
[data-testid='stMain'] :is(h1, h2, h3, h4, h5, h6)[id] {scroll-margin-top: 5rem}
</style>""", unsafe_allow_html=True)
# the app's own script for the keyboard (assets/a11y.js: regions that scroll sideways take the focus, headings
# numbered without a gap), in the same hidden box: it takes no room on the page
early.html(A11Y_JS, unsafe_allow_javascript=True)
if chart_element.available():  # the script that draws the app's charts (assets/charts.js, ui/chart_element.py)
    early.html(chart_element.later_script() + CHARTS_JS, unsafe_allow_javascript=True)
# A new server's first run: the Overview's drawing (torch-free) before torch and the weights load below
preview = first_paint.draw() if first_paint.needed() else ()
# pandas whole, under the import lock, before any session draws a table or chart: plotly and st.dataframe look
# it up in sys.modules without importing it, and two first sessions at once saw it half-initialised
# ("partially initialized module 'pandas' has no attribute 'Series'")
import pandas  # noqa: E402, F401

from gpt2viz.spec.pages import DEFAULT, pages  # noqa: E402
from gpt2viz.ui import export, lesson_view, present, vote_view  # noqa: E402
from gpt2viz.ui.anatomy import framed, source  # noqa: E402
from gpt2viz.ui.cache import script_running  # noqa: E402
from gpt2viz.ui.errors import hide_error_details, page_errors  # noqa: E402
from gpt2viz.ui.links import next_stop, tour_next  # noqa: E402
from gpt2viz.ui.state import (  # noqa: E402
    controls,
    link_notes,
    page_may_run,
    refused_values,
    selection_of_this_run,
    sidebar_footer,
)
from gpt2viz.ui.upload import upload_limits  # noqa: E402

hide_error_details()  # a server that is not local shows no traceback, whichever command started it
upload_limits()  # the upload route takes what this server's uploaders offer, no more
# every session's run counted while it draws: a run alone on a quiet server takes every core (cache.run_threads)
with script_running(), page_errors(), selection_of_this_run(globals()):
    lesson = lesson_view.open_lesson()  # a lesson's values win over the URL's, before the controls read it
    st.session_state["selection"] = selection = controls()
    lesson_view.keep_view(lesson, selection)  # before any link is drawn: links out of a lesson carry its view
    # the navigation in the top bar: the sidebar keeps only the controls, which a lecturer reaches
    # without scrolling past the page links
    page = st.navigation(pages(), position="top")
    sidebar_footer()
    export.begin(page.url_path or DEFAULT, page.title, source(selection))
    export.download_page(framed, st.sidebar)  # the charts and notices page.run() draws, built when clicked
    link_notes(selection)
    refused = st.container()  # the page's own controls' refused link values, said once the page has drawn
    if not lesson:  # on a page reached by a link out of a lesson, the way back to it
        lesson_view.back_offer()
    if lesson:  # a lesson's stop bar (its back and next; presenting, large) stands for the tour's line
        lesson_view.stop_bar(lesson, page.url_path, selection.present)
        vote_view.question_box(lesson)  # a question the class votes on, and (reveal: after) the charts held back
        if selection.weights.built:  # a size only counted here measures no claim
            lesson_view.check_claims(lesson, selection)
        lesson_view.warm(lesson, selection)
    elif selection.present:  # the large "next" stands for the tour's line
        present.chrome(next_stop(page.url_path))
    else:
        tour_next(page.url_path, selection)
    first_paint.clear(preview)  # the page draws its own from here
    if page_may_run(selection, page.url_path or DEFAULT) and vote_view.charts_shown(lesson):
        try:
            page.run()
        finally:  # a page that stops early (st.stop) still leaves the controls it drew
            lesson_view.remember(page.url_path or DEFAULT)
            if not lesson:  # a lesson's values win over the link's by design
                refused_values(refused)
