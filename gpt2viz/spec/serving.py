"""Which visitor-triggered features a server offers: the one rule shared by downloads, uploads,
random model sizes and error details.

A server that listens on this machine alone (server.address localhost, 127.0.0.1 or ::1) serves
its own operator, who may fetch, upload or build at will and reads tracebacks; a server on another
address serves a class, where one visitor's click must not fill the disk or the memory every student
shares, nor show the server's files. The operator decides with an environment variable: "1" offers
the feature everywhere, "0" nowhere. Replicas behind a proxy listen on loopback and look local: a
request the proxy marks never counts as local (ui/visitor.py), and their setup sets the variables
(docs/deploy.md, Dockerfile, the class server).
"""

import os

LOOPBACK = ("localhost", "127.0.0.1", "::1")
# set by the proxy in front of the app (deploy/nginx.conf.template) on every request it passes: such a
# visitor came from the network, whatever address the app listens on (ui/visitor.py)
PROXIED_HEADER = "X-Gpt2viz-Proxied"
RANDOM_MODELS = "GPT2VIZ_RANDOM_MODELS"
# what a class server builds with random weights unless its operator says otherwise: a few hundred MiB
# each, where gpt2-xl is 6 GB
DEFAULT_RANDOM_MODELS = ("gpt2", "tiny")


def is_local(server_address: str | None) -> bool:
    """A server listening on this machine alone (an unset address listens on every interface)."""
    return server_address in LOOPBACK


def operator_allows(variable: str, server_address: str | None, env=os.environ) -> bool:
    """`variable` set to "1" or "0" decides; unset (or anything else), only a loopback server."""
    setting = env.get(variable)
    if setting in ("0", "1"):
        return setting == "1"
    return is_local(server_address)


def random_models(server_address: str | None, presets, env=os.environ) -> tuple[str, ...]:
    """The preset sizes a visitor may build with random weights, in `presets`' order: those
    GPT2VIZ_RANDOM_MODELS names (comma-separated; unknown names ignored) where it names one; else every
    preset on a local server, and gpt2 and tiny on any other."""
    named = {name.strip() for name in env.get(RANDOM_MODELS, "").split(",")} & set(presets)
    wanted = named or (set(presets) if is_local(server_address) else set(DEFAULT_RANDOM_MODELS))
    return tuple(name for name in presets if name in wanted)


MODEL_DIRS = "GPT2VIZ_MODEL_DIRS"  # weights folders a server offers, separated by ":" as in PATH


def model_dirs(env=os.environ) -> dict[str, str]:
    """The weights folders the operator lists in GPT2VIZ_MODEL_DIRS, by folder name (what a visitor
    sees and a lesson names; never a path a visitor types). A name listed twice keeps its first
    folder, as PATH does; entries that are not folders are left out."""
    found: dict[str, str] = {}
    for entry in env.get(MODEL_DIRS, "").split(":"):
        path = os.path.abspath(os.path.expanduser(entry)) if entry.strip() else ""
        if path and os.path.isdir(path):
            found.setdefault(os.path.basename(path.rstrip(os.sep)), path)
    return found
