"""Files read from a run folder are not trusted (edgetui.parsers.run_folder_files): a FIFO, a link out of
the run folder, a link loop or an oversized file is skipped **with a note** (a parse_error event
and a one-line message naming the file) by the offline ingest, the live supervisor, the why view
and the reports; a run_config.json nested 100,000 levels deep is a parse error naming the byte,
and the run loads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from edgetui.cli.main import main
from edgetui.store.database import open_db

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_runs" / "runs" / "judge-demo-001"
TASKS = ROOT / "sample_runs" / "tasks"
SECRET = "TOPSECRET-c0ffee-not-to-be-read"
FIFOS = ("started_at", "submissions/agent-1/run_instance.log", "submissions/agent-1/test_output.txt")


def _copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(runs root, task dir, a secret file outside the run folder)."""
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(SAMPLE, root / SAMPLE.name)
    secret = tmp_path / "id_rsa"
    secret.write_text(SECRET + "\n")
    return root, root / SAMPLE.name / "judge_demo_sum", secret


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    root, td, secret = _copy(tmp_path)
    for rel in FIFOS:
        (td / rel).unlink()
        os.mkfifo(td / rel)
    os.mkfifo(root / ".judge-admin-secret")
    for name in ("evolve_state.json", "agent_output.txt"):  # a JSON document and the transcript
        (td / name).unlink()
        os.symlink(secret, td / name)
    (td / "run_history.json").unlink()
    os.symlink("run_history.json", td / "run_history.json")  # a loop
    (td / "run_config.json").write_text("[" * 100_000)
    with open(td / "final_result.json", "r+b") as f:
        f.truncate(100 << 20)  # sparse: over the bound of a file read whole
    return root, td


def _rows(db: Path) -> tuple[dict, list]:
    conn = open_db(db)
    try:
        errs = {
            src: (summ, json.loads(data))
            for src, summ, data in conn.execute(
                "SELECT source, summary, data FROM events WHERE kind = 'parse_error'"
            ).fetchall()
        }
        blob = conn.execute(
            "SELECT string_agg(coalesce(summary, '') || coalesce(data::VARCHAR, '') || "
            "coalesce(decode(raw), ''), '') FROM events"
        ).fetchone()[0]
        runs = conn.execute("SELECT run_key FROM runs").fetchall()
    finally:
        conn.close()
    assert SECRET not in blob  # nothing of the file outside the run folder was read
    return errs, runs


def test_the_offline_ingest_skips_each_hostile_file_with_a_note_and_records_the_run(tmp_path, capsys):
    root, td = _hostile(tmp_path)
    db = tmp_path / "x.duckdb"
    rc = main(["ingest", "--db", str(db), "--tasks-dir", str(TASKS), "-q", str(root)])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err
    errs, runs = _rows(db)
    assert len(runs) == 1  # the run loads
    lines = err.splitlines()

    def said(path: Path, words: str) -> None:
        assert any(ln.startswith(f"edgetui: {path}: ") and words in ln for ln in lines), (path, words, lines)

    for rel in FIFOS:
        said(td / rel, "skipped, a FIFO")
        assert "a FIFO" in errs[rel][0], errs
    said(root / ".judge-admin-secret", "skipped, a FIFO")
    assert "skipped, a FIFO" in errs["../../.judge-admin-secret"][0]
    said(td / "evolve_state.json", "a symbolic link pointing out of the run folder")
    assert "pointing out of the run folder" in errs["evolve_state.json"][0]
    said(td / "agent_output.txt", "a symbolic link pointing out of the run folder")
    said(td / "run_history.json", "a symbolic link loop")
    said(td / "final_result.json", f"skipped, {100 << 20:,} bytes, over the {64 << 20:,} read whole")
    assert "over the" in errs["final_result.json"][0]
    assert "a symbolic link loop" in errs["run_history.json"][0]
    # 100,000 levels of "[": a parse error naming the file and the byte, the rest of the run recorded
    said(td / "run_config.json", "invalid JSON at byte 200: nested more than 200 levels deep")
    assert errs["run_config.json"][1]["error_offset"] == 200


def test_a_json_document_read_but_too_deep_to_walk_is_a_parse_error_not_a_lost_run(tmp_path, capsys):
    root, td, _ = _copy(tmp_path)
    (td / "run_config.json").write_text('{"a": ' + "[" * 1000 + "]" * 1000 + "}")  # orjson reads it (< 1,024)
    db = tmp_path / "x.duckdb"
    assert main(["ingest", "--db", str(db), "--tasks-dir", str(TASKS), "-q", str(root)]) == 0
    errs, runs = _rows(db)
    assert len(runs) == 1
    assert errs["run_config.json"][1]["error_offset"] == 205 and "nested more than 200" in errs["run_config.json"][0]


def test_a_folder_of_transcripts_does_not_follow_a_link_out_of_it(tmp_path, capsys):
    d = tmp_path / "projects"
    d.mkdir()
    outside = tmp_path / "id_rsa.jsonl"
    outside.write_text(json.dumps({"type": "system", "subtype": "init", "session_id": "s", "note": SECRET}) + "\n")
    shutil.copy(outside, d / "mine.jsonl")  # a real transcript inside
    os.symlink(outside, d / "link.jsonl")
    os.mkfifo(d / "pipe.jsonl")
    db = tmp_path / "x.duckdb"
    main(["ingest", "--db", str(db), "-q", str(d)])
    err = capsys.readouterr().err
    assert f"{d / 'link.jsonl'}: skipped, a symbolic link pointing out of the run folder" in err
    assert f"{d / 'pipe.jsonl'}: skipped, a FIFO" in err
    conn = open_db(db)
    try:
        assert [r[0] for r in conn.execute("SELECT run_id FROM runs").fetchall()] == ["mine"]
    finally:
        conn.close()


MOMENTS = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800"  # a run with reframing moments


def _moments_run(tmp_path: Path):
    """(runs root, the submissions folder) of a copy of a sample run whose report has moments."""
    root = tmp_path / "runs"
    shutil.copytree(MOMENTS, root / MOMENTS.name)
    return root, root / MOMENTS.name / "gw_signal_search" / "submissions"


def _report(tmp_path: Path, root: Path) -> tuple[str, str, dict]:
    """(key, the markdown report, the why of each moment's round)."""
    from edgetui.analysis.report import build_report, to_markdown
    from edgetui.analysis.why_new_best import why_of

    db = tmp_path / "x.duckdb"
    assert main(["ingest", "--db", str(db), "--tasks-dir", str(TASKS), "-q", str(root)]) == 0
    conn = open_db(db)
    try:
        key = conn.execute("SELECT run_key FROM runs").fetchone()[0]
        rep = build_report(conn, key, with_diff=True)
        whys = {m["round"]: why_of(conn, key, m["round"], with_diff=False) for m in rep["moments"]}
    finally:
        conn.close()
    assert {"agent-52", "agent-85"} <= set(whys)
    return key, to_markdown(rep), whys


def test_why_and_the_report_do_not_follow_an_analysis_md_link_out_of_the_run_folder(tmp_path, capsys):
    root, subs = _moments_run(tmp_path)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    os.symlink(secret, subs / "agent-52" / "analysis.md")
    os.mkfifo(subs / "agent-85" / "analysis.md")
    arc = subs / "agent-85" / "submission.tar.gz"
    if arc.exists():
        arc.unlink()
    os.symlink(secret, arc)  # an archive out of the run folder is not read either
    _, md, whys = _report(tmp_path, root)
    # the ingest said so already: a line on stderr and a parse_error event for each file
    err = capsys.readouterr().err
    for rnd, name, why in (
        ("agent-52", "analysis.md", "a symbolic link pointing out of the run folder"),
        ("agent-85", "analysis.md", "a FIFO"),
        ("agent-85", "submission.tar.gz", "a symbolic link pointing out of the run folder"),
    ):
        assert any(ln.startswith("edgetui: ") and f"{rnd}/{name}: skipped, {why}" in ln for ln in err.splitlines()), (
            rnd,
            name,
            err,
        )
    conn = open_db(tmp_path / "x.duckdb", read_only=True)
    try:
        sources = {r[0] for r in conn.execute("SELECT source FROM events WHERE kind = 'parse_error'").fetchall()}
    finally:
        conn.close()
    assert {
        "submissions/agent-52/analysis.md",
        "submissions/agent-85/analysis.md",
        "submissions/agent-85/submission.tar.gz",
    } <= sources, sources
    assert (
        whys["agent-52"]["notes"]["analysis"] == "[analysis.md skipped: a symbolic link pointing out of the run folder]"
    )
    assert whys["agent-85"]["notes"]["analysis"] == "[analysis.md skipped: a FIFO (only regular files are read)]"
    assert "[analysis.md skipped: a symbolic link pointing out of the run folder]" in md
    assert SECRET not in md


def test_a_3_gb_analysis_md_is_read_to_a_bound_and_said_to_be_cut(tmp_path):
    from edgetui.analysis.why_new_best import MAX_NOTE_CHARS

    root, subs = _moments_run(tmp_path)
    with open(subs / "agent-52" / "analysis.md", "wb") as f:
        f.write(b"# why it worked\n" + b"x" * 100)
        f.truncate(3 << 30)  # sparse: no disk used (read whole: 3 GB of memory)
    _, md, whys = _report(tmp_path, root)
    text = whys["agent-52"]["notes"]["analysis"]
    assert text.startswith("# why it worked\n")
    assert len(text) < MAX_NOTE_CHARS * 4 + 200
    assert text.endswith(f"of {3 << 30:,} bytes shown]") and "[analysis.md cut: " in text
    assert f"of {3 << 30:,} bytes shown]" in md


def test_the_live_judge_poller_does_not_block_on_a_fifo_as_the_admin_secret(tmp_path):
    import threading

    from edgetui.live.judge import read_admin_secret

    os.mkfifo(tmp_path / ".judge-admin-secret")
    got: list = []
    t = threading.Thread(target=lambda: got.append(read_admin_secret([tmp_path / ".judge-admin-secret"])), daemon=True)
    t.start()
    t.join(timeout=30)  # (a deadline, not a timing: it blocked for good on the FIFO's open)
    assert not t.is_alive(), "blocked on the FIFO"
    assert got == [None]


def test_the_live_supervisor_skips_the_same_files_with_the_same_notes_and_does_not_hang(tmp_path):
    from edgetui.live.supervisor import Supervisor

    root, td = _hostile(tmp_path)
    live = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(live, [root], docker_client=None)
    try:
        for _ in range(3):  # (each would block for good on a FIFO opened for reading)
            sup.poll_once()
    finally:
        sup.close()
        live.close()
    errs, runs = _rows(tmp_path / "live.duckdb")
    assert len(runs) == 1
    for rel in (*FIFOS, "evolve_state.json", "run_history.json", "final_result.json", "../../.judge-admin-secret"):
        assert "skipped, " in errs[rel][0], (rel, errs)
    assert "nested more than 200 levels deep" in errs["run_config.json"][0]


def test_the_rules_one_by_one(tmp_path):
    from edgetui.parsers.run_folder_files import SkippedRunFile, read_run_file, read_run_file_head, reading_run_folder

    run = tmp_path / "run"
    (run / "task").mkdir(parents=True)
    (run / "task" / "a.json").write_bytes(b"{}")
    os.symlink("a.json", run / "task" / "inside.json")  # a link inside the folder is followed
    os.symlink(tmp_path / "nowhere", run / "task" / "dangling.json")
    (tmp_path / "big").write_bytes(b"x" * 100)
    os.symlink(tmp_path / "big", run / "task" / "out.json")
    with reading_run_folder(run) as notes:
        assert read_run_file(run / "task" / "inside.json") == b"{}"
        with pytest.raises(FileNotFoundError):  # missing: normal, not noted
            read_run_file(run / "task" / "dangling.json")
        with pytest.raises(SkippedRunFile):
            read_run_file(run / "task" / "out.json")
        with pytest.raises(SkippedRunFile, match="over the 1 read whole"):
            read_run_file(run / "task" / "a.json", limit=1)
        assert read_run_file_head(run / "task" / "a.json", 1) == (b"{", 2)
    assert notes.relative(run / "task") == [
        ("out.json", "a symbolic link pointing out of the run folder"),
        ("a.json", "2 bytes, over the 1 read whole"),
    ]
    assert read_run_file(run / "task" / "out.json") == b"x" * 100  # no run folder: a user's own file
