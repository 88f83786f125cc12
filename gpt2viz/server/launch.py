"""`gpt2viz app [streamlit flags]`: start the app from wherever the package is (a checkout or an
installed package), with the project's server settings.

Streamlit reads `.streamlit/config.toml` from the current folder only, so run elsewhere the app would
lose them (the upload cap, no usage statistics, the runner's settings). They are passed on the
command line instead, from the project's own file; flags given after `app` come last and win."""

import os
import sys
import tomllib

from ..model.memory import ONE_ARENA_ENV
from ..spec.paths import APP_ROOT


def config_flags(path=APP_ROOT / ".streamlit" / "config.toml") -> list[str]:
    """The settings of a Streamlit config.toml as command-line flags ("--server.maxUploadSize=700")."""
    with open(path, "rb") as f:
        config = tomllib.load(f)
    return [f"--{section}.{key}={str(value).lower() if isinstance(value, bool) else value}"
            for section, options in config.items() for key, value in options.items()]


def app_command(extra: list[str]) -> list[str]:
    """serve.py: app.py behind the gate that lets at most 2 uploads arrive at once (it changes nothing
    where uploads are off), the entry of the container too."""
    return [sys.executable, "-m", "streamlit", "run", str(APP_ROOT / "serve.py"), *config_flags(), *extra]


def run_app(extra: list[str]) -> int:
    """Replace this process by Streamlit's (signals and exit code are then the server's own)."""
    cmd = app_command(extra)
    os.environ.setdefault(*ONE_ARENA_ENV)  # see memory.py: a script thread then reuses what the last run freed
    os.execv(cmd[0], cmd)
    return 0  # not reached
