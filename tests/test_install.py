"""The package installs, and its one `gpt2viz` command answers from any folder: the
verbs print what `python -m gpt2viz` prints from the checkout, and `gpt2viz app` serves the app with
the project's settings. Installed with pip into a temporary folder (`--target`, no dependencies: they
are this venv's), and run from another folder, so nothing of the checkout is on the path."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpt2viz.server.class_server import free_port, healthy

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("src")
    # build from a copy: pip's in-tree build would leave build/ and *.egg-info in the checkout
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (build / f).parent.mkdir(parents=True, exist_ok=True)
            (build / f).write_bytes(src.read_bytes())
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(target), str(build)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return target


def command(target: Path, *args, **kw):
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run([str(target / "bin" / "gpt2viz"), *args], cwd=target.parent, env=env,
                          capture_output=True, text=True, timeout=300, **kw)


def test_the_installed_package_carries_the_app(installed):
    app = installed / "gpt2viz" / "webapp"
    assert (app / "app.py").is_file() and (app / "views" / "attention.py").is_file()
    assert (app / ".streamlit" / "config.toml").is_file()
    assert (app / "assets" / "demo-model" / "model.safetensors").is_file()
    assert not (app / "tests").exists() and not (app / "assets" / "attention.png").exists()  # only what runs


def test_the_command_prints_what_the_checkout_prints(installed):
    got = command(installed, "params", "--model", "gpt2", "--json")
    want = subprocess.run([sys.executable, "-m", "gpt2viz", "params", "--model", "gpt2", "--json"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    assert got.returncode == 0 and json.loads(got.stdout) == json.loads(want)


def test_train_demo_never_writes_into_the_package(installed):
    done = command(installed, "train-demo")
    assert done.returncode == 2 and "give --out" in done.stderr and done.stderr.strip().count("\n") == 0


def rendered_in_a_browser(url: str) -> None:
    """The installed app's page drawn by chromium: its title, its charts, no exception."""
    sys.path.insert(0, str(ROOT / "tests"))
    from streamlit_server import CHART, EXCEPTION, chromium_for_tests, new_context, wait_rendered

    with chromium_for_tests() as browser:
        page = new_context(browser).new_page()
        page.goto(url)
        wait_rendered(page, 2)
        assert page.locator("h1").first.inner_text().strip() == "Causal self-attention"
        assert page.locator(CHART).count() >= 2 and page.locator(EXCEPTION).count() == 0


def test_gpt2viz_app_serves_from_another_folder_with_the_projects_settings(installed):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(installed)}
    proc = subprocess.Popen([str(installed / "bin" / "gpt2viz"), "app", "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "127.0.0.1"],
                            cwd=installed.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        end = time.monotonic() + 120
        while not healthy(base):
            assert proc.poll() is None and time.monotonic() < end, proc.stdout.read().decode()[-2000:]
            time.sleep(0.3)
        with urllib.request.urlopen(base + "/", timeout=10) as r:
            assert r.status == 200
        rendered_in_a_browser(base + "/attention?model=tiny")
        # the command became Streamlit's server (exec), with .streamlit/config.toml's settings as flags,
        # though run from a folder without that file (the upload route's 1 MB until the app has run)
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0")
        assert str(installed / "gpt2viz" / "webapp" / "serve.py") in argv  # app.py behind the upload gate
        for flag in ("--server.maxUploadSize=1", "--browser.gatherUsageStats=false", "--runner.postScriptGC=false"):
            assert flag in argv, argv
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
