"""A weights folder in the app: a converted nanoGPT character model offered as "Folder" (any path on
a local server, only the operator's listed folders on a class server), tokenized with its own
vocabulary on every page, and named by a lesson."""

import pytest
from nanogpt_ref import converted_folder
from streamlit.testing.v1 import AppTest
from sweep import sweep

from gpt2viz.spec.pages import BY_URL, PAGES
from gpt2viz.spec.serving import model_dirs
from gpt2viz.teaching import lessons as lf

TEXT = "To be, or not to be:\nthat is the question."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return converted_folder(tmp_path_factory.mktemp("nano"))[0]


def first_run(**params) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = str(value)
    return at.run()


def test_model_dirs_are_offered_by_folder_name(tmp_path, folder):
    other = tmp_path / "other"
    other.mkdir()
    env = {"GPT2VIZ_MODEL_DIRS": f"{folder}:{tmp_path / 'missing'}::{other}"}
    assert model_dirs(env) == {"shakespeare-char": str(folder), "other": str(other)}
    assert model_dirs({}) == {}


def test_a_class_server_offers_only_listed_folders(monkeypatch, folder):
    monkeypatch.delenv("GPT2VIZ_ALLOW_LOCAL_PATH", raising=False)
    monkeypatch.delenv("GPT2VIZ_MODEL_DIRS", raising=False)
    at = first_run(weights="folder", text=TEXT)
    assert "folder" not in at.sidebar.radio[0].options  # nothing listed, no local paths: no folders
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = first_run(weights="folder", text=TEXT)
    assert not at.exception
    assert "folder" in at.sidebar.radio[0].options and "path" not in at.sidebar.radio[0].options
    assert not [t for t in at.sidebar.text_input if t.key == "folder_path"]  # no path a visitor types
    assert at.sidebar.selectbox(key="folder").options == ["shakespeare-char"]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "character vocabulary of 65 symbols" in captions and "no biases" in captions and "exact GELU" in captions


# every mode in the full run (tests/sweep.py); test_app opens every page in every mode on random weights
@pytest.mark.parametrize("mode", sweep(["full", "training", "prefill", "decode"], {"full", "decode"}))
@pytest.mark.parametrize("url", [row.url for row in PAGES])
def test_every_page_opens_the_converted_model(monkeypatch, folder, url, mode):
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = first_run(weights="folder", text=TEXT, mode=mode)
    at.switch_page(BY_URL[url].file)
    at.run()
    assert not at.exception, at.exception[0].value
    assert not at.sidebar.error


def test_tokens_page_shows_characters(monkeypatch, folder):
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = first_run(weights="folder", text=TEXT)
    at.switch_page(BY_URL["tokens"].file)
    at.run()
    chips = " ".join(m.value for m in at.markdown if "title=\"id " in m.value)
    assert 'title="id 32">T</span>' in chips and ">↵<" in chips  # one chip a character, newline as ↵
    rows = at.dataframe[0].value
    assert list(rows["token"][:4]) == ["T", "o", "␣", "b"] and len(rows) == len(TEXT)
    assert any("one token per character" in m.value for m in at.info)


def test_a_symbol_outside_the_vocabulary_is_said_in_one_line(monkeypatch, folder):
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = first_run(weights="folder", text="naïve")
    assert not at.exception
    said = " ".join(e.value for kind in (at.error, at.warning, at.info) for e in kind)
    assert "'ï' (U+00EF) is not in this model's vocabulary of 65 symbols" in said


def test_a_local_server_opens_any_folder_by_path(monkeypatch, folder):
    monkeypatch.setenv("GPT2VIZ_ALLOW_LOCAL_PATH", "1")
    monkeypatch.delenv("GPT2VIZ_MODEL_DIRS", raising=False)
    at = first_run(weights="folder", text=TEXT)
    at.sidebar.text_input(key="folder_path").input(str(folder)).run()
    assert not at.exception and not at.sidebar.error
    assert any("shakespeare-char from the folder" in c.value for c in at.sidebar.caption)


def test_a_pt_as_local_file_names_the_converter(monkeypatch, tmp_path):
    monkeypatch.setenv("GPT2VIZ_ALLOW_LOCAL_PATH", "1")
    (tmp_path / "ckpt.pt").write_bytes(b"\x80\x02 a pickle")
    at = first_run(weights="path")
    at.sidebar.text_input(key="path").input(str(tmp_path / "ckpt.pt")).run()
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and "gpt2viz convert nanogpt" in errors[0]


def test_a_lesson_names_a_listed_folder(monkeypatch, folder):
    lesson = lf.loads('{"title": "Our Shakespeare model", "weights": {"source": "folder", "name": "shakespeare-char"},'
                      ' "text": "ROMEO:\\nBut soft", "stops": [{"page": "tokens"}]}', "x.json")
    assert lesson.pins(0)["folder"] == "shakespeare-char" and lesson.pins(0)["weights"] == "folder"
    key = "lecture-key-" + "y" * 20
    monkeypatch.setenv(lf.KEY_ENV, key)
    monkeypatch.delenv("GPT2VIZ_ALLOW_LOCAL_PATH", raising=False)
    monkeypatch.delenv("GPT2VIZ_MODEL_DIRS", raising=False)  # a server without the folder says so
    token = lf.sign(lesson, key.encode())
    at = first_run(lesson=token, stop="0")
    assert any("need the folder shakespeare-char on the lecturer's server" in w.value for w in at.warning)
    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))  # the class's own model, in front of the class
    at = first_run(lesson=token, stop="0")
    assert not at.exception and not at.error
    picker = at.sidebar.selectbox(key="folder")
    assert picker.value == "shakespeare-char" and picker.disabled  # the lesson pins it
    assert any("character vocabulary of 65 symbols" in c.value for c in at.sidebar.caption)
    with pytest.raises(lf.LessonError, match="weights.name: .* is a path"):
        lf.loads('{"title": "t", "weights": {"source": "folder", "name": "/etc"}, "text": "x", '
                 '"stops": [{"page": "tokens"}]}', "x.json")


def test_parameter_accounting_follows_the_model(monkeypatch, folder):
    import gpt2viz

    monkeypatch.setenv("GPT2VIZ_MODEL_DIRS", str(folder))
    at = first_run(weights="folder", text=TEXT)
    at.switch_page(BY_URL["params"].file)
    at.run()
    assert not at.exception
    total = sum(p.numel() for p in gpt2viz.load(str(folder)).model.parameters())  # counted by torch
    assert at.selectbox(key="params_size").value == "the model in use"
    assert any(h.value.startswith(f"shakespeare-char: {total:,} parameters · no biases · exact GELU")
               for h in at.subheader)
    assert any(f"**{total:,}** parameters in the header" in m.value and "✅ matches" in m.value for m in at.markdown)
