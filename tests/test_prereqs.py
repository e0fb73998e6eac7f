"""The test suite's own set-up: system tools found or installed (prereqs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


import prereqs


def test_static_elf_told_from_a_dynamic_one(tmp_path):
    bb = prereqs.find_busybox()
    if bb is not None:  # found or installed at session start: it must really be static
        assert prereqs.is_static_elf(bb)
    assert not prereqs.is_static_elf(Path(os.path.realpath(sys.executable)))  # CPython links libc
    junk = tmp_path / "busybox"
    junk.write_bytes(b"#!/bin/sh\n")
    assert not prereqs.is_static_elf(junk)


def test_missing_tool_fails_under_ci_and_skips_otherwise(tmp_path):
    code = (
        "import prereqs, pytest\nprereqs.TOOLS['tmux'].find = lambda: None\ndef test_x():\n    prereqs.need('tmux')\n"
    )
    (tmp_path / "test_x.py").write_text(code)
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": here, "EDGETUI_TEST_NO_INSTALL": "1"}
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(tmp_path / "test_x.py")]
    ci = subprocess.run(base, env={**env, "CI": "true"}, capture_output=True, text=True, cwd=tmp_path)
    assert ci.returncode == 1 and "1 failed" in ci.stdout and "CI=true" in ci.stdout
    local = subprocess.run(base, env={**env, "CI": "false"}, capture_output=True, text=True, cwd=tmp_path)
    assert local.returncode == 0 and "1 skipped" in local.stdout
    assert "apt-get install -y tmux" in local.stdout  # the exact install line is the reason
