from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import docker
import pytest
from filelock import FileLock
from hypothesis import HealthCheck, settings

import prereqs
from docker_images import build_busybox_image, remove_containers, remove_image
from sshd_fixture import Sshd
from pg_fixture import PgServer

from edgetui.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (as in CI); EDGETUI_SHARED_DATA points elsewhere (e.g. a clone under /tmp)
SHARED_DATA = Path(os.environ.get("EDGETUI_SHARED_DATA") or ROOT.parent / "shared" / "data")
CORPUS = SHARED_DATA / "transcript-corpus"

# Hypothesis under CI=true: the same examples every run (derandomize: a red CI is reproducible, and says the
# blob to replay a failure with), no per-example deadline (a loaded CI machine is slow, not wrong). The
# number of examples is each test's own (@settings(max_examples=...)), or Hypothesis's default: not fewer.
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "default"))


def pytest_sessionstart(session) -> None:
    """Find or install the system tools the tests drive (busybox-static, tmux, sshd, chromium-headless-shell): see
    prereqs.py."""
    # under xdist the main process's session starts before its workers': it installs, the workers only find
    prereqs.session_start(install=not hasattr(session.config, "workerinput"))


def shared_data_reason(path: Path) -> str:
    """Skip reason of a test that reads the shared data folder (not part of the project)."""
    return (
        f"needs {path}: the shared data folder of real public agent transcripts and EdgeBench tables, "
        "used as test data and not shipped with edgetui (put it at ../shared/data beside the clone or set "
        "EDGETUI_SHARED_DATA=/path/to/shared/data); the rest of the suite runs without it"
    )


def need_shared_data(path: Path) -> Path:
    """``path`` (a file or folder of the shared data folder) when it exists. Missing: the test skips with the
    reason locally, and fails with one line under ``CI=true`` (a CI without the folder would silently stop
    testing the parsers against real transcripts), as a missing system tool does (prereqs.need)."""
    if path.exists():
        return path
    if os.environ.get("CI") == "true":
        pytest.fail(
            f"shared data missing: {path} (CI=true: put the shared data folder at ../shared/data beside the "
            "clone or set EDGETUI_SHARED_DATA=/path/to/shared/data)",
            pytrace=False,
        )
    pytest.skip(shared_data_reason(path))
    raise AssertionError("unreachable")


def need_corpus() -> Path:
    return need_shared_data(CORPUS)


@pytest.fixture
def corpus() -> Path:
    return need_corpus()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "edgetui.duckdb"


@pytest.fixture(scope="session")
def samples_template(tmp_path_factory) -> Path:
    """The bundled sample runs recorded once (``edgetui samples``) for the whole run, xdist workers included:
    the first worker to ask records them under a lock in the run's base directory, the others wait and
    share the file. Tests never open it: they take a copy (:func:`copy_samples_db`, ~0.1 s where
    recording them again takes ~5 s)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's directory, above each worker's own
    db = base / "samples-template.duckdb"
    with FileLock(str(db) + ".lock"):
        if not db.exists():
            building = base / "samples-template.building.duckdb"
            assert main(["--db", str(building), "samples", "-q"]) == 0
            os.replace(building, db)
    return db


def copy_samples_db(template: Path, dest: Path) -> Path:
    """A database of the bundled samples at ``dest``: a copy of ``template`` (the ``samples_template``
    fixture), as ``edgetui --db dest samples`` would have recorded it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, dest)
    return dest


@pytest.fixture
def start_sshd(tmp_path, monkeypatch):
    """The one way a test starts a real OpenSSH sshd on 127.0.0.1 (tests/sshd_fixture.py):
    ``start_sshd(name="sshd", *, start=True, **Sshd options)`` -> an :class:`Sshd` in ``tmp_path / name``
    (not started with ``start=False``, for a test that edits its config first); each one is closed after
    the test. SSH_AUTH_SOCK is unset: a client uses only the keys its test gives."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    made: list[Sshd] = []

    def start(name: str = "sshd", *, start: bool = True, **options) -> Sshd:
        s = Sshd(prereqs.need("sshd"), tmp_path / name, **options)
        made.append(s)
        return s.start() if start else s

    yield start
    for s in made:
        s.close()


@pytest.fixture
def sshd(start_sshd) -> Sshd:
    """One started sshd (a module needing other options overrides this with ``start_sshd(...)``)."""
    return start_sshd()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL of this worker (tests/pg_fixture.py: Debian's server on a Unix socket of its own
    folder, so xdist workers never share one); each test takes its own database of it (``team_url``)."""
    server = PgServer(prereqs.need("postgres").parent)
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def team_db(pg_server) -> str:
    """A fresh, empty database of the worker's PostgreSQL: its name (``pg_server.url(name)`` connects)."""
    return pg_server.new_database()


@pytest.fixture(scope="session")
def engine():
    """The real local Docker engine, one client per session (per xdist worker). Unreachable: the tests that
    use it skip with the reason, or fail under CI=true (a CI job that skips its Docker tests proves nothing)."""
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as e:  # noqa: BLE001 - no engine, whatever the reason: said (CI fails on it)
        why = f"Docker engine not reachable: {' '.join(str(e).split())[:200]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why} (CI=true: Docker tests must not be skipped)")
        pytest.skip(why)
    return client


@pytest.fixture(scope="session")
def image(engine):
    """The busybox test image (tests/docker_images.py), built once per session: once per xdist worker, as
    ``docker import`` of it takes ~0.1-0.5 s (a build shared across workers would need a lock and a last
    worker to remove it, for less than a second)."""
    tag = build_busybox_image(engine)
    yield tag
    remove_image(engine, tag)


@pytest.fixture
def token(engine):
    """A name fragment unique to the test: its containers are named with it, and removed after it."""
    tok = "edt" + uuid.uuid4().hex[:8]
    yield tok
    remove_containers(engine, tok)


# What a test drives, marked from the fixtures that identify it (pyproject registers the markers; a test
# that starts the real thing without one of these fixtures carries the mark itself). The fixture closure
# counts: a test using ``image``, ``token`` or ``live`` uses ``engine`` too.
FIXTURE_MARKS = {
    "engine": ("docker",),  # test_live_docker / test_ssh_engine / test_live_judge: the real Docker engine
    "harness": ("harness", "docker"),  # test_real_harness_live: the real SForge harness (make_real_run.sh)
    "judge": ("harness",),  # test_live_judge: the real SForge judge (``sforge serve``)
    "start_sshd": ("sshd",),  # a real OpenSSH sshd on 127.0.0.1 (tests/sshd_fixture.py)
    "report_html": ("browser",),  # test_report_browser: chromium-headless-shell
}


#: under xdist, these run first (the longest: the Ctrl-C sweep ~290 s at load 9, the harness ~150 s): one of
#: them started last would keep one worker busy minutes after the other has run out of tests
LONG_FIRST = ("harness", "slow")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, marks in FIXTURE_MARKS.items():
            if fixture in names:
                for m in marks:
                    if item.get_closest_marker(m) is None:
                        item.add_marker(m)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # (every worker sorts alike: xdist needs one order)
        items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG_FIRST))
