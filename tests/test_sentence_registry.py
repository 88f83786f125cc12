"""One home for every computed sentence (gpt2viz/teaching/registry.py), held by reading the source:

(a) every registered sentence function is called in a corpus test (tests/test_*corpus*.py), which
    runs it over the corpus of weights, texts and modes and checks its claims;
(b) every public function of a teaching module that the pages call (gpt2viz/ui/, views/, the static
    lesson site) and that returns text is either registered (SENTENCES) or listed, with a comment, as
    not a sentence (NOT_SENTENCES), and says what it returns (an annotation);
(c) no module under gpt2viz/ui/ or views/ formats a number into a sentence itself: an f-string (or a
    str.format / % template) that formats a value with a numeric spec (`:.3f`, `:,`, `:.0%`, `:.2g`,
    `:d` …) or calls round/fmt/fixed inside, and has a word of four letters or more in its literal
    text (or in the string it is concatenated with), fails. A number alone, or with a unit ("12.5 MiB",
    "3,072", "0.25 B"), is layout: a table cell, a metric. The few layout strings with words (a progress
    counter, CSS, an echo of a control's own value) are listed in LAYOUT, each with its reason.
"""

import ast
import inspect
import re
from pathlib import Path

import pytest

from gpt2viz.teaching import registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "gpt2viz" / "ui").glob("*.py")) + sorted((ROOT / "views").glob("*.py"))
CALLERS = PAGES + [ROOT / "gpt2viz" / "lesson_site.py"]
CORPUS = sorted((ROOT / "tests").glob("test_*corpus*.py"))
TEXT_TYPES = re.compile(r"\bstr\b|\bLiveCheck\b|\bGrade\b|\bExercise\b|\bAttempt\b")
NUMERIC_SPEC = re.compile(r"[,_%eEfFgGn]|\.\d|d$")
WORD = re.compile(r"[A-Za-z]{4,}")
FORMATTERS = {"round", "fmt", "fixed"}
LAYOUT_CALLS = {"working"}  # a progress line while a run computes ("Running gpt2 on 1,024 tokens…")

# moved by the claims branch: the lead deletes this set when the branches merge
PENDING: set[str] = set()  # files that may still build sentences: none

# (file, the formatted expression) -> why the string is layout, not a sentence about a run
LAYOUT = {
    ("gpt2viz/ui/working.py", "s.done"): "a progress bar's counter of steps",
    ("gpt2viz/ui/working.py", "s.total"): "a progress bar's counter of steps",
    ("gpt2viz/ui/working.py", "seconds"): "a progress bar's estimate of the time left",
    ("gpt2viz/ui/working.py", "seconds / 60"): "a progress bar's estimate of the time left",
    ("gpt2viz/ui/working.py", "ahead"): "a waiting run's progress line: the runs ahead of it in line",
    ("gpt2viz/ui/present.py", "lines * NOTE_LINE_REM + 1 - QUESTION_REM"): "a CSS length",
    ("gpt2viz/ui/upload.py", "file.size / MIB"): "an uploaded file's size, not a run's number",
    ("gpt2viz/ui/upload.py", "held.size / MIB"): "an uploaded file's size, not a run's number",
    ("gpt2viz/ui/upload.py", "store.idle_seconds / 60"): "how long an upload is kept, a server setting",
    ("gpt2viz/ui/chips.py", "len(ids) - limit"): "the token chips' counter of the chips not drawn",
    ("gpt2viz/ui/site_download.py", "len(built[1]) / 1000000.0"): "a download's size",
    ("gpt2viz/ui/state.py", "lo"): "a control's range, echoed when a link asks outside it",
    ("gpt2viz/ui/state.py", "hi"): "a control's range, echoed when a link asks outside it",
    ("gpt2viz/ui/state.py", "type(default)(value)"): "a control's own value, echoed",
    ("gpt2viz/ui/classroom.py", "temperature"): "the sampling controls' own values, naming the distribution shown",
    ("gpt2viz/ui/classroom.py", "top_p"): "the sampling controls' own values, naming the distribution shown",
    ("views/output.py", "temperature"): "a chart title echoing the temperature control",
    ("views/output.py", "top_p"): "a chart title echoing the top-p control",
}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_registry_is_the_union_of_the_modules_sentences():
    functions = registry.sentence_functions()
    assert len(functions) >= 40
    for module in registry.modules():
        own = getattr(module, "SENTENCES", ())
        for f in own + getattr(module, "NOT_SENTENCES", ()):
            assert f.__module__ == module.__name__, (module.__name__, f)  # listed where it is defined
        assert not set(own) & set(getattr(module, "NOT_SENTENCES", ())), module.__name__
        imported = {a.name for n in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(n, ast.Import)
                    for a in n.names} | {n.module for n in ast.walk(ast.parse(inspect.getsource(module)))
                                         if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(m.startswith("streamlit") for m in imported), module.__name__  # pure: no Streamlit


@pytest.mark.parametrize("function", sorted(registry.sentence_functions(), key=lambda f: (f.__module__, f.__name__)),
                         ids=lambda f: f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}")
def test_every_sentence_function_is_in_a_corpus_test(function):
    """(a): a call of it, by name, in a tests/test_*corpus*.py file (another branch's corpus counts)."""
    call = re.compile(rf"\b{re.escape(function.__name__)}\s*\(")
    assert any(call.search(p.read_text(encoding="utf-8")) for p in CORPUS), \
        f"{function.__module__}.{function.__name__} is registered but no corpus test calls it"


def called_by_pages() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in CALLERS)


def test_every_text_function_the_pages_call_is_registered_or_said_not_to_be_a_sentence():
    """(b)"""
    pages, wrong = called_by_pages(), []
    for module in registry.modules():
        listed = set(getattr(module, "SENTENCES", ())) | set(getattr(module, "NOT_SENTENCES", ()))
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            if not re.search(rf"\b{node.name}\b", pages):
                continue  # the pages do not call it
            where = f"{module.__name__}.{node.name}"
            if node.returns is None:
                wrong.append(f"{where}: the pages call it; annotate what it returns")
            elif TEXT_TYPES.search(ast.unparse(node.returns)) and getattr(module, node.name) not in listed:
                wrong.append(f"{where} returns {ast.unparse(node.returns)}: add it to SENTENCES or NOT_SENTENCES")
    assert not wrong, "\n".join(wrong)


def _spec(value: ast.FormattedValue) -> str:
    if value.format_spec is None:
        return ""
    return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in value.format_spec.values)


def _formats_a_number(value: ast.FormattedValue) -> bool:
    if NUMERIC_SPEC.search(_spec(value)):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FORMATTERS
               for n in ast.walk(value.value))


def _literal(node: ast.AST) -> str:
    """The literal text of a string expression: an f-string's constant parts, and the string
    constants it is concatenated with (a + chain, a conditional), not the strings inside the values
    it formats (a dictionary key such as row['total'])."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    if isinstance(node, ast.JoinedStr):
        return " ".join(v.value if isinstance(v, ast.Constant) else _literal(v.value) if isinstance(v.value, (
            ast.JoinedStr, ast.BinOp, ast.IfExp)) else "" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) + " " + _literal(node.right)
    if isinstance(node, ast.IfExp):
        return _literal(node.body) + " " + _literal(node.orelse)
    return ""


def sentences_built_in(path: Path) -> list[str]:
    """(c): 'line: {expr:spec}' for every number formatted into a sentence in this file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def top(node):  # the whole string expression: up the + chain
        while isinstance(parents.get(node), ast.BinOp | ast.JoinedStr):
            node = parents[node]
        return node

    def in_layout_call(node) -> bool:
        while node in parents:
            node = parents[node]
            name = getattr(node.func, "id", getattr(node.func, "attr", None)) if isinstance(node, ast.Call) else None
            if name in LAYOUT_CALLS:
                return True
        return False

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and not isinstance(parents.get(node), ast.FormattedValue):
            numbers = [v for v in node.values if isinstance(v, ast.FormattedValue) and _formats_a_number(v)]
            numbers += [v for inner in ast.walk(node) if isinstance(inner, ast.JoinedStr) and inner is not node
                        for v in inner.values if isinstance(v, ast.FormattedValue) and _formats_a_number(v)]
            numbers = [v for v in numbers if (rel(path), ast.unparse(v.value)) not in LAYOUT]
            if numbers and WORD.search(_literal(top(node))) and not in_layout_call(node):
                found += [f"{rel(path)}:{v.lineno}: {{{ast.unparse(v.value)}:{_spec(v)}}}" for v in numbers]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
              and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
            template = node.func.value.value
            if re.search(r"\{[^}]*:[^}]*([,%eEfFgG]|\.\d)[^}]*\}", template) and WORD.search(template):
                found.append(f"{rel(path)}:{node.lineno}: {template[:40]!r}.format(...)")
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
              and isinstance(node.left.value, str) and re.search(r"%[-+ #0-9.]*[dfegi%]", node.left.value)
              and WORD.search(node.left.value)):
            found.append(f"{rel(path)}:{node.lineno}: {node.left.value[:40]!r} % ...")
    return found


def test_no_page_module_formats_a_number_into_a_sentence():
    """(c)"""
    found = [line for p in PAGES if rel(p) not in PENDING for line in sentences_built_in(p)]
    assert not found, "build these sentences in gpt2viz/teaching/ and register them:\n" + "\n".join(found)


def test_the_rule_catches_what_it_is_for(tmp_path):
    """The reader fails a sentence built in a page, in each of the three ways, and passes layout."""
    page = ROOT / "views" / "_probe_for_the_registry_test.py"
    try:
        page.write_text('a = f"Head {h} writes most of it: {share:.0%}."\n'
                        'b = "the largest share, " + f"{share:.3f}"\n'
                        'c = "{:.2f} of the logit".format(x)\n'
                        'd = "%d tokens long" % n\n'
                        'e = f"{share:.3f}"\n'
                        'g = {"parameters": f"{n:,} B"}\n', encoding="utf-8")
        found = sentences_built_in(page)
    finally:
        page.unlink()
    assert sorted(line.split(":")[1] for line in found) == ["1", "2", "3", "4"], found


def test_pending_and_layout_name_files_that_exist():
    for path in PENDING | {f for f, _ in LAYOUT}:
        assert (ROOT / path).is_file(), path
