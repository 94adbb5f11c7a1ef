"""core/ is a plain PyTorch library: no UI or Hugging Face imports anywhere inside it."""
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
