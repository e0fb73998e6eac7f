"""SForge's abort threshold has one source, the user's settings (alarms.toml's ``abort_after_s``,
default SFORGE_VIZ_ABORT_THRESHOLD or 7200 s), read when used: the offline ingest and the live
supervisor say "aborted" of the same run alike (issue 35, item 3)."""

import time

import duckdb

from edgetui.live.alarms import load_settings
from runs_factory import ingest, write_run, write_task


def _status(db):
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return conn.execute("SELECT status FROM runs").fetchall()
    finally:
        conn.close()


def test_offline_ingest_reads_the_abort_threshold_of_the_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SFORGE_VIZ_ABORT_THRESHOLD", raising=False)
    (tmp_path / "config" / "edgetui").mkdir(parents=True)
    (tmp_path / "config" / "edgetui" / "alarms.toml").write_text("abort_after_s = 600\n")
    write_task(tmp_path / "tasks", "t1")
    # a run going on whose last sign of life is an hour old: past the user's 600 s, within 7200 s
    write_run(tmp_path / "runs", "r1", "t1", model="m", start=time.time() - 3600, subs=[], duration_s=None)
    assert load_settings().abort_after_s == 600  # what the live supervisor is given
    ingest(tmp_path / "a.duckdb", [tmp_path / "runs"], tmp_path / "tasks")
    assert _status(tmp_path / "a.duckdb") == [("aborted",)]  # before: "running" (the environment only)


def test_the_environment_is_read_when_used_not_at_import(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no settings file
    monkeypatch.setenv("SFORGE_VIZ_ABORT_THRESHOLD", "600")
    assert load_settings().abort_after_s == 600
    write_task(tmp_path / "tasks", "t1")
    write_run(tmp_path / "runs", "r1", "t1", model="m", start=time.time() - 3600, subs=[], duration_s=None)
    ingest(tmp_path / "a.duckdb", [tmp_path / "runs"], tmp_path / "tasks")
    assert _status(tmp_path / "a.duckdb") == [("aborted",)]
    monkeypatch.setenv("SFORGE_VIZ_ABORT_THRESHOLD", "7200")
    assert load_settings().abort_after_s == 7200
    ingest(tmp_path / "b.duckdb", [tmp_path / "runs"], tmp_path / "tasks")
    assert _status(tmp_path / "b.duckdb") == [("running",)]
