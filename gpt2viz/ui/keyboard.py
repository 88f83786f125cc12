"""The keyboard's focus, where Streamlit's and plotly's markup hides it: the styles app.py adds to its own.

app.py gives whatever takes the focus a 3 px ring. Some controls are drawn by a box around a hidden or a
clipped native control (a text area, a number, a selectbox, a checkbox, a toggle and a radio button), so
their ring goes on that box; some controls are shown only under the pointer (a heading's link, a chart's
toolbar), so they show while they have the focus; and a box that scrolls or clips (the page itself, a row of
tabs, a region that scrolls sideways) wears its ring inside its edge, where nothing cuts it away.
tests/test_browser_keyboard.py measures each of these on every page. No user text reaches this module.
"""

# the box that draws a control around its hidden or clipped native element
_FIELDS = ("[data-testid='stTextAreaRootElement']:has(textarea:focus-visible)",
           "[data-testid='stTextInputRootElement']:has(input:focus-visible)",
           "[data-testid='stNumberInputContainer']:has(input:focus-visible)",
           ":is([data-testid='stSelectbox'], [data-testid='stMultiSelect']) div:has(> input:focus-visible)")
_CHOICES = ":is([data-testid='stCheckbox'], [data-testid='stRadio']) label:has(input:focus-visible)"
# a table (st.dataframe): its grid is a canvas and a scroller inside a box that clips them
_GRID = "[data-testid='stDataFrameResizable']:has(:focus-visible)"
# their native elements, whose own ring would be cut to a sliver at the box's edge
_INNER = ("[data-testid='stTextAreaRootElement'] textarea:focus-visible",
          "[data-testid='stTextInputRootElement'] input:focus-visible",
          "[data-testid='stNumberInputContainer'] input:focus-visible",
          ":is([data-testid='stSelectbox'], [data-testid='stMultiSelect']) input:focus-visible")
# a box that scrolls and that chromium puts in the Tab order itself (the sidebar once its controls overflow it):
# a ring of its own, inside its edge
_SCROLLERS = ("[data-testid='stSidebarContent']:focus-visible",)
# boxes that clip what lies outside them: their ring inside the edge
_INSET = ("[data-testid='stMain']:focus-visible", "[data-testid='stTab']:focus-visible",
          "[data-gpt2viz-region]:focus-visible")


def style(ring: str) -> str:
    """The CSS rules (no <style> tag) for a focus ring of colour `ring`."""
    return (f"{', '.join(_FIELDS + _SCROLLERS)} {{outline: 3px solid {ring} !important; outline-offset: -3px}}\n"
            f"{_CHOICES}, {_GRID} {{outline: 3px solid {ring} !important; outline-offset: 1px}}\n"
            f"{', '.join(_INNER)} {{outline: none !important}}\n"
            f"{', '.join(_INSET)} {{outline-offset: -3px !important}}\n"
            "[data-testid='stHeaderActionElements'] a:focus-visible {opacity: 1 !important}\n"
            ".js-plotly-plot .modebar:focus-within, .js-plotly-plot .modebar:focus-within .modebar-group, "
            "[data-testid='stElementToolbar']:focus-within {opacity: 1 !important}\n")
