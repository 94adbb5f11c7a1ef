"""core/ is a plain PyTorch library: no UI or Hugging Face imports anywhere inside it; its folders stay small and
its packages import one another in one direction only (the rules each package's ``__init__`` states)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
FORBIDDEN = ("streamlit", "plotly", "transformers")


def imported_modules(source: str) -> set[str]:
    """Top-level names of every module a source file imports (any nesting depth, absolute imports)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            found.add(node.args[0].value.split(".")[0])
    return found


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_files_found():
    names = {p.name for p in core_files()}
    assert {"__init__.py", "attention.py", "model.py"} <= names


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_is_pure(path):
    bad = imported_modules(path.read_text(encoding="utf-8")) & set(FORBIDDEN)
    assert not bad, f"{path.relative_to(CORE.parent)} imports {', '.join(sorted(bad))}"


@pytest.mark.parametrize("source, expected", [
    ("import streamlit as st", {"streamlit"}),
    ("from plotly import graph_objects", {"plotly"}),
    ("import plotly.express as px", {"plotly"}),
    ("from transformers.models import bert", {"transformers"}),
    ("def f():\n    import streamlit\n", {"streamlit"}),
    ("try:\n    from transformers import AutoModel\nexcept ImportError:\n    pass\n", {"transformers"}),
    ("import importlib\nimportlib.import_module('plotly.io')", {"importlib", "plotly"}),
    ("from .trace import Trace", set()),
    ("import torch.nn.functional as F", {"torch"}),
])
def test_detector_catches_imports(source, expected):
    assert imported_modules(source) == expected


# ------------------------------------------------------------------ layout: folder sizes and import directions
MAX_MODULES = 12
MODEL_CORE = "model core"  # the flat top-level modules that are not command lines
CLIS = {"train", "evaluate", "inspect", "find_heads"}  # thin command-line entries: may import any package
# package -> packages it may import at module level; LAZY: may also import inside a function (never at import time)
MAY_IMPORT = {
    MODEL_CORE: {MODEL_CORE},
    "data": {"data"},
    "io": {MODEL_CORE, "data", "io"},
    "inference": {MODEL_CORE, "data", "io", "inference"},
    "training": {MODEL_CORE, "data", "io", "inference", "training"},
    "probes": {MODEL_CORE, "data", "io", "inference", "training", "probes"},
    "variants": {MODEL_CORE, "data", "io", "inference", "training", "variants"},
}
LAZY = {"inference": {"training"}}  # mlm.next_sentence: tasks.pair_row; coverage.derive_known_words: make_task


def package_of(module: str) -> str | None:
    """The layout package of a dotted module under core (``core.io.budget`` -> ``io``; ``core.model`` -> the
    model core; ``core`` itself -> the model core; a CLI -> ``cli``)."""
    parts = module.split(".")
    if parts[0] != "core":
        return None
    if len(parts) == 1:
        return MODEL_CORE
    if (CORE / parts[1]).is_dir():
        return parts[1]
    return "cli" if parts[1] in CLIS else MODEL_CORE


def core_imports(path: Path) -> list[tuple[str, bool]]:
    """(dotted core module, imported inside a function) for every import of ``core`` in a file, relative ones
    resolved, ``from core import x`` counted as ``core.x`` when x is a module."""
    rel = path.relative_to(CORE.parent).with_suffix("").parts
    pkg = list(rel[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested.update(id(n) for n in ast.walk(fn) if n is not fn)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if mod.split(".")[0] != "core":
                continue
            for alias in node.names:
                sub = CORE.parent.joinpath(*mod.split("."), alias.name)
                is_module = sub.with_suffix(".py").exists() or sub.is_dir()
                out.append((f"{mod}.{alias.name}" if is_module else mod, id(node) in nested))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) in nested) for a in node.names if a.name.split(".")[0] == "core"]
    return out


def core_folders() -> list[Path]:
    return [CORE] + sorted(p for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists())


@pytest.mark.parametrize("folder", core_folders(), ids=lambda p: str(p.relative_to(CORE.parent)))
def test_each_folder_holds_at_most_twelve_modules_and_says_what_it_may_import(folder):
    modules = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= MAX_MODULES, f"{folder.name}/ holds {len(modules)} modules: {modules}"
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"{folder.name}/__init__.py has no docstring"
    if folder != CORE:
        assert folder.name in MAY_IMPORT, f"{folder.name}/ is not in MAY_IMPORT: state what it may import"
        assert "import" in doc, f"{folder.name}/__init__.py's docstring does not say what it may import"


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_only_what_its_package_allows(path):
    own = package_of(".".join(path.relative_to(CORE.parent).with_suffix("").parts))
    if own == "cli":
        return
    bad = []
    for module, lazy in core_imports(path):
        target = package_of(module)
        allowed = MAY_IMPORT[own] | (LAZY.get(own, set()) if lazy else set())
        if target not in allowed:
            bad.append(f"{module} ({target}{', inside a function' if lazy else ''})")
    assert not bad, f"{path.relative_to(CORE.parent)} ({own}) may not import: {', '.join(bad)}"


def test_the_import_rules_catch_a_wrong_direction(tmp_path, monkeypatch):
    """The direction check fails on a model-core module that imports a probe, and on inference importing training
    at module level, but lets inference import training inside a function."""
    root = tmp_path / "core"
    for folder in ("inference", "probes", "training"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "model.py").write_text("from .probes.heads import x\n")
    (root / "inference" / "a.py").write_text("from ..training import tasks\n")
    (root / "inference" / "b.py").write_text("def f():\n    from ..training.tasks import pair_row\n")
    (root / "training" / "tasks.py").write_text("")
    monkeypatch.setitem(globals(), "CORE", root)
    with pytest.raises(AssertionError, match="probes"):
        test_core_module_imports_only_what_its_package_allows(root / "model.py")
    with pytest.raises(AssertionError, match="training"):
        test_core_module_imports_only_what_its_package_allows(root / "inference" / "a.py")
    test_core_module_imports_only_what_its_package_allows(root / "inference" / "b.py")


# ------------------------------------------------------------------ docstrings
def test_every_public_function_class_and_module_of_core_has_a_docstring():
    """Every module of core/, and every public (no leading underscore) function and class at its top level, says
    what it is in a docstring."""
    missing = []
    for path in core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(CORE.parent)
        if not ast.get_docstring(tree):
            missing.append(f"{where} (module)")
        missing += [f"{where}:{node.lineno} {node.name}" for node in tree.body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and not node.name.startswith("_") and not ast.get_docstring(node)]
    assert not missing, f"{len(missing)} without a docstring: " + ", ".join(missing)


# ------------------------------------------------------------------ no module reaches into another's private names
OURS = ("core", "app", "pages")


def private_reaches(source: str) -> list[str]:
    """Every use of a private name (one leading underscore) of one of our modules in ``source``: ``from m import _x``
    and ``m._x`` where ``m`` was bound by an import of our own code (absolute or relative)."""
    tree = ast.parse(source)
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in OURS:
                    modules.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in OURS):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"from {'.' * node.level}{node.module or ''} import {a.name}")
                else:
                    modules.add(a.asname or a.name)  # a module or an object: either way not ours to open
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def our_files() -> list[Path]:
    root = CORE.parent
    return sorted(p for top in OURS for p in (root / top).rglob("*.py"))


@pytest.mark.parametrize("path", our_files(), ids=lambda p: str(p.relative_to(CORE.parent)))
def test_no_module_uses_another_modules_private_names(path):
    """Issue 33: a private name is its module's own; another module that needs it needs a public one."""
    assert private_reaches(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("source, expected", [
    ("from core.inference import decoding\ndecoding._budget(1)", ["decoding._budget"]),
    ("from ..inference.decoding import _prefix", ["from ..inference.decoding import _prefix"]),
    ("from app import figures as F\nF._style()", ["F._style"]),
    ("import core.model\ncore._x", ["core._x"]),
    ("from .lm import LMTask\nLMTask._windows", ["LMTask._windows"]),
    ("import torch\ntorch._C", []),  # not ours
    ("self._cache = 1\nobj.__class__", []),
])
def test_the_private_name_check_catches_a_reach(source, expected):
    assert private_reaches(source) == expected
