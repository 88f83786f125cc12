"""Where the app's own files are (app.py, the page scripts in views/, assets/, deploy/, lessons/ and
.streamlit/config.toml): beside the package in a checkout, and inside it, as gpt2viz/webapp/, when
the package is installed (pyproject.toml ships them there as package data, so a reader of the
repository finds the usual layout and an installed package needs no checkout)."""

from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]
_INSTALLED = Path(__file__).resolve().parents[1] / "webapp"


def app_root() -> Path:
    """The folder that holds app.py and views/."""
    if (_CHECKOUT / "app.py").is_file() and (_CHECKOUT / "views" / "overview.py").is_file():
        return _CHECKOUT
    return _INSTALLED


APP_ROOT = app_root()
# Plotly's cartesian bundle (plotly.js-cartesian-dist-min, MIT, licence beside it): the app's charts
# (ui/chart_element.py) and the lesson site's (teaching/site.py)
PLOTLY_BUNDLE = APP_ROOT / "static" / "plotly-cartesian.min.js"


def installed() -> bool:
    """True when running from an installed package, not a checkout."""
    return APP_ROOT == _INSTALLED
