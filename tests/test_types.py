"""mypy passes on the package with the project's own configuration (pyproject's [tool.mypy]).

The level is stated in docs/development.md ("Types"): check_untyped_defs plus the stricter flags
in the config, no global ignore; the third-party libraries that ship no types are named there.
"""

import re
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent


# a first run (no .mypy_cache) takes ~15 s of CPU, up to a minute on a loaded machine
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_mypy_finds_no_error_in_the_package(monkeypatch):
    # mypy reads pyproject.toml and resolves mypy_path (.ci/typecheck/) from the working directory
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml")])
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, "mypy found errors:\n" + stdout + stderr
    # the run checked the package and edgetui.replay (a config that found nothing would pass)
    checked = re.search(r"no issues found in (\d+) source files", stdout)
    assert checked and int(checked.group(1)) > 150, stdout


def test_arrow_timeline_declares_every_column_it_sets():
    # ArrowTimeline sets its columns with setattr from TIMELINE_COLUMNS; its class annotations are
    # what mypy checks their uses against, so the two lists must be the same
    from edgetui.store.timeline_columns import TIMELINE_COLUMNS, ArrowColumn, ArrowTimeline

    declared = {k for k, v in ArrowTimeline.__annotations__.items() if v in ("ArrowColumn", ArrowColumn)}
    assert declared == set(TIMELINE_COLUMNS)
