"""Architecture contracts (pyproject.toml, [tool.importlinter]): packages by stage in layers, the core
imports no Textual and no view, the screens import in one direction; and the import graph has no
circle. import-linter and grimp read the whole import graph, lazy imports inside functions included.

The repository's ``replay/`` folder is installed as ``edgetui.replay`` (pyproject's package-dir);
in an editable install it stays outside ``edgetui/``, where grimp, which walks the root package's
folder, would not see it. So both are checked on the installed layout: ``edgetui/`` with
``replay/`` inside it as ``edgetui/replay``, copied to a temporary folder that comes first on the
path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed_layout(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "edgetui", site / "edgetui", ignore=ignore)
    shutil.copytree(ROOT / "replay", site / "edgetui" / "replay", ignore=ignore)
    return site


def _python(site: Path, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, "-c", code], cwd=site, env=env, capture_output=True, text=True)


def test_import_contracts_are_kept(installed_layout):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    n = len(config["tool"]["importlinter"]["contracts"])
    assert n >= 3
    exe = Path(sys.executable).parent / "lint-imports"
    env = dict(os.environ, PYTHONPATH=str(installed_layout))
    r = subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml")],
        cwd=installed_layout,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{n} kept, 0 broken" in r.stdout, r.stdout


def test_the_layout_copy_is_what_python_imports(installed_layout):
    r = _python(
        installed_layout, "import edgetui.replay.cursor as c, edgetui.store.queries as q; print(c.__file__, q.__file__)"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        str(installed_layout / "edgetui" / "replay" / "cursor.py"),
        str(installed_layout / "edgetui" / "store" / "queries.py"),
    ]


def test_no_import_circles(installed_layout):
    """No strongly connected component of more than one module in the import graph (Tarjan's algorithm
    over grimp's graph, every import counted, those inside functions too)."""
    code = r"""
import sys, grimp
sys.setrecursionlimit(100000)
g = grimp.build_graph("edgetui")
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
    for w in g.find_modules_directly_imported_by(v):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: comps.append(sorted(comp))
for m in sorted(g.modules):
    if m not in index: visit(m)
print(len(g.modules))
for c in comps: print(" ".join(c))
"""
    r = _python(installed_layout, code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert int(lines[0]) > 100  # the whole package was read
    assert lines[1:] == [], "import circles:\n" + "\n".join(lines[1:])
