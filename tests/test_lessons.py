"""A lesson file is checked field by field, travels in a signed link that only the key
opens, expires when told, and the command line prints the link (or one line saying why not)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpt2viz.anatomy.components import component_tree
from gpt2viz.spec.config import get_config
from gpt2viz.spec.pages import PAGES
from gpt2viz.teaching import lessons as lf

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "lessons").glob("*.json"))
KEY = b"k" * 32
MINIMAL = {"title": "T", "weights": {"source": "random", "model": "tiny"}, "text": "Hello world",
           "stops": [{"page": "attention"}]}


def with_(**changes) -> dict:
    return json.loads(json.dumps(MINIMAL)) | changes


def test_a_stop_visits_any_page_but_the_lesson_builder():
    assert set(lf.PAGES) == {row.url for row in PAGES} - {"lesson"} and "attention" in lf.PAGES


@pytest.mark.parametrize("d,field", [
    ({k: v for k, v in MINIMAL.items() if k != "title"}, "title: missing"),
    (with_(weights={"source": "upload"}), "weights.source: 'upload' is not one of"),
    (with_(weights={"source": "random", "model": "gpt5"}), "weights.model: 'gpt5'"),
    (with_(weights={"source": "hf-cache"}), "weights.checkpoint: missing"),
    (with_(text="x" * 401), "text: 401 characters, at most 400"),
    (with_(text="  "), "text: is empty"),
    (with_(stops=[]), "stops: expected a list of 1 to 24"),
    (with_(stops=[{"page": "atention"}]), "stops[0].page: 'atention' is not a page"),
    (with_(stops=[{"page": "attention"}, {"page": "attention", "block": 2}]),
     "stops[1].block: 2 is not between 0 and 1"),
    (with_(stops=[{"page": "attention", "head": "3"}]), "stops[0].head: expected a whole number"),
    (with_(stops=[{"page": "attention", "mode": "sideways"}]), "stops[0].mode: 'sideways'"),
    (with_(stops=[{"page": "whatif", "values": {"part": "wheel"}}]), "stops[0].values.part: 'wheel' is not one of"),
    (with_(stops=[{"page": "attention", "values": {"part": "head"}}]),
     "stops[0].values.part: not a control of the attention page"),
    (with_(stops=[{"page": "attention", "colour": 1}]), "stops[0].colour: unknown field"),
    (with_(free=["text", "seed"]), "free: 'seed' is not a list of controls"),
    (with_(expires="tomorrow"), "expires: expected a whole number"),
    # a trial's lessons that passed the check but could not be shown as written
    (with_(weights={"source": "demo"}, stops=[{"page": "attention", "block": 7}]),
     "stops[0].block: 7 is not between 0 and 1"),
    (with_(weights={"source": "demo"}, stops=[{"page": "attention", "head": -1}]),
     "stops[0].head: -1 is not between 0 and 3"),
    (with_(stops=[{"page": "whatif", "values": {"part": "neuron", "neuron": 10**9}}]),
     "stops[0].values.neuron: 1000000000 is not between 0 and 255"),
    (with_(weights={"source": "hf-cache", "checkpoint": "../../../etc/passwd"}),
     "weights.checkpoint: '../../../etc/passwd' is not a published checkpoint (one of gpt2,"),
    (with_(stops=[{"page": "heads", "claims": [{"text": "t", "citation": "c", "measure": "induction",
                                                 "heads": [[99, 99]], "threshold": 0.5}]}]),
     "stops[0].claims[0].heads (a block): 99 is not between 0 and 1"),
    (with_(title="a\x00b"), "title: holds the control character U+0000"),
])
def test_a_malformed_lesson_names_its_field_in_one_line(d, field):
    with pytest.raises(lf.LessonError) as e:
        lf.parse(d)
    assert str(e.value).startswith(field) and "\n" not in str(e.value), str(e.value)


def test_toml_and_json_read_the_same_lesson(tmp_path):
    toml = tmp_path / "l.toml"
    toml.write_text('title = "T"\ntext = "Hello world"\n[weights]\nsource = "random"\nmodel = "tiny"\n'
                    '[[stops]]\npage = "attention"\n')
    assert lf.load(toml) == lf.parse(MINIMAL)
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "T",')
    with pytest.raises(lf.LessonError, match=r"^bad.json: not valid JSON"):
        lf.load(bad)


def test_a_signed_link_opens_with_its_key_only():
    lesson = lf.parse(with_(text_b="Hello there", free=["head"]))
    token = lf.sign(lesson, KEY)
    assert lf.verify(token, KEY) == lesson
    with pytest.raises(lf.LessonError, match="signature does not match"):
        lf.verify(token, b"o" * 32)
    with pytest.raises(lf.LessonError, match="cannot check lesson links"):
        lf.verify(token, None)


def test_a_tampered_payload_or_tag_is_refused():
    token = lf.sign(lf.parse(MINIMAL), KEY)
    payload, tag = token.split(".")
    other = lf.sign(lf.parse(with_(text="Goodbye world")), KEY).split(".")[0]
    for bad in (f"{other}.{tag}", f"{payload}.{tag[:-1]}{'A' if tag[-1] != 'A' else 'B'}", payload, f"{payload}."):
        with pytest.raises(lf.LessonError, match="signature does not match"):
            lf.verify(bad, KEY)
    assert len(tag) == 22  # 128 bits in base64


def test_an_expired_link_says_when():
    token = lf.sign(lf.parse(MINIMAL), KEY, expires=1_800_000_000)
    assert lf.verify(token, KEY, now=1_799_999_999).expires == 1_800_000_000
    with pytest.raises(lf.LessonError, match="expired on 2027-01-15 08:00 UTC"):
        lf.verify(token, KEY, now=1_800_000_000)


def test_a_too_short_key_is_refused():
    assert lf.server_key({}) is None
    with pytest.raises(lf.LessonError, match="at least 16"):
        lf.server_key({lf.KEY_ENV: "short"})


def test_locked_controls_are_the_pinned_ones_not_left_free():
    lesson = lf.parse(with_(free=["weights", "head"], text_b="Hi there",
                            stops=[{"page": "whatif", "block": 1, "values": {"part": "MLP", "neuron": 3}}]))
    pins = lesson.pins(0)
    assert pins == {"weights": "random", "model": "tiny", "seed": 0.0, "text": "Hello world", "text_b": "Hi there",
                    "mode": "full", "block": 1, "head": 0, "part": "MLP", "neuron": 3.0}
    assert lesson.locked(0) == {"text", "text_b", "mode", "block", "part", "neuron"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_the_shipped_lessons_are_valid_and_their_links_short(path):
    lesson = lf.load(path)
    token = lf.sign(lesson, KEY, expires=2**33)
    link = "https://gpt2viz.example.org" + lf.href(lesson.stops[0].page, token, 0)
    assert len(link) < 2_000, len(link)  # a proxy's default request line is 8 KB
    assert lf.verify(token, KEY) == lesson.__class__(**{**lesson.__dict__, "expires": 2**33})


def test_the_parameters_lesson_says_the_catalogues_numbers():
    """Each stop's note states its part's count as the component catalogue computes it for gpt2."""
    lesson = lf.load(ROOT / "lessons" / "parameters.json")
    cat = component_tree(get_config("gpt2"))
    notes = {s.page: s.note for s in lesson.stops}
    n = cat["block.attn.qkv"].total // 12
    expect = {"overview": ["model"], "tokens": ["embed.tok", "embed.pos", "embed"], "attention": ["block.attn.qkv"],
              "merge": ["block.attn.merge"], "mlp": ["block.mlp"], "params": ["embed", "block", "ln_f", "model"]}
    for page, ids in expect.items():
        for cid in ids:
            assert f"{cat[cid].total:,}" in notes[page], (page, cid)
    assert f"{n:,}" in notes["attention"] and f"{cat['block.ln1'].total // 12:,}" in notes["layernorm"]
    assert cat["embed"].total + cat["block"].total + cat["ln_f"].total == cat["model"].total == 124_439_808


def cli(*args, key: str | None = None):
    import os

    env = {k: v for k, v in os.environ.items() if k != lf.KEY_ENV} | ({lf.KEY_ENV: key} if key else {})
    return subprocess.run([sys.executable, "-m", "gpt2viz", "lesson", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_cli_prints_a_link_that_verifies_and_expires():
    p = cli("link", "lessons/parameters.json", "--expires-in", "2", "--base", "https://class.example/", key="s" * 20)
    assert p.returncode == 0, p.stderr
    link = p.stdout.strip()
    assert link.startswith("https://class.example/?lesson=") and link.endswith("&stop=0")  # overview is served at /
    lesson = lf.verify(link.split("lesson=")[1].split("&")[0], b"s" * 20)
    import time
    assert 2 * 3600 - 60 < lesson.expires - time.time() <= 2 * 3600


@pytest.mark.parametrize("args,key,needle", [
    (["link", "lessons/parameters.json"], None, "no signing key: set GPT2VIZ_LESSON_KEY"),
    (["link", "lessons/parameters.json"], "short", "at least 16"),
    (["check", "nowhere.json"], None, "cannot read it"),
])
def test_cli_without_a_key_or_file_exits_2_with_one_line(args, key, needle):
    p = cli(*args, key=key)
    assert p.returncode == 2 and needle in p.stderr and p.stderr.count("\n") == 1 and not p.stdout, p.stderr


def test_cli_check_names_the_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(with_(stops=[{"page": "whatif", "values": {"method": "max"}}])))
    p = cli("check", str(bad))
    assert p.returncode == 2 and "stops[0].values.method: 'max' is not one of zero, mean" in p.stderr
    ok = cli("check", "lessons/attention-demo.json")
    assert ok.returncode == 0 and "6 stops" in ok.stdout


def test_the_docs_example_lesson_is_valid():
    import re

    readme = (ROOT / "docs" / "cli.md").read_text()
    example = re.search(r"A lesson file \(JSON.*?```json\n(.*?)```", readme, re.S).group(1)
    lesson = lf.parse(json.loads(example))
    assert [s.page for s in lesson.stops] == ["attention", "whatif"] and lesson.free == ("head",)


def test_the_qr_code_is_an_svg_of_the_link():
    import xml.etree.ElementTree as ET

    import segno

    link = "https://class.example.org/attention?lesson=abc.def&stop=0"
    svg = lf.qr_svg(link)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and root.find(".//{http://www.w3.org/2000/svg}path") is not None
    size = (segno.make(link, error="m").symbol_size(scale=6, border=4))
    assert (int(float(root.get("width"))), int(float(root.get("height")))) == size


def test_every_url_bound_control_of_a_page_can_be_set_by_a_stop_and_freed():
    """The experiment, the lens's position and depth, the head finder's axes and opened head, What if's tracked
    token, Compare and patch's answers and top-p: a stop sets them, checked as the pages offer them, and
    `free` may name them."""
    from gpt2viz.analysis.experiments import EXPERIMENTS
    from gpt2viz.ui.heads_view import LABELS

    assert tuple(EXPERIMENTS) == lf.EXPERIMENT_KEYS and tuple(LABELS) == lf.SCORE_LABELS
    stops = [{"page": "experiments", "values": {"experiment": "no mask"}},
             {"page": "lens", "values": {"lens_pos": 3, "lens_depth": 1}},
             {"page": "heads", "values": {"score_x": "induction", "score_y": "entropy", "open_block": 1}},
             {"page": "whatif", "values": {"track": "␣after"}},
             {"page": "output", "values": {"topp": 0.9}}]
    lesson = lf.parse(with_(stops=stops, free=["lens_pos"]))
    assert lesson.pins(1)["lens_depth"] == 1 and "lens_pos" not in lesson.locked(1)
    assert "experiment" in lesson.locked(0)
    with pytest.raises(lf.LessonError, match="stops.0..values.experiment: 'no wheel' is not one of"):
        lf.parse(with_(stops=[{"page": "experiments", "values": {"experiment": "no wheel"}}]))
    with pytest.raises(lf.LessonError, match="free: 'lens_depth' is not a list of controls"):
        lf.parse(with_(free=["lens_depth"]))  # no stop on the lens: nothing of it to free


# ---------------------------------------------------------------------------- parsed within a size and depth budget
DEEP = {"deep.json": "[" * 100_000 + "]" * 100_000, "deepobj.json": '{"a":' * 5000 + "1" + "}" * 5000,
        "deep.toml": "title = " + "[" * 5000 + "]" * 5000 + "\n"}


@pytest.mark.parametrize("name", DEEP)
def test_a_deeply_nested_lesson_file_is_refused_in_one_line_before_it_is_parsed(tmp_path, name):
    """The trial's files: json and tomllib recurse, and RecursionError passed every `except`."""
    path = tmp_path / name
    path.write_text(DEEP[name])
    p = cli("check", str(path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert f"nested more than {lf.MAX_DEPTH} levels deep" in p.stderr
    with pytest.raises(lf.LessonError, match="nested more than"):
        lf.loads_bytes(DEEP[name].encode(), name)  # what the page's upload calls


def test_nesting_counts_brackets_outside_strings_and_comments():
    assert lf.nesting('{"a": ["[[[[", {"b": "\\"]]{{"}]}') == 3
    assert lf.nesting("a = '[[[[' # [[[[[[\n[[stops]]\nb = [[1], [2]]\n", toml=True) == 2
    for path in sorted((ROOT / "lessons").iterdir()):  # every shipped lesson fits, with room
        assert lf.nesting(path.read_text(), path.suffix == ".toml") <= lf.MAX_DEPTH // 2, path.name


def test_a_signed_link_or_a_draft_that_inflates_to_deep_json_says_so_in_one_line():
    import zlib

    key = b"k" * 20
    payload = lf._b64(zlib.compress(("[" * 20_000).encode(), 9))
    with pytest.raises(lf.LessonError, match="malformed: .*nested more than"):
        lf.verify(f"{payload}.{lf._tag(key, payload)}", key)
    with pytest.raises(lf.LessonError):
        lf.read_draft(payload)


def test_a_lesson_file_that_is_not_utf8_or_too_large_says_so_in_one_line(tmp_path):
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00{}")
    p = cli("check", str(binary))
    assert p.returncode == 2 and "not UTF-8 text (byte 0 is 0xff)" in p.stderr and p.stderr.count("\n") == 1
    with pytest.raises(lf.LessonError, match="not UTF-8 text"):
        lf.loads_bytes(b"\xff\xfe", "up.json")
    big = tmp_path / "big.json"
    big.write_text(" " * (4 * lf.MAX_FILE_CHARS + 1))
    p = cli("check", str(big))
    assert p.returncode == 2 and "more than a lesson's" in p.stderr, p.stderr


def test_check_warns_of_random_weights_a_class_server_does_not_build(tmp_path):
    xl = tmp_path / "xl.json"
    xl.write_text(json.dumps(with_(weights={"source": "random", "model": "gpt2-xl"})))
    p = cli("check", str(xl))
    assert p.returncode == 0 and "a class server builds random gpt2 and tiny weights" in p.stderr, p.stderr
    assert "not gpt2-xl: its students would see a refusal" in p.stderr
    assert not cli("check", "lessons/attention-demo.json").stderr


def test_brackets_in_a_toml_notes_multiline_string_are_text():
    """The review's: a triple-quoted note with 17 half-open intervals was refused as nested 17 deep."""
    text = ('title = "T"\ntext = "Hello world"\n[weights]\nsource = "random"\nmodel = "tiny"\n[[stops]]\n'
            'page = "attention"\nnote = """\n' + "[0, 1) " * 17 + "\n{ and '''\n\"\"\"\n")
    assert lf.nesting(text, toml=True) == 2
    assert lf.loads(text, "l.toml").stops[0].note.startswith("[0, 1) ")
    assert lf.nesting("a = '''\n[[[[\n'''\nb = [[1]]\n", toml=True) == 2
