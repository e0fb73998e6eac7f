"""The team's shared record (edgetui sync, edgetui/record/team_record.py) against a real PostgreSQL.

"Machines" are folders here: each has its own DuckDB file and its own machine name
(``EDGETUI_MACHINE``), and they meet only through the server (tests/pg_fixture.py).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import prereqs
from conftest import copy_samples_db
from pg_fixture import PgServer


pytestmark = pytest.mark.postgres

#: local bookkeeping of the sync itself (not the record), left out of comparisons
LOCAL_ONLY = {"meta", "team_sync", "team_annotations"}


def _env(url: str, machine: str, person: str = "tester") -> dict[str, str]:
    return {**os.environ, "EDGETUI_TEAM_URL": url, "EDGETUI_MACHINE": machine, "EDGETUI_PERSON": person}


def run_cli(args: list[str], url: str, machine: str, person: str = "tester", check: bool = True):
    """``edgetui ARGS`` in its own process (as a member would run it); the completed process."""
    p = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", *args],
        env=_env(url, machine, person),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert p.returncode == 0, p.stderr
    return p


def tables(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as c:
        return sorted(
            t
            for (t,) in c.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
            if t not in LOCAL_ONLY
        )


def differences(a: Path, b: Path, only: set[str] | None = None) -> dict[str, tuple[int, int]]:
    """Per table: rows of ``a`` not in ``b`` and of ``b`` not in ``a`` (EXCEPT ALL both ways); the tables that differ."""
    out = {}
    c = duckdb.connect()
    c.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    c.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    names = tables(a)
    assert names == tables(b)
    for t in names:
        if only is not None and t not in only:
            continue
        ab = c.execute(f"SELECT count(*) FROM (SELECT * FROM a.{t} EXCEPT ALL SELECT * FROM b.{t})").fetchone()[0]
        ba = c.execute(f"SELECT count(*) FROM (SELECT * FROM b.{t} EXCEPT ALL SELECT * FROM a.{t})").fetchone()[0]
        if ab or ba:
            out[t] = (ab, ba)
    c.close()
    return out


def count(db: Path, sql: str):
    with duckdb.connect(str(db), read_only=True) as c:
        return c.execute(sql).fetchall()


@pytest.fixture
def team_url(pg_server, team_db) -> str:
    return pg_server.url(team_db)


def test_push_then_rebuild_equals_the_original(samples_template, tmp_path, team_url, pg_server, team_db):
    a = copy_samples_db(samples_template, tmp_path / "a" / "edgetui.duckdb")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    n_runs = count(a, "SELECT count(*) FROM runs")[0][0]
    assert n_runs > 0
    # in the team record, the local runs carry the machine that recorded them
    team_runs = pg_server.sql("SELECT run_key, recorded_by FROM edgetui_team.runs", team_db)
    assert len(team_runs) == n_runs
    local = {k for (k,) in count(a, "SELECT run_key FROM runs WHERE host = 'local'")}
    assert local and len(local) < n_runs  # the samples have runs of a named host (10.0.0.7) too
    assert {k for k, _ in team_runs} == {
        "local@alpha/" + k[len("local/") :] if k in local else k for (k,) in count(a, "SELECT run_key FROM runs")
    }
    assert {m for _, m in team_runs} == {"alpha"}
    # a second sync pushes nothing
    again = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert "pushed 0 run(s)" in again.stdout and f"{n_runs} unchanged" in again.stdout
    copy = tmp_path / "copy.duckdb"
    import shutil

    shutil.copyfile(a, copy)
    run_cli(["--db", str(a), "sync", "--rebuild"], team_url, "alpha")
    assert differences(copy, a) == {}
    assert count(a, "SELECT count(*) FROM events") == count(copy, "SELECT count(*) FROM events")


def machine_b(tmp_path: Path, n: int = 3, prefix: str = "beta") -> Path:
    """A second machine's database: ``n`` small runs of its own (tests/runs_factory.py), recorded."""
    from runs_factory import ingest, write_run, write_task

    root = tmp_path / prefix / "runs"
    tasks = tmp_path / prefix / "tasks"
    write_task(tasks, "sum_task")
    for i in range(n):
        write_run(
            root,
            f"{prefix}-run-{i}",
            "sum_task",
            model="model-x",
            start=1_780_000_000 + 3600 * i,
            subs=[(600, 0.2, 1.0), (1800, 0.5, 2.0 + i)],
            duration_s=3600,
        )
    db = tmp_path / prefix / "edgetui.duckdb"
    ingest(db, [root], tasks)
    return db


def team_view(db: Path, machine: str, sql: str) -> set:
    """Rows of ``sql`` (over ``v_events`` / ``v_runs`` / ``v_ann``: the tables with this machine's run keys
    as the team writes them) as a set: what two machines compare."""
    c = duckdb.connect(str(db), read_only=True)
    try:

        def key(col: str) -> str:
            return f"CASE WHEN {col} LIKE 'local/%' THEN 'local@{machine}/' || substr({col}, 7) ELSE {col} END"

        c.execute(f"CREATE TEMP VIEW v_runs AS SELECT * REPLACE ({key('run_key')} AS run_key) FROM runs")
        c.execute(f"CREATE TEMP VIEW v_events AS SELECT * REPLACE ({key('run_key')} AS run_key) FROM events")
        c.execute(f"CREATE TEMP VIEW v_ann AS SELECT * REPLACE ({key('run_key')} AS run_key) FROM annotations")
        c.execute(f"CREATE TEMP VIEW v_tags AS SELECT * REPLACE ({key('run_key')} AS run_key) FROM run_tags")
        return set(c.execute(sql).fetchall())
    finally:
        c.close()


def some_round(db: Path) -> tuple[str, str]:
    return count(
        db,
        "SELECT s.run_key, s.round FROM submissions s JOIN events e ON e.run_key = s.run_key "
        "AND e.kind = 'judge_result' AND e.round = s.round WHERE s.run_key LIKE 'local/%' ORDER BY 1, 2 LIMIT 1",
    )[0]


@pytest.mark.slow
def test_two_machines_converge_and_the_later_annotation_wins(samples_template, tmp_path, team_url, pg_server, team_db):
    from edgetui.record.annotations import annotate, edit_annotation
    from edgetui.store.database import open_db

    a = copy_samples_db(samples_template, tmp_path / "alpha" / "edgetui.duckdb")
    b = machine_b(tmp_path)
    rk, rnd = some_round(a)
    with open_db(a) as c:
        aid = annotate(c, rk, round=rnd, label="reframe", text="first note")
        c.execute("INSERT INTO run_tags VALUES (?, 'baseline', 1.0)", [rk])
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    run_cli(["--db", str(a), "sync"], team_url, "alpha")

    def runs_of(db, m):
        return team_view(db, m, "SELECT run_key, n_events, best_score, status FROM v_runs")

    def events_of(db, m):
        return team_view(db, m, "SELECT run_key, event_id, kind, summary, md5(raw) FROM v_events")

    assert runs_of(a, "alpha") == runs_of(b, "beta")
    assert events_of(a, "alpha") == events_of(b, "beta")
    assert len(runs_of(a, "alpha")) == count(a, "SELECT count(*) FROM runs")[0][0]
    # the run recorded on alpha is on beta under alpha's name, with its tag and annotation
    on_b = "local@alpha/" + rk[len("local/") :]
    assert count(b, f"SELECT tag FROM run_tags WHERE run_key = '{on_b}'") == [("baseline",)]
    assert count(b, f"SELECT text FROM annotations WHERE annotation_id = '{aid}'") == [("first note",)]
    # and beta's runs are on alpha, recorded by beta
    assert count(a, "SELECT count(*) FROM team_sync WHERE machine = 'beta'")[0][0] == 3

    # both edit the annotation; beta pushes first, alpha later: alpha's text wins, beta's is in the history
    with open_db(b) as c:
        edit_annotation(c, aid, text="beta's view")
    with open_db(a) as c:
        edit_annotation(c, aid, text="alpha's view")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    run_cli(["--db", str(a), "sync"], team_url, "alpha")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    for db in (a, b):
        assert count(db, f"SELECT text FROM annotations WHERE annotation_id = '{aid}'") == [("alpha's view",)]
    history = pg_server.sql("SELECT text, recorded_by FROM edgetui_team.annotation_history ORDER BY version", team_db)
    assert ("beta's view", "beta") in history
    assert pg_server.sql(
        f"SELECT text, recorded_by FROM edgetui_team.annotations WHERE annotation_id = '{aid}'", team_db
    ) == [("alpha's view", "alpha")]
    # one more round changes nothing: converged
    ra = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    rb = run_cli(["--db", str(b), "sync"], team_url, "beta")
    for r in (ra, rb):
        assert "pushed 0 run(s)" in r.stdout and "pulled 0 run(s)" in r.stdout and "0 pushed / 0 pulled" in r.stdout
    assert events_of(a, "alpha") == events_of(b, "beta")


def test_a_read_only_role_pulls_but_is_refused_a_push_in_one_line(
    samples_template, tmp_path, team_url, pg_server, team_db
):
    a = copy_samples_db(samples_template, tmp_path / "alpha" / "edgetui.duckdb")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    role = "reader_" + team_db
    pg_server.sql(f"CREATE ROLE {role} LOGIN")
    pg_server.sql(f"GRANT USAGE ON SCHEMA edgetui_team TO {role}", team_db)
    pg_server.sql(f"GRANT SELECT ON ALL TABLES IN SCHEMA edgetui_team TO {role}", team_db)
    before = pg_server.sql("SELECT count(*) FROM edgetui_team.runs", team_db)
    b = machine_b(tmp_path)
    r = run_cli(["--db", str(b), "sync"], pg_server.url(team_db, user=role), "beta", check=False)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"push refused: role '{role}' may read the team record")
    assert pg_server.sql("SELECT count(*) FROM edgetui_team.runs", team_db) == before  # nothing of beta's
    assert count(b, "SELECT count(*) FROM runs WHERE run_key LIKE 'local@alpha/%'")[0][0] > 0  # alpha's pulled


def test_another_schema_version_is_refused_and_the_url_never_printed(
    samples_template, tmp_path, team_url, pg_server, team_db
):
    a = copy_samples_db(samples_template, tmp_path / "alpha" / "edgetui.duckdb")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    pg_server.sql("UPDATE edgetui_team.schema_version SET version = version + 1 WHERE part = 'database'", team_db)
    r = run_cli(["--db", str(a), "sync"], team_url, "alpha", check=False)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "upgrade edgetui to sync" in r.stderr
    assert team_url not in r.stderr + r.stdout
    secret = "postgresql://alice:hunter2secret@localhost/edgetui?host=/nonexistent-" + team_db
    r = run_cli(["--db", str(a), "sync"], secret, "alpha", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "cannot connect to the team record" in r.stderr
    assert "hunter2secret" not in r.stderr + r.stdout


def _events_by_run(pg_server, db) -> dict[str, int]:
    return dict(pg_server.sql("SELECT run_key, count(*) FROM edgetui_team.events GROUP BY 1", db))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_several_processes_push_the_same_and_different_runs_at_once(
    samples_template, tmp_path, team_url, pg_server, team_db
):
    a1 = copy_samples_db(samples_template, tmp_path / "alpha1" / "edgetui.duckdb")
    a2 = copy_samples_db(samples_template, tmp_path / "alpha2" / "edgetui.duckdb")  # the same runs, same machine
    b = machine_b(tmp_path, prefix="beta")
    g = machine_b(tmp_path, prefix="gamma")
    run_cli(["--db", str(a1), "sync", "--init", "--pull"], team_url, "alpha")
    env_batch = {"EDGETUI_TEAM_BATCH_RUNS": "2"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "sync"],
            env={**_env(team_url, m), **env_batch},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for db, m in ((a1, "alpha"), (a2, "alpha"), (b, "beta"), (g, "gamma"))
    ]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    team = _events_by_run(pg_server, team_db)
    expected = {}
    for db, m in ((a1, "alpha"), (b, "beta"), (g, "gamma")):
        for k, n in count(db, "SELECT run_key, count(*) FROM events WHERE run_key NOT LIKE 'local@%' GROUP BY 1"):
            expected[f"local@{m}/" + k[6:] if k.startswith("local/") else k] = n
    assert team == expected
    # nothing twice anywhere (the keys are unique constraints; the totals say it too)
    assert pg_server.sql("SELECT count(*), count(DISTINCT (run_key, event_id)) FROM edgetui_team.events", team_db)[
        0
    ] == (
        sum(expected.values()),
        sum(expected.values()),
    )


def _rebuild_equals(db: Path, tmp_path: Path, url: str, machine: str) -> None:
    import shutil

    copy = tmp_path / f"copy-{db.parent.name}.duckdb"
    shutil.copyfile(db, copy)
    run_cli(["--db", str(copy), "sync", "--rebuild"], url, machine)
    assert differences(db, copy) == {}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_push_killed_at_random_points_resumes(samples_template, tmp_path, team_url, pg_server, team_db):
    a = copy_samples_db(samples_template, tmp_path / "alpha" / "edgetui.duckdb")
    run_cli(["--db", str(a), "sync", "--init", "--pull"], team_url, "alpha")
    rnd = random.Random(41)
    n_runs = count(a, "SELECT count(*) FROM runs")[0][0]
    killed = 0

    def on_server_now() -> int:
        return pg_server.sql("SELECT count(*) FROM edgetui_team.runs", team_db)[0][0]

    for _ in range(3):
        # killed once the server has a random number of runs more (one batch a run): mid-push
        target = min(on_server_now() + rnd.randint(1, 2), n_runs - 3)
        p = subprocess.Popen(
            [sys.executable, "-m", "edgetui.cli.main", "--db", str(a), "sync"],
            env={**_env(team_url, "alpha"), "EDGETUI_TEAM_BATCH_RUNS": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while p.poll() is None and on_server_now() < target:
            time.sleep(rnd.uniform(0.0, 0.05))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait(60)
    on_server = pg_server.sql("SELECT count(*) FROM edgetui_team.runs", team_db)[0][0]
    r = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert killed == 3 and 0 < on_server < n_runs
    # the last push did only what the killed ones had not committed
    assert f"pushed {n_runs - on_server} run(s)" in r.stdout
    _rebuild_equals(a, tmp_path, team_url, "alpha")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_server_stopped_and_started_again_mid_push(samples_template, tmp_path):
    server = PgServer(prereqs.need("postgres").parent)
    try:
        server.start()
        db = server.new_database()
        url = server.url(db)
        a = copy_samples_db(samples_template, tmp_path / "alpha" / "edgetui.duckdb")
        run_cli(["--db", str(a), "sync", "--init", "--pull"], url, "alpha")
        p = subprocess.Popen(
            [sys.executable, "-m", "edgetui.cli.main", "--db", str(a), "sync"],
            env={**_env(url, "alpha"), "EDGETUI_TEAM_BATCH_RUNS": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(600):  # until the push's first batch is in
            if p.poll() is not None or server.sql("SELECT count(*) FROM edgetui_team.runs", db)[0][0] > 0:
                break
            time.sleep(0.05)
        assert p.poll() is None, "the push ended before the server was stopped: nothing tested"
        server.stop()  # fast shutdown: every session cut off mid-transaction
        time.sleep(1.0)
        server.start()
        out, err = p.communicate(timeout=200)
        assert p.returncode == 0, err  # the push waited for the server and went on
        n_runs = count(a, "SELECT count(*) FROM runs")[0][0]
        assert f"pushed {n_runs} run(s)" in out
        _rebuild_equals(a, tmp_path, url, "alpha")
    finally:
        server.close()


@pytest.mark.slow
def test_team_views_read_every_members_runs_and_say_who_recorded_them(tmp_path, team_url):
    import csv
    import io

    a = machine_b(tmp_path, n=2, prefix="alpha")
    b = machine_b(tmp_path, n=3, prefix="beta")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha", person="alice")
    run_cli(["--db", str(b), "sync"], team_url, "beta", person="bob")
    run_cli(["--db", str(a), "sync"], team_url, "alpha", person="alice")

    def n_runs(extra: list[str]) -> int:
        out = run_cli(
            ["--db", str(a), "leaderboard", "--format", "csv", "--hours", "1", *extra], team_url, "alpha"
        ).stdout
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["category"] == "overall"]
        return sum(int(r["n_runs"]) for r in rows)

    assert n_runs([]) == 2  # this machine's own runs only
    assert n_runs(["--team"]) == 5  # every member's
    out = run_cli(["--db", str(a), "compare", "alpha-run-0", "beta-run-1", "--team"], team_url, "alpha").stdout
    assert "local/alpha-run-0/sum_task: recorded by alpha (alice)" in out
    assert "local@beta/beta-run-1/sum_task: recorded by beta (bob)" in out
    fit = run_cli(["--db", str(a), "fit", "--by", "run", "--team"], team_url, "alpha", check=False)
    assert fit.returncode == 0, fit.stderr
    assert "beta (bob)" in fit.stdout


def test_forget_with_team_takes_a_run_out_of_every_members_record(
    samples_template, tmp_path, team_url, pg_server, team_db
):
    a = machine_b(tmp_path, n=2, prefix="alpha")
    b = machine_b(tmp_path, n=1, prefix="beta")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert count(b, "SELECT count(*) FROM runs WHERE run_key = 'local@alpha/alpha-run-0/sum_task'") == [(1,)]
    # forgotten without --team: this machine only
    run_cli(["--db", str(b), "forget", "alpha-run-1/sum_task", "--host", "local@alpha", "--yes"], team_url, "beta")
    assert pg_server.sql("SELECT count(*) FROM edgetui_team.runs WHERE run_key LIKE '%alpha-run-1%'", team_db) == [(1,)]
    # with --team: out of the team record, and out of every member's database at their next sync
    r = run_cli(["--db", str(a), "forget", "alpha-run-0/sum_task", "--yes", "--team"], team_url, "alpha")
    assert "took it out of the team record" in r.stdout
    for t in ("runs", "events", "submissions"):
        assert pg_server.sql(f"SELECT count(*) FROM edgetui_team.{t} WHERE run_key LIKE '%alpha-run-0%'", team_db) == [
            (0,)
        ]
    r = run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert "1 run(s) forgotten by the team" in r.stdout
    assert count(b, "SELECT count(*) FROM runs WHERE run_key LIKE '%alpha-run-0%'") == [(0,)]
    assert count(b, "SELECT count(*) FROM events WHERE run_key LIKE '%alpha-run-0%'") == [(0,)]
    # the other run of alpha's stays where it is
    assert count(a, "SELECT count(*) FROM runs WHERE run_key = 'local/alpha-run-1/sum_task'") == [(1,)]


def test_secrets_are_redacted_before_they_leave_the_machine(tmp_path, team_url, pg_server, team_db):
    a = machine_b(tmp_path, n=1, prefix="alpha")
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"
    with duckdb.connect(str(a)) as c:  # as a database written before a rule existed would hold them
        eid = c.execute("SELECT event_id FROM events LIMIT 1").fetchone()[0]
        c.execute(
            "UPDATE events SET summary = ?, raw = ?, data = ? WHERE event_id = ?",
            [f"pushed {token} by mistake", f"AWS_SECRET_ACCESS_KEY={token}".encode(), f'{{"t": "{token}"}}', eid],
        )
        c.execute("UPDATE submissions SET error = ?", [f"token {token}"])
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    summary, raw, data = pg_server.sql(
        f"SELECT summary, encode(raw, 'escape'), data FROM edgetui_team.events WHERE event_id = '{eid}'", team_db
    )[0]
    for v in (summary, raw, data):
        assert token not in v and "<redacted>" in v
    errors = pg_server.sql("SELECT error FROM edgetui_team.submissions", team_db)
    assert errors and all(token not in e and "<redacted>" in e for (e,) in errors)


def test_an_ssh_hosts_runs_are_named_by_its_address_in_the_team_record(tmp_path, team_url, pg_server, team_db):
    from runs_factory import write_run, write_task

    from edgetui.record.ingest import ingest_paths
    from edgetui.store.database import open_db

    root, tasks = tmp_path / "copied" / "runs", tmp_path / "copied" / "tasks"
    write_task(tasks, "sum_task")
    write_run(root, "gpu-run", "sum_task", model="m", start=1_780_000_000, subs=[(600, 0.5, 1.0)], duration_s=3600)
    a = tmp_path / "alpha" / "edgetui.duckdb"
    a.parent.mkdir()
    with open_db(a) as c:  # the runs of the host this member calls gpu-1 (a copy of its root)
        ingest_paths(c, [root], tasks_dir=tasks, host="gpu-1")
    b = machine_b(tmp_path, n=1, prefix="beta")
    (tmp_path / "alpha" / "hosts.toml").write_text('[hosts.gpu-1]\nssh = "me@10.1.2.3:2222"\nroots = ["/srv/runs"]\n')
    (tmp_path / "beta" / "hosts.toml").write_text('[hosts.lab]\nssh = "me@10.1.2.3:2222"\nroots = ["/srv/runs"]\n')

    def sync(db: Path, machine: str) -> None:
        p = subprocess.run(
            [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "sync", "--init"],
            env={**_env(team_url, machine), "EDGETUI_HOSTS_FILE": str(db.parent / "hosts.toml")},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr

    sync(a, "alpha")
    sync(b, "beta")
    assert pg_server.sql("SELECT run_key, host FROM edgetui_team.runs WHERE run_key LIKE '%gpu-run%'", team_db) == [
        ("me@10.1.2.3:2222/gpu-run/sum_task", "me@10.1.2.3:2222")
    ]
    # beta calls the same machine "lab": the run is lab's there
    assert count(b, "SELECT run_key, host FROM runs WHERE run_key LIKE '%gpu-run%'") == [
        ("lab/gpu-run/sum_task", "lab")
    ]
    n = count(a, "SELECT count(*) FROM events WHERE run_key = 'gpu-1/gpu-run/sum_task'")[0][0]
    assert n > 0 and count(b, "SELECT count(*) FROM events WHERE run_key = 'lab/gpu-run/sum_task'") == [(n,)]


def test_without_a_team_record_configured_sync_says_so_in_one_line(tmp_path):
    a = machine_b(tmp_path, n=1, prefix="alpha")
    env = {k: v for k, v in os.environ.items() if k != "EDGETUI_TEAM_URL"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # no team.toml there
    p = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(a), "sync"], env=env, capture_output=True, text=True
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "no team record configured: set EDGETUI_TEAM_URL" in p.stderr
    # a team.toml with a key edgetui does not know is named, with the file
    conf = tmp_path / "config" / "edgetui" / "team.toml"
    conf.parent.mkdir(parents=True)
    conf.write_text('url = "postgresql:///x"\nmachnie = "typo"\n')
    p = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(a), "sync"], env=env, capture_output=True, text=True
    )
    assert p.returncode == 2 and f"{conf}: unknown key 'machnie'" in p.stderr


@pytest.mark.slow
def test_an_annotation_deleted_on_one_machine_goes_everywhere_and_stays_in_the_history(
    tmp_path, team_url, pg_server, team_db
):
    from edgetui.record.annotations import annotate, delete_annotation
    from edgetui.store.database import open_db

    a = machine_b(tmp_path, n=1, prefix="alpha")
    b = machine_b(tmp_path, n=1, prefix="beta")
    rk, rnd = some_round(a)
    with open_db(a) as c:
        aid = annotate(c, rk, round=rnd, label="noise", text="to be deleted")
        keep = annotate(c, rk, round=rnd, label="tuning", text="stays")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert count(b, "SELECT count(*) FROM annotations") == [(2,)]
    with open_db(b) as c:
        assert delete_annotation(c, aid)
    r = run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert "annotations 1 pushed" in r.stdout
    r = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert "0 pushed / 1 pulled" in r.stdout
    for db in (a, b):
        assert count(db, "SELECT annotation_id FROM annotations") == [(keep,)]
    assert pg_server.sql(
        f"SELECT text FROM edgetui_team.annotation_history WHERE annotation_id = '{aid}'", team_db
    ) == [("to be deleted",)]
    # settled: nothing moves on either side any more
    for db, m in ((a, "alpha"), (b, "beta")):
        assert "0 pushed / 0 pulled" in run_cli(["--db", str(db), "sync"], team_url, m).stdout


def test_a_database_the_app_holds_is_pushed_from_a_copy(tmp_path, team_url, pg_server, team_db):
    a = machine_b(tmp_path, n=2, prefix="alpha")
    run_cli(["--db", str(a), "sync", "--init", "--pull"], team_url, "alpha")
    holder = subprocess.Popen(  # another process holding the file, as the app does
        [
            sys.executable,
            "-c",
            f"import duckdb, sys, time; c = duckdb.connect({str(a)!r}); print('held', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = run_cli(["--db", str(a), "sync"], team_url, "alpha")
        assert "pushed 2 run(s)" in r.stdout
        assert "held by another process (the app): pushed from a copy of it" in r.stderr
        assert pg_server.sql("SELECT count(*) FROM edgetui_team.runs", team_db) == [(2,)]
    finally:
        holder.kill()
        holder.wait(10)
    # free again: the next sync finds them on the server as they are here, and sends nothing
    r = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert "pushed 0 run(s)" in r.stdout and "2 unchanged" in r.stdout


def test_a_tag_removed_on_one_machine_is_removed_everywhere_and_a_later_tagging_stays(
    tmp_path, team_url, pg_server, team_db
):
    a = machine_b(tmp_path, n=1, prefix="alpha")
    b = machine_b(tmp_path, n=1, prefix="beta")
    rk = count(a, "SELECT run_key FROM runs")[0][0]
    on_b = "local@alpha/" + rk[len("local/") :]
    run = rk[len("local/") :]
    run_cli(["--db", str(a), "tag", run, "old", "--host", "local"], team_url, "alpha")
    run_cli(["--db", str(a), "tag", run, "kept", "--host", "local"], team_url, "alpha")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert count(b, f"SELECT tag FROM run_tags WHERE run_key = '{on_b}' ORDER BY tag") == [("kept",), ("old",)]
    # a team record made before the removals' table: the first push of a removal makes it
    pg_server.sql("DROP TABLE edgetui_team.run_tag_removals", team_db)
    run_cli(["--db", str(b), "sync"], team_url, "beta")

    run_cli(["--db", str(a), "tag", run, "old", "--host", "local", "--remove"], team_url, "alpha")
    run_cli(["--db", str(a), "sync"], team_url, "alpha")
    team_tags = "SELECT tag FROM edgetui_team.run_tags ORDER BY tag"
    assert pg_server.sql(team_tags, team_db) == [("kept",)]
    # beta still had it: its push does not bring it back, its pull takes it away
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert pg_server.sql(team_tags, team_db) == [("kept",)]
    assert count(b, f"SELECT tag FROM run_tags WHERE run_key = '{on_b}'") == [("kept",)]
    # given again later on beta: that tagging is newer than the removal and reaches alpha
    from edgetui.record.forget_and_tag import tag_run
    from edgetui.store.database import open_db

    with open_db(b) as c:
        assert tag_run(c, on_b, "old")
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert count(a, f"SELECT tag FROM run_tags WHERE run_key = '{rk}' ORDER BY tag") == [("kept",), ("old",)]
    # the removal, pushed, is no longer kept here to push
    assert count(a, "SELECT count(*) FROM meta WHERE starts_with(key, 'team_untag')") == [(0,)]


def test_the_live_watcher_syncs_by_itself_and_stops_on_close(tmp_path, team_url, pg_server, team_db):
    import threading

    from runs_factory import write_run, write_task

    from edgetui.live.supervisor import Supervisor
    from edgetui.live.team_push import TeamPush
    from edgetui.record.team_record import TeamConfig
    from edgetui.store.database import open_db

    b = machine_b(tmp_path, n=1, prefix="beta")  # another member, its run in the team record
    run_cli(["--db", str(b), "sync", "--init"], team_url, "beta")
    root, tasks = tmp_path / "alpha" / "runs", tmp_path / "alpha" / "tasks"
    write_task(tasks, "sum_task")
    write_run(
        root, "alpha-live", "sum_task", model="model-x", start=1_780_000_000, subs=[(600, 0.3, 1.0)], duration_s=3600
    )
    conn = open_db(tmp_path / "alpha" / "edgetui.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, tasks_dir=tasks)
    try:
        cfg = TeamConfig(url=team_url, machine="alpha", person="tester")
        push = sup.start_team_push(TeamPush(sup.conn, cfg, sup.note, interval_s=0.1))
        for _ in range(20):  # the watcher records the run (as its refreshes do)
            sup.poll_once()
            if conn.execute("SELECT count(*) FROM runs WHERE n_events > 0").fetchone()[0]:
                break
        key = conn.execute("SELECT run_key FROM runs WHERE host = 'local'").fetchall()
        assert len(key) == 1
        done = push.syncs
        assert push.wait_syncs(done + 2, 90)  # (the second began after the run was recorded)
        assert push.error is None
        team = pg_server.sql("SELECT run_key, recorded_by FROM edgetui_team.runs ORDER BY 1", team_db)
        assert ("local@alpha/" + key[0][0][len("local/") :], "alpha") in team and len(team) == 2
        # ... and pulled the other member's run into the database it holds
        assert conn.execute("SELECT count(*) FROM runs WHERE host = 'local@beta'").fetchone()[0] == 1
    finally:
        sup.close()
    assert not [t for t in threading.enumerate() if t.name == "edgetui-team-push"]
    conn.close()
    # a second database pulls what the watcher pushed
    run_cli(["--db", str(b), "sync"], team_url, "beta")
    assert count(b, "SELECT count(*) FROM runs WHERE host = 'local@alpha'") == [(1,)]


def test_the_live_watchers_sync_failing_is_said_once_and_retried(tmp_path):
    import socket

    from edgetui.live.supervisor import Supervisor
    from edgetui.live.team_push import TeamPush
    from edgetui.record.team_record import TeamConfig
    from edgetui.store.database import open_db

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conn = open_db(tmp_path / "w.duckdb")
    sup = Supervisor(conn, [tmp_path / "runs"], docker_client=None)
    try:
        cfg = TeamConfig(url=f"postgresql://127.0.0.1:{port}/team", machine="alpha", person="tester")
        push = sup.start_team_push(TeamPush(sup.conn, cfg, sup.note, interval_s=0.02))
        assert push.wait_failures(4, 60)
        said = [m for _, m in sup.notes if "team record" in m]
        assert len(said) == 1 and said[0].startswith("team record: sync failed, retrying")
        assert push.error is not None and push.error in sup._state_messages()
        assert push.syncs == 0
    finally:
        sup.close()
    conn.close()


@pytest.mark.asyncio
async def test_the_app_watching_runs_starts_the_team_sync_when_configured(tmp_path, monkeypatch, team_url):
    import threading

    from test_live_app_docker import _until

    from edgetui.views.app import EdgeTUIApp, LiveConfig

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("EDGETUI_TEAM_URL", raising=False)
    (tmp_path / "runs").mkdir()
    live = LiveConfig([tmp_path / "runs"], home=True, interval=0.5, docker=False)
    app = EdgeTUIApp(tmp_path / "none.duckdb", live=live, on_empty=lambda p: None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: app.supervisor is not None, what="supervisor")
        assert app.supervisor.team_push is None  # no team record configured: none
    # configured (no team record made at that server yet): started, its failure a state line
    monkeypatch.setenv("EDGETUI_TEAM_URL", team_url)
    monkeypatch.setenv("EDGETUI_TEAM_PUSH_S", "0.05")
    app = EdgeTUIApp(tmp_path / "with.duckdb", live=live, on_empty=lambda p: None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: getattr(app.supervisor, "team_push", None) is not None, what="team sync")
        push = app.supervisor.team_push
        await _until(pilot, lambda: push.failures > 0, what="a failed sync")
        assert "sync --init" in push.error and push.interval_s == 0.05
    assert not [t for t in threading.enumerate() if t.name == "edgetui-team-push"]
