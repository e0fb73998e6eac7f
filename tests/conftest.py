from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (as in CI); EDGETUI_SHARED_DATA points elsewhere (e.g. a clone under /tmp)
SHARED_DATA = Path(os.environ.get("EDGETUI_SHARED_DATA") or ROOT.parent / "shared" / "data")
CORPUS = SHARED_DATA / "transcript-corpus"


def pytest_sessionstart(session) -> None:
    """Find or install the system tools the tests drive (busybox-static, tmux, sshd, chromium-headless-shell): see
    prereqs.py."""
    import prereqs

    prereqs.session_start()


def shared_data_reason(path: Path) -> str:
    """Skip reason of a test that reads the shared data folder (not part of the project)."""
    return (
        f"needs {path}: the shared data folder of real public agent transcripts and EdgeBench tables, "
        "used as test data and not shipped with edgetui (put it at ../shared/data beside the clone or set "
        "EDGETUI_SHARED_DATA=/path/to/shared/data); the rest of the suite runs without it"
    )


def need_corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(shared_data_reason(CORPUS))
    return CORPUS


@pytest.fixture
def corpus() -> Path:
    return need_corpus()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "edgetui.duckdb"


# What a test drives, marked from the fixtures that identify it (pyproject registers the markers; a test
# that starts the real thing without one of these fixtures carries the mark itself). The fixture closure
# counts: a test using ``image``, ``token`` or ``live`` uses ``engine`` too.
FIXTURE_MARKS = {
    "engine": ("docker",),  # test_live_docker / test_ssh_engine / test_live_judge: the real Docker engine
    "harness": ("harness", "docker"),  # test_real_harness_live: the real SForge harness (make_real_run.sh)
    "judge": ("harness",),  # test_live_judge: the real SForge judge (``sforge serve``)
    "sshd": ("sshd",),  # a real OpenSSH sshd on 127.0.0.1 (tests/sshd_fixture.py)
    "two_sshd": ("sshd",),
    "served": ("sshd",),
    "rig": ("sshd",),
    "report_html": ("browser",),  # test_report_browser: chromium-headless-shell
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, marks in FIXTURE_MARKS.items():
            if fixture in names:
                for m in marks:
                    if item.get_closest_marker(m) is None:
                        item.add_marker(m)
