"""How the pages fit a window from 800 px wide (a laptop) to a projector's 1280x720 and beyond
(issue 23): the sidebar's width in a narrow window, and tables wider than the page."""


NARROW_WINDOW_PX = 1100  # below this window width the sidebar narrows to NARROW_SIDEBAR_PX
NARROW_SIDEBAR_PX = 224  # from Streamlit's 300 px: 800 px windows keep 576 px for the page
# the page's content in an 800 px window: 800 - NARROW_SIDEBAR_PX - 2 x 16 px of padding
NARROWEST_PAGE_PX = 800 - NARROW_SIDEBAR_PX - 32
