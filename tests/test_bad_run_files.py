"""Bad input in a run directory is said, not silent (a fresh user's trial): a copy of the sample run
judge-demo-001 with final_result.json, evolve_state.json, run_config.json and a report.json cut
short, agent_output.txt cut mid-line and NUL / 0xFF bytes in run_agent.log. ``edgetui ingest``
says one line per bad file (full path, byte offset, what is wrong), keeps every bad record as a
parse_error event with its raw bytes, says why the run is not finished, and the live supervisor
records the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from edgetui.cli.main import main
from edgetui.store.database import open_db

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_runs" / "runs" / "judge-demo-001"
TASKS = ROOT / "sample_runs" / "tasks"
CUT_JSON = ("final_result.json", "evolve_state.json", "run_config.json", "submissions/agent-1/report.json")
BAD_BYTES = b"\x00\xff\xfe"


def _garble(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes], int]:
    """The trial's copy: (runs root, task dir, the bad files' bytes by name, file offset of the NUL)."""
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(SAMPLE, root / SAMPLE.name)
    td = root / SAMPLE.name / "judge_demo_sum"
    kept: dict[str, bytes] = {}
    for name in CUT_JSON:
        raw = (td / name).read_bytes()
        kept[name] = raw[: len(raw) // 2]
        (td / name).write_bytes(kept[name])
    raw = (td / "agent_output.txt").read_bytes()
    last_nl = raw.rindex(b"\n", 0, len(raw) - 1)
    cut = last_nl + 1 + (len(raw) - last_nl) // 2  # in the middle of the last line
    kept["agent_output.txt"] = raw[last_nl + 1 : cut]
    (td / "agent_output.txt").write_bytes(raw[:cut])
    log = (td / "run_agent.log").read_bytes()
    lines = log.split(b"\n")
    i = len(lines) // 2
    at = sum(len(x) + 1 for x in lines[:i]) + 30  # 30 bytes into a record line of the log
    log = log[:at] + BAD_BYTES + log[at:]
    (td / "run_agent.log").write_bytes(log)
    line_start = log.rindex(b"\n", 0, at) + 1
    kept["run_agent.log"] = log[line_start : log.index(b"\n", at)]
    return root, td, kept, at


@pytest.fixture
def garbled(tmp_path, capsys):
    root, td, kept, nul_at = _garble(tmp_path)
    db = tmp_path / "x.duckdb"
    rc = main(["ingest", "--db", str(db), "--tasks-dir", str(TASKS), "-q", str(root)])
    err = capsys.readouterr().err
    return SimpleNamespace(root=root, td=td, kept=kept, nul_at=nul_at, db=db, rc=rc, err=err)


def test_ingest_says_one_line_per_bad_file_with_its_full_path_and_byte(garbled):
    td, nul_at, rc, err = garbled.td, garbled.nul_at, garbled.rc, garbled.err
    assert rc == 0  # recorded: nothing is lost
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("edgetui: ")]
    for name in (*CUT_JSON, "agent_output.txt", "run_agent.log"):
        mine = [ln for ln in lines if ln.startswith(f"edgetui: {td / name}")]
        assert len(mine) == 1, (name, lines)
        assert "byte " in mine[0] and "kept as a parse_error event" in mine[0], mine[0]
    final = next(ln for ln in lines if "final_result.json" in ln)
    # the stdlib's "Unterminated string starting at" is completed, not left hanging on "at"
    assert "unterminated string starting at byte " in final and "cut short?" in final
    assert f"NUL byte at byte {nul_at}" in next(ln for ln in lines if "run_agent.log" in ln)
    assert "no newline" in next(ln for ln in lines if "agent_output.txt" in ln)


def test_every_bad_record_is_kept_with_its_raw_bytes_and_the_run_says_why_it_is_not_finished(garbled):
    kept, nul_at, db = garbled.kept, garbled.nul_at, garbled.db
    conn = open_db(db)
    try:
        rows = {
            src: (raw, json.loads(data), summ)
            for src, raw, data, summ in conn.execute(
                "SELECT source, raw, data, summary FROM events WHERE kind = 'parse_error'"
            ).fetchall()
        }
        status, reason, n_bad = conn.execute("SELECT status, status_reason, n_parse_errors FROM runs").fetchone()
    finally:
        conn.close()
    assert set(rows) == {*CUT_JSON, "agent_output.txt", "run_agent.log"}
    for name, raw in kept.items():
        assert bytes(rows[name][0]) == raw, name
    assert rows["run_agent.log"][1]["bad_byte"] == nul_at
    assert not any(s.endswith(" at") for _, _, s in rows.values())
    assert n_bad == len(rows)
    assert status == "aborted"
    assert reason.startswith("no final result: final_result.json could not be read (invalid JSON at byte ")


def test_good_log_lines_are_not_flagged_and_bad_bytes_are_found_where_they_are():
    from edgetui.parsers.runlog import BAD_BYTES_SUB, RunAgentLogParser, bad_byte_at

    assert bad_byte_at("2026-01-01 00:00:00,000 - INFO - café".encode()) is None
    assert bad_byte_at(b"abc\xffdef") == (3, "byte 0xFF, not UTF-8")
    assert bad_byte_at(b"ab\x00c\xff") == (2, "a NUL byte")
    p = RunAgentLogParser("run_agent.log", "g", 0.0)
    good = p.feed(b"2026-01-01 00:00:00,000 - INFO - hello", 0)
    assert [e.kind for e in good] == ["log"]
    bad = p.feed(b"2026-01-01 00:00:01,000 - INFO - he\xffllo", 100)
    assert [e.kind for e in bad] == ["log", "parse_error"]
    assert bad[1].sub == BAD_BYTES_SUB and bad[1].data["bad_byte"] == 100 + 35 and bad[1].raw.endswith(b"\xffllo")
    # a line that is a parse_error anyway is not said twice
    q = RunAgentLogParser("run_agent.log", "g", 0.0)
    once = q.feed(b"no prefix \x00 here", 0)
    assert [e.kind for e in once] == ["parse_error"] and once[0].data["bad_byte"] == 10


def test_a_nan_score_reads_as_a_dash_not_nan():
    from edgetui.parsers.sforge_dir import result_summary
    from edgetui.records import SubmissionRecord

    rec = SubmissionRecord(
        round="agent-36", kind="agent", n=36, status="graded", pass_rate=0.893, score=None, score_flag="nan"
    )
    assert result_summary(rec) == "agent-36 graded, pass 89.3%, score –"
    rec.score_flag = "inf"
    assert result_summary(rec).endswith("score inf")


def test_the_live_supervisor_records_the_same_bad_records_and_reason(tmp_path):
    from edgetui.record.ingest import ingest_paths
    from edgetui.live.supervisor import Supervisor
    from edgetui.parsers.parsing_process import TAIL_SUB

    root = _garble(tmp_path)[0]
    live = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(live, [root], docker_client=None)
    try:
        sup.poll_once()
        sup.poll_once()
    finally:
        sup.close()
    off = open_db(tmp_path / "off.duckdb")
    ingest_paths(off, [root], tasks_dir=TASKS)
    # (live, a half-written last line waits for its newline: the transcript's cut line is offline's only)
    q = (
        "SELECT event_id, source, \"offset\", sub, summary, data, raw FROM events WHERE kind = 'parse_error' "
        "AND NOT (source = 'agent_output.txt' AND sub = ?) ORDER BY 1"
    )
    got = live.execute(q, [TAIL_SUB]).fetchall()
    assert len(got) == 5 and got == off.execute(q, [TAIL_SUB]).fetchall()
    q = "SELECT status_reason FROM runs"
    assert live.execute(q).fetchall() == off.execute(q).fetchall()
    live.close()
    off.close()
