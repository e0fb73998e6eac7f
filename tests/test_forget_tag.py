"""Forgetting and tagging runs: directly, and through the process holding the database (typed
requests, never SQL); a forgotten run stays forgotten for ingests and watched roots."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main
from edgetui.store.database import open_db

from conftest import copy_samples_db

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "sample_runs" / "runs" / "judge-demo-001"
CLI = [sys.executable, "-m", "edgetui.cli.main"]


def _q(db: Path, sql: str):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql).fetchall()
    finally:
        c.close()


def test_forget_needs_yes_without_a_terminal_then_leaves_a_tombstone(tmp_path, capsys):
    root = tmp_path / "runs"
    shutil.copytree(RUN, root / RUN.name)
    db = tmp_path / "f.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(root)]) == 0
    before = sorted(p.name for p in (root / RUN.name).rglob("*"))
    r = subprocess.run(
        [*CLI, "--db", str(db), "forget", "judge-demo"], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert r.returncode == 2 and "needs --yes" in r.stderr
    assert _q(db, "SELECT count(*) FROM runs")[0][0] == 1
    capsys.readouterr()
    assert main(["--db", str(db), "forget", "judge-demo", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "forgot local/judge-demo-001/judge_demo_sum" in out
    # the line says how to bring it back: ingest --unforget with the run's own directory
    assert f"`edgetui ingest --unforget {root / RUN.name / 'judge_demo_sum'}` brings it back" in out
    for t in ("runs", "events", "submissions", "test_results", "source_cursors"):
        assert _q(db, f"SELECT count(*) FROM {t}")[0][0] == 0, t
    assert sorted(p.name for p in (root / RUN.name).rglob("*")) == before  # the files are untouched
    # an ingest of the root does not bring it back, unless asked
    assert main(["--db", str(db), "ingest", "-q", str(root)]) == 1
    assert "forgotten with `edgetui forget`" in capsys.readouterr().err
    assert _q(db, "SELECT count(*) FROM runs")[0][0] == 0
    assert main(["--db", str(db), "ingest", "-q", "--unforget", str(root)]) == 0
    assert _q(db, "SELECT count(*) FROM runs")[0][0] == 1 and _q(db, "SELECT count(*) FROM tombstones")[0][0] == 0


def test_forgetting_a_sample_run_says_samples_unforget_brings_it_back(tmp_path, capsys, monkeypatch, samples_template):
    """A sample run comes back by `edgetui samples --unforget`, not `ingest --unforget PATH`: the
    prompt (and the line after) say that command."""
    db = copy_samples_db(samples_template, tmp_path / "s.duckdb")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")
    assert main(["--db", str(db), "forget", "legacy"]) == 0
    out = capsys.readouterr().out
    prompt, done = out.splitlines()[:2]
    assert prompt.startswith("forget local/legacy-evolve-0115/gitlet_vcs (189 events)?")
    assert "`edgetui samples --unforget` brings it back" in prompt and "ingest" not in prompt
    assert done.startswith("forgot ") and "`edgetui samples --unforget` brings it back" in done
    assert _q(db, "SELECT count(*) FROM runs WHERE run_id = 'legacy-evolve-0115'")[0][0] == 0
    assert main(["--db", str(db), "samples", "-q", "--unforget"]) == 0  # the command said works
    assert _q(db, "SELECT count(*) FROM runs WHERE run_id = 'legacy-evolve-0115'")[0][0] == 1


def test_a_watched_root_does_not_bring_a_forgotten_run_back(tmp_path):
    from edgetui.live.supervisor import Supervisor
    from edgetui.record.forget_and_tag import forget_run

    root = tmp_path / "runs"
    shutil.copytree(RUN, root / RUN.name)
    conn = open_db(tmp_path / "w.duckdb")
    sup = Supervisor(conn, [root], docker_client=None)
    try:
        runs = sup.poll_once()
        key = runs[0].run_key
        n = conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()[0]
        assert sup.apply_request({"op": "forget", "run_key": key}) == {"ok": n} and n > 0
        sup.poll_once()
        sup.poll_once()
        assert [r.run_key for r in sup.last_runs] == []
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        with pytest.raises(LookupError):
            forget_run(conn, key)
    finally:
        sup.close()
        conn.close()


def test_tags_are_shown_and_filter_the_runs_table(tmp_path, capsys, samples_template):
    db = tmp_path / "t.duckdb"
    copy_samples_db(samples_template, db)
    assert main(["--db", str(db), "tag", "opus48", "baseline"]) == 0
    assert main(["--db", str(db), "tag", "gpt55", "baseline"]) == 0
    assert main(["--db", str(db), "tag", "gpt55", "codex-try"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--tag", "baseline", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["run_id"][:6] for r in rows) == ["gpt55-", "opus48"]
    assert {r["run_id"][:6]: r["tags"] for r in rows}["gpt55-"] == "baseline codex-try"
    assert main(["--db", str(db), "tag", "gpt55", "codex-try", "--remove"]) == 0
    assert main(["--db", str(db), "runs", "--tag", "codex-try", "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "tag", "opus48", "bad name!"]) == 2
    assert "tag 'bad name!'" in capsys.readouterr().err


def test_forget_and_tag_work_while_another_process_holds_the_database(tmp_path, capsys, samples_template):
    db = tmp_path / "h.duckdb"
    copy_samples_db(samples_template, db)
    n_runs = _q(db, "SELECT count(*) FROM runs")[0][0]
    code = (
        "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        capsys.readouterr()
        assert main(["--db", str(db), "tag", "opus48", "held"]) == 0
        assert "tagged 'held'" in capsys.readouterr().out
        assert main(["--db", str(db), "forget", "legacy", "--yes"]) == 0
        assert "forgot local/legacy-evolve-0115/gitlet_vcs" in capsys.readouterr().out
        assert main(["--db", str(db), "sql", "SELECT count(*) AS n FROM runs", "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["n"] == n_runs - 1
        # SQL writes are still refused: only typed requests write
        assert main(["--db", str(db), "sql", "DELETE FROM run_tags"]) == 2
    finally:
        p.kill()
        p.wait()
    assert _q(db, "SELECT tag FROM run_tags") == [("held",)]
    assert _q(db, "SELECT run_key FROM tombstones") == [("local/legacy-evolve-0115/gitlet_vcs",)]
