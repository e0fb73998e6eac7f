"""Architecture contracts (pyproject.toml, [tool.importlinter]): the core never imports Textual
and the screens import in one direction. import-linter reads the whole import graph, lazy
imports inside functions included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    exe = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout
