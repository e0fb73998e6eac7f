"""One ISO-8601 parser (edgetui/times.py), the same on every supported Python, used by every source.

The table is tests/time_cases.py; the other interpreters are pyenv's under /root/.pyenv/versions
(the CI machine is the same kind as this one): a missing supported one skips with the reason, and
fails under CI=true where /root/.pyenv exists.
"""

import os
import subprocess
import sys
import time
from importlib.metadata import distribution, requires
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import time_cases
import tomllib
from edgetui.hosts.docker_watch import parse_docker_time
from edgetui.parsers.claude_content import parse_timestamp
from edgetui.parsers.sforge_dir import read_started_at
from edgetui.times import iso8601_to_epoch, parse_iso8601

REPO = Path(__file__).resolve().parent.parent
PYENV = Path("/root/.pyenv/versions")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
REQUIRES_PYTHON = SpecifierSet(PYPROJECT["project"]["requires-python"])
#: the minor versions edgetui supports: pyproject's classifiers
SUPPORTED_MINORS = [
    c.rsplit(" :: ", 1)[1]
    for c in PYPROJECT["project"]["classifiers"]
    if c.startswith("Programming Language :: Python :: 3.")
]


def test_the_table():
    assert time_cases.check(iso8601_to_epoch) == []


def test_aware_datetime_and_non_strings():
    dt = parse_iso8601("2026-07-11T22:48:23.5+05:30")
    assert dt is not None and dt.utcoffset().total_seconds() == 19800 and dt.microsecond == 500000
    assert parse_iso8601("2026-07-11T17:18:23").tzinfo is not None  # naive = UTC, never local
    for v in (None, 12, 1.5, b"2026-07-11T17:18:23Z", ["2026-07-11"]):
        assert iso8601_to_epoch(v) is None


def test_every_source_agrees_with_the_table():
    """Claude's, Docker's and Codex's times are the one parser's (plus their extras)."""
    for text, parts in time_cases.CASES:
        want = time_cases.expected_epoch(parts)
        if want is None:
            continue
        assert parse_timestamp(text) == pytest.approx(want, abs=1e-6), text
        if not text.startswith("0001-"):
            assert parse_docker_time(text) == pytest.approx(want, abs=1e-6), text
    # the extras: Claude's epoch seconds / milliseconds, Docker's zero time
    assert parse_timestamp("1748779200") == 1748779200.0 and parse_timestamp(1748779200123) == 1748779200.123
    assert parse_docker_time("0001-01-01T00:00:00Z") is None


@pytest.fixture
def india_local_time():
    """The process in UTC+05:30, so a time read as local differs from one read as UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_docker_naive_time_is_utc_not_local(india_local_time):
    # before the one parser, Docker's took a time without zone in the process's local zone
    assert time.localtime(0).tm_gmtoff == 19800
    assert parse_docker_time("2026-07-11T17:18:23.12") == pytest.approx(
        time_cases.expected_epoch((2026, 7, 11, 17, 18, 23, 120000, 0)), abs=1e-6
    )


def test_started_at_reads_the_wall_clock_of_line_one(tmp_path):
    ep = time_cases.expected_epoch((2026, 7, 11, 12, 0, 0, 0, 0))
    for line1, offset in (("2026-07-11T17:30:00", 19800.0), ("2026-07-11T07:00:00-05:00", -18000.0)):
        (tmp_path / "started_at").write_text(f"{line1}\n{ep!r}\n")
        sa = read_started_at(tmp_path)
        assert sa.error is None and sa.epoch == ep and sa.utc_offset_s == offset, (line1, sa)
    (tmp_path / "started_at").write_text(f"2026-07-11T17:30\n{ep!r}\n")
    assert "not a local ISO time" in read_started_at(tmp_path).error


# --- every supported Python ------------------------------------------------------------------

_RUN_TABLE = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
import compileall, re, time_cases
from edgetui.times import iso8601_to_epoch
wrong = time_cases.check(iso8601_to_epoch)
# the whole package compiles (no syntax newer than this Python; its third-party imports are not here)
quiet = compileall.compile_dir(sys.argv[1] + "/edgetui", quiet=2, legacy=False, force=True, optimize=0) and \\
    compileall.compile_dir(sys.argv[1] + "/replay", quiet=2, legacy=False, force=True, optimize=0)
print("\\n".join(wrong) or "ok", "compiled" if quiet else "COMPILE FAILED")
"""


def _interpreter(minor: str):
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}")) if PYENV.is_dir() else []
    return found[-1] if found else None


@pytest.mark.parametrize("minor", SUPPORTED_MINORS)
def test_table_and_package_on_every_supported_python(minor, tmp_path):
    python = _interpreter(minor)
    if python is None:
        why = f"no Python {minor} under {PYENV} (install: pyenv install {minor})"
        if os.environ.get("CI") == "true" and PYENV.parent.is_dir():
            pytest.fail(f"{why} (CI=true: every supported Python is tested)")
        pytest.skip(why)
    version = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True
    ).stdout.strip()
    # byte-code goes to a scratch folder, not beside the sources
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path), "PYTHONPATH": ""}
    r = subprocess.run([str(python), "-c", _RUN_TABLE, str(REPO)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok", "compiled"], f"Python {version}:\n{r.stdout}{r.stderr[-2000:]}"


def test_the_supported_pythons_are_stated():
    assert SUPPORTED_MINORS and all(REQUIRES_PYTHON.contains(f"{m}.99") for m in SUPPORTED_MINORS)


def test_the_python_floor_is_the_one_the_code_needs():
    """requires-python admits no Python the code fails on: tarfile's filter="data" (the archive
    reader) came in 3.10.12 and 3.11.4, and the pinned dependencies (numpy, scipy, pyarrow, duckdb,
    platformdirs) need 3.11; the floor is exactly that, and the running Python is within it."""
    assert platform_version() in REQUIRES_PYTHON
    assert not REQUIRES_PYTHON.contains("3.11.3") and REQUIRES_PYTHON.contains("3.11.4")
    assert not REQUIRES_PYTHON.contains("3.10.13")
    floor_needed_by = []
    for req in requires("edgetui") or []:
        if "extra ==" in req or "python_version" in req:
            continue
        name = req.split("==")[0].strip()
        spec = distribution(name).metadata.get("Requires-Python") or ""
        assert SpecifierSet(spec).contains("3.11.4"), f"{name} needs {spec}: the floor is too low"
        if not SpecifierSet(spec).contains("3.10.13"):
            floor_needed_by.append(name)
    assert floor_needed_by, "no pinned dependency needs 3.11 any more: the floor can come down"


def platform_version() -> str:
    return ".".join(map(str, sys.version_info[:3]))
