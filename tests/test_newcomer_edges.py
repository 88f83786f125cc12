"""Small things a newcomer meets (issue 39, item 11): a link to a folder's weights names the folder and
reopens on it, or says in one line that it cannot; gpt2viz.parameters counts whatever gpt2viz.load
opens (a folder, a file, "demo"); the Start page's hint to pick the demo model only where the weights are
random; a page opens under the name the menu gave it."""

import sys
from pathlib import Path

import pytest
from nanogpt_ref import converted_folder

import gpt2viz
from gpt2viz.anatomy.components import component_tree
from gpt2viz.model.demo_model import DEMO_PATH
from gpt2viz.spec.config import get_config
from gpt2viz.spec.pages import PAGES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_links import run  # noqa: E402

TEXT = "To be, or not to be:\nthat is the question."
HINT = "values: pick the demo model"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return converted_folder(tmp_path_factory.mktemp("nano"))[0]


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_a_folder_link_names_its_folder_and_reopens_on_it(monkeypatch, folder, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", f"{empty}:{folder}")  # the first listed holds no weights
    at = run("attention", weights="folder", folder=folder.name, text=TEXT)
    assert not at.exception and not warnings(at)
    assert at.sidebar.selectbox(key="folder").value == folder.name
    assert any("character vocabulary" in c.value for c in at.sidebar.caption)
    assert at.query_params["folder"] in (folder.name, [folder.name])  # the address names it, so a link does
    assert any(f"folder={folder.name}" in c.value for c in at.caption)  # the tour's links carry it
    at = run("attention", weights="folder", folder="nowhere", text=TEXT)  # the first listed, empty: none opens
    assert warnings(at) == ["The link asked for the folder `'nowhere'`, which is not available here; showing "
                            "random gpt2 weights."]


def test_a_folder_link_to_a_folder_not_listed_says_which_it_shows(monkeypatch, folder):
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = run("attention", weights="folder", folder="nowhere", text=TEXT)
    assert not at.exception
    assert warnings(at) == ["The link asked for folder=`'nowhere'`, which is not available here; showing "
                            f"folder=`{folder.name}`."]


def test_parameters_counts_what_load_opens(folder):
    for spec in ("demo", str(folder), str(DEMO_PATH), "random:tiny:seed=3", "gpt2"):
        model = gpt2viz.load(spec).model
        assert gpt2viz.parameters(spec).total == sum(p.numel() for p in model.parameters()), spec
    with pytest.raises(ValueError, match="unknown model 'nowhere'"):
        gpt2viz.parameters("nowhere")


def test_the_demo_hint_on_start_only_where_the_weights_are_random():
    assert any(HINT in m.value for m in run("start", model="tiny").markdown)
    assert not any(HINT in m.value for m in run("start", weights="demo").markdown)


def test_a_component_page_opens_under_the_menus_name_where_it_says_more():
    cat = component_tree(get_config("tiny"))
    assert cat["embed"].title == "Embeddings"
    at = run("tokens", model="tiny")
    assert [t.value for t in at.title] == ["Tokens and embeddings"]
    titles = {row.url: row.title for row in PAGES}
    assert titles["tokens"] == "Tokens and embeddings"
