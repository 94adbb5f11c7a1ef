"""The project as one installable package with one command line: ``pip install --no-deps -e .`` (pyproject.toml)
makes ``core`` and ``app`` importable from any folder, so no code edits ``sys.path`` to find them, and the
``attention-lab`` command (core/io/cli.py) runs every ``python -m`` command line of core/ and app/."""
from __future__ import annotations

import ast
import contextlib
import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.io import cli

ROOT = Path(__file__).resolve().parents[2]
CODE = ("app", "core", "pages", "scripts", "bench")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


# ------------------------------------------------------------------ nothing finds our code by editing sys.path
def path_edits(source: str) -> list[str]:
    """Every edit of the import path in ``source``: ``sys.path.insert / append / extend / remove``, an assignment to
    ``sys.path`` or to a slice of it (``sys.path[:0] = …``, ``sys.path += …``), and ``site.addsitedir``."""
    def is_sys_path(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys")

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if is_sys_path(node.func.value) and node.func.attr in ("insert", "append", "extend", "remove"):
                found.append(f"line {node.lineno}: sys.path.{node.func.attr}")
            elif node.func.attr == "addsitedir":
                found.append(f"line {node.lineno}: addsitedir")
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                found.append(f"line {node.lineno}: assignment to sys.path")
    return found


def code_files() -> list[Path]:
    """Every Python file of the code folders (not tests/)."""
    return sorted(p for folder in CODE for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("source, expected", [
    ("import sys\nsys.path.insert(0, 'x')", 1),
    ("import sys\nif True:\n    sys.path.append('x')", 1),
    ("import sys\ndef f():\n    sys.path[:0] = ['a', 'b']", 1),
    ("import sys\nsys.path += ['x']", 1),
    ("import site\nsite.addsitedir('x')", 1),
    ("import sys\nprint(sys.path)\nx = list(sys.path)\nsys.exit(0)", 0),
    ("p = []\np.insert(0, 'x')", 0),
])
def test_detector_catches_path_edits(source, expected):
    assert len(path_edits(source)) == expected, path_edits(source)


def test_no_code_edits_sys_path():
    """app/, core/, pages/, scripts/ and bench/ import core and app as the installed package (or, under pytest and
    ``python -m``, from the working directory); a script's own folder is on sys.path when it runs, so neighbours
    (``from build_lexicon import …``, ``import load_test``) need nothing either."""
    files = code_files()
    assert len(files) > 100 and {"app/main.py", "bench/load_test.py"} <= {str(p.relative_to(ROOT)) for p in files}
    bad = {str(p.relative_to(ROOT)): path_edits(p.read_text(encoding="utf-8")) for p in files}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"these edit sys.path (import core / app as the installed package instead): {bad}"


# ------------------------------------------------------------------ the attention-lab command
def main_modules() -> set[str]:
    """Every module of core/ and app/ with an ``if __name__ == "__main__":`` block, dotted."""
    out = set()
    for folder in ("core", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                        and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"):
                    out.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return out


# an older ``python -m`` form of a command, kept working: old module -> the command's module now
OLD_FORMS = {"core.probes.patch": "core.probes.patch_board"}


def test_every_command_line_of_core_and_app_is_a_command():
    mains = main_modules()
    commands = {module for module, _ in cli.COMMANDS.values()}
    assert {"core.train", "app.serve", "core.probes.patch_board"} <= mains
    assert mains - {"core.io.cli"} - set(OLD_FORMS) == commands
    assert set(OLD_FORMS) <= mains and set(OLD_FORMS.values()) <= commands


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``attention-lab ARGS`` without an install: ``python -m core.io.cli ARGS`` from the repository."""
    return subprocess.run([sys.executable, "-m", "core.io.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_help_lists_every_command_with_one_line():
    out = run_cli("--help")
    assert out.returncode == 0 and out.stderr == "", (out.returncode, out.stderr[-2000:])
    assert out.stdout.startswith("usage: attention-lab COMMAND")
    lines = out.stdout.splitlines()
    for name, (module, _) in cli.COMMANDS.items():
        mine = [line for line in lines if line.split()[:1] == [name]]
        assert len(mine) == 1 and module in mine[0], (name, mine)
    assert {"train", "evaluate", "inspect", "patch", "heads", "serve"} <= set(cli.COMMANDS)


def test_an_unknown_command_is_one_error_line_on_stderr_and_exit_2():
    out = run_cli("no-such-command", "--help")
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown command 'no-such-command'"), lines
    assert "attention-lab --help" in lines[0] and "train" in lines[0]


def test_no_command_is_an_error_too(capsys):
    assert cli.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: no command given")


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_command_shows_its_own_help_and_exits_0(name, monkeypatch):
    """In this process (a fresh interpreter per command costs ~5 s here): ``attention-lab NAME --help`` is the
    module's own help, the one ``python -m MODULE --help`` prints; ``serve`` prints its flag, then Streamlit's."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the dispatcher and app.serve set it as python -m would
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        cli.main([name, "--help"])
    assert exit_.value.code in (0, None), (name, exit_.value.code)
    module = cli.COMMANDS[name][0]
    assert f"python -m {module}" in out.getvalue(), out.getvalue()[:500]
    assert "usage" in out.getvalue().lower()


# ------------------------------------------------------------------ pyproject.toml
def test_the_entry_point_is_the_dispatcher():
    scripts = PYPROJECT["project"]["scripts"]
    assert list(scripts) == ["attention-lab"]
    module, _, attr = scripts["attention-lab"].partition(":")
    assert (module, attr) == ("core.io.cli", "main") and getattr(cli, attr) is cli.main


def test_the_package_holds_core_and_app_and_what_they_read_beside_their_code():
    """setuptools finds packages by their ``__init__.py``: a folder of code under core/ or app/ without one would be
    missing from the package. The data a module opens next to itself is declared as package data."""
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["core*", "app*"]
    for folder in ("core", "app"):
        for d in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")):
                assert (d / "__init__.py").exists(), f"{d.relative_to(ROOT)} holds code but no __init__.py"
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert (ROOT / "core" / "data" / "lexicon.json").exists() and "lexicon.json" in data["core.data"]
    beside = sorted(f.name for f in (ROOT / "core" / "data").glob("*.json"))  # broad.py opens each by its own path
    assert beside and set(beside) <= set(data["core.data"]), beside
    deps = PYPROJECT["tool"]["setuptools"]["dynamic"]["dependencies"]
    assert PYPROJECT["project"]["dynamic"] == ["dependencies"] and deps == {"file": ["requirements.txt"]}


def test_the_readme_and_the_test_command_install_the_checkout():
    """`streamlit run app/main.py` finds ``app`` only through the install: the README's first command and
    scripts/test.sh (CI) both make it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert "pip install --no-deps -e . && python -m app.serve" in first
    assert "python -m pip install -q --no-deps -e .\n" in (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
