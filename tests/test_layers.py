"""The package's layers: every import in gpt2viz/, at module level and inside functions, goes down the
order that gpt2viz/__init__.py states, never up; the lowest layer is torch-free; and the old module
paths printed in docs and Code panels still import, as the very modules of their new homes."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpt2viz"
LAYERS = ("spec", "model", "anatomy", "analysis", "teaching")  # each may import those before it
MAY_IMPORT = {name: set(LAYERS[: i + 1]) for i, name in enumerate(LAYERS)}
MAY_IMPORT |= {"server": {"spec", "model", "server"}, "plots": {"spec", "plots"},
               "top": set(LAYERS) | {"server", "plots", "top"}}
MAY_IMPORT["ui"] = MAY_IMPORT["top"] | {"ui"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in MAY_IMPORT) else "top"


def imports(path: Path, package: list[str] | None = None):
    """(line, imported module) for every import of ours in the file, wherever it stands. `package`:
    the dotted package the file belongs to, as a list (default: where it stands under ROOT)."""
    if package is None:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[:-1]  # an __init__.py belongs to its folder too
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if not module.startswith("gpt2viz"):
                continue
            for alias in node.names:  # `from . import x` imports the module x
                full = f"{module}.{alias.name}"
                yield node.lineno, full if (ROOT / full.replace(".", "/")).exists() or (
                    ROOT / (full.replace(".", "/") + ".py")).exists() else module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("gpt2viz"):
                    yield node.lineno, alias.name


def sources():
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_imports_from_a_layer_above_its_own():
    wrong = []
    for path in sources():
        own = layer_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for line, module in imports(path):
            if layer_of(module) not in MAY_IMPORT[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {module} ({layer_of(module)})")
    assert not wrong, "\n".join(wrong)


def test_the_layer_test_sees_an_import_up_the_layers(tmp_path):
    """The check above can fail: an import of the UI from the model layer, inside a function, is found."""
    bad = tmp_path / "probe.py"  # as if it stood in gpt2viz/model/
    bad.write_text("def f():\n    from ..ui import state\n    return state\n")
    found = [m for _, m in imports(bad, ["gpt2viz", "model"])]
    assert found == ["gpt2viz.ui.state"] and layer_of(found[0]) not in MAY_IMPORT["model"]


def test_the_vocabulary_layer_imports_no_torch():
    code = ("import sys, gpt2viz.spec.config, gpt2viz.spec.schema, gpt2viz.spec.pages, gpt2viz.spec.costs, "
            "gpt2viz.spec.glossary, gpt2viz.spec.references, gpt2viz.spec.serving, gpt2viz.teaching.lessons; "
            "print(sorted(m for m in ('torch', 'numpy', 'streamlit') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_top_of_the_package_shows_its_layers():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert len(modules) <= 8, modules
    assert len(set(packages) - {"ui", "plots"}) >= 4, packages
    assert "lesson.py" not in modules
    for name in packages:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"gpt2viz/{name}/__init__.py says what it holds"


@pytest.mark.parametrize("old", ["tokenizer", "config", "schema", "modes", "weights", "trace", "hooks",
                                 "interventions", "record", "lens", "heads", "whatif", "experiments",
                                 "demo_model", "lesson", "params"])
def test_old_module_paths_still_import(old):
    import gpt2viz

    module = importlib.import_module(f"gpt2viz.{old}")
    assert module is importlib.import_module(f"gpt2viz.{gpt2viz.MOVED[old]}")
    assert getattr(gpt2viz, old) is module
    assert not (PACKAGE / f"{old}.py").exists()  # an alias, not a file


def test_the_handed_out_paths_resolve():
    from gpt2viz.analysis.heads import head_scores as new_scores
    from gpt2viz.lesson import head_scores
    from gpt2viz.tokenizer import encode
    from gpt2viz.weights import to_transformers
    assert head_scores is new_scores and callable(encode) and callable(to_transformers)


def test_no_comment_or_docstring_cites_an_issue_number():
    cited = []
    for path in [*sources(), *sorted((ROOT / "views").glob("*.py")), ROOT / "app.py"]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bissues? \d+|\(#\d+\)|\bissue #\d+", line, re.IGNORECASE):
                cited.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not cited, "\n".join(cited)
