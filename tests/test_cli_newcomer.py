"""Issue 37 ("First contact"): what a new user meets following the README, said plainly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgetui.cli.main import main

from conftest import copy_samples_db


@pytest.fixture
def samples_db(tmp_path, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path / "s.duckdb")


def test_report_format_follows_the_output_files_extension(samples_db, tmp_path, capsys):
    html = tmp_path / "report.html"
    assert main(["--db", str(samples_db), "report", "opus48", "-o", str(html)]) == 0
    assert html.read_text().lstrip().lower().startswith("<!doctype html")
    js = tmp_path / "report.json"
    assert main(["--db", str(samples_db), "report", "opus48", "-o", str(js)]) == 0
    assert "moments" in json.loads(js.read_text())
    md = tmp_path / "report.md"
    assert main(["--db", str(samples_db), "report", "opus48", "-o", str(md)]) == 0
    assert md.read_text().startswith("#")
    capsys.readouterr()
    # an explicit --format the extension contradicts: one line, exit 2, nothing written
    other = tmp_path / "other.html"
    assert main(["--db", str(samples_db), "report", "opus48", "--format", "md", "-o", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--format md contradicts" in err and not other.exists()
