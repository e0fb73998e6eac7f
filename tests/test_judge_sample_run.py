"""The sample run recorded with the REAL SForge judge: ``sample_runs/runs/judge-demo-001/judge_demo_sum``.

Its ``submissions/`` folders and ``run_history.json`` were written by ``sforge serve`` grading real
archives (``sample_runs/make_judge_run.py``; see sample_runs/README.md for what came from the judge and
what the script wrote). Here:

(a) the offline ingest agrees with the judge's own files: one submissions row per ``report.json`` with its
    pass rate / score / counts, and the run's best round is what SForge's ``select_best`` picks from
    ``run_history.json``;
(b) live → replay equivalence: the run dir is re-created in a tmp runs root in the order the files were
    written during the recording (true times from the run's ``_truth`` file): ``run_agent.log`` head and
    ``started_at``, then transcript lines, some of them in two halves (a half-written line between two
    refreshes), each submission folder first without and then with its report, the auto-eval ticks, the
    end-of-run files and ``final_result.json`` last; ``Supervisor.poll_once()`` runs after every step into
    database A. The complete copy is then ingested offline into database B. Both must hold the same events
    and the same submissions (times differ by design: observed live, interpolated offline);
(c) ``edgetui replay judge-demo-001/judge_demo_sum`` resolves to that run in database B and its replay
    cursor loads.

No Docker and no judge are needed: the recording is committed.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from edgetui.store import queries as store
from edgetui.cli.run_arguments import resolve_run
from edgetui.store.database import open_db
from edgetui.record.ingest import ingest_paths
from edgetui.live.alarms import AlarmSettings
from edgetui.live.supervisor import Supervisor
from edgetui.replay.cursor import ReplayCursor

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs"
TASKS = SAMPLES / "tasks"
RUN_ID, TASK_ID = "judge-demo-001", "judge_demo_sum"
RUN_DIR = SAMPLES / "runs" / RUN_ID
TASK_DIR = RUN_DIR / TASK_ID
TRUTH = SAMPLES / "_truth" / f"{RUN_ID}__{TASK_ID}.json"
KEY = f"local/{RUN_ID}/{TASK_ID}"

EVENT_COLS = 'kind, source, "offset", sub, round, tool_use_id, summary'
SUB_COLS = (
    "round, kind, submission_id, status, pass_rate, score, score_0_100, total_tests, passed, is_new_best, "
    "best_round, best_score"
)


def _truth() -> dict:
    return json.loads(TRUTH.read_text())


def _rows(conn, sql: str, params=None) -> list[tuple]:
    return conn.execute(sql, params or []).fetchall()


# ---------------------------------------------------------------------------- (a) offline ingest


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    conn = open_db(tmp_path_factory.mktemp("judge_run") / "b.duckdb")
    rep = ingest_paths(conn, [RUN_DIR], tasks_dir=TASKS)
    assert rep.runs == [KEY], rep.messages
    yield conn
    conn.close()


def test_the_recording_is_complete_and_small():
    assert (TASK_DIR / "final_result.json").exists() and (TASKS / f"{TASK_ID}.json").exists() and TRUTH.exists()
    rounds = sorted(p.name for p in (TASK_DIR / "submissions").iterdir())
    agent = [r for r in rounds if r.startswith("agent-")]
    auto = [r for r in rounds if r.startswith("auto-")]
    assert 4 <= len(agent) <= 6 and 1 <= len(auto) <= 2 and len(agent) + len(auto) == len(rounds)
    for r in rounds:  # the judge's files of docs/sforge-run-folders.md §4.2, in every folder
        names = {p.name for p in (TASK_DIR / "submissions" / r).iterdir()}
        assert {
            "run_instance.log",
            "submission.tar.gz",
            "allowed_files.txt",
            "eval.sh",
            "test_output.txt",
            "report.json",
        } <= names, (r, names)
    size = sum(p.stat().st_size for p in RUN_DIR.rglob("*") if p.is_file())
    assert size < 1_000_000


def test_submissions_match_the_judges_reports(sample_db):
    rows = {
        r[0]: r for r in _rows(sample_db, f"SELECT {SUB_COLS}, submitted_at FROM submissions WHERE run_key = ?", [KEY])
    }
    folders = sorted(p for p in (TASK_DIR / "submissions").iterdir() if p.is_dir())
    assert sorted(rows) == sorted(p.name for p in folders)
    hist = {e["round"]: e for e in json.loads((TASK_DIR / "run_history.json").read_text())["entries"]}
    for p in folders:
        rep = json.loads((p / "report.json").read_text())
        rnd, kind, sid, status, pr, score, s100, total, passed, *_, submitted_at = rows[p.name]
        assert kind == p.name.split("-")[0] and sid == rep["submission_id"] and status == "graded", rows[p.name]
        assert pr == pytest.approx(rep["pass_rate"]) and score == pytest.approx(rep["score"])
        assert s100 == pytest.approx(rep["score_0_100"]) and total == rep["total_tests"] and passed == rep["passed"]
        assert submitted_at == pytest.approx(rep["submitted_at"])
        # the judge's history entry for the round says the same
        assert hist[p.name]["submission_id"] == sid and hist[p.name]["score"] == rep["score"]
        assert hist[p.name]["pass_rate"] == rep["pass_rate"]


def test_best_round_is_sforges_selection_over_the_judge_history(sample_db):
    selection = pytest.importorskip("sforge.harness.selection")
    task = json.loads((TASKS / f"{TASK_ID}.json").read_text())["judge"]
    hist = json.loads((TASK_DIR / "run_history.json").read_text())
    best = selection.select_best(hist["entries"], task["score_direction"], task["selection"])
    assert best["best_round"] == hist["best_round"]  # the judge's own answer, for the record
    row = _rows(
        sample_db,
        "SELECT best_round, best_score, best_pass_rate, status, agent_submissions, "
        "auto_submissions FROM runs WHERE run_key = ?",
        [KEY],
    )[0]
    assert row[0] == best["best_round"] and row[1] == pytest.approx(best["best_score"])
    assert row[2] == pytest.approx(best["best_pass_rate"]) and row[3] == "finished"
    assert (row[4], row[5]) == (hist["agent_submissions"], hist["auto_submissions"])
    # best-so-far: at each result (submissions.t = when it was known) the best is sforge's selection
    # over the results known by then, in the judge's creation order; the last new best is the selected round
    sent = [
        r[0] for r in _rows(sample_db, "SELECT round FROM submissions WHERE run_key = ? ORDER BY submitted_at", [KEY])
    ]
    assert sent == [e["round"] for e in hist["entries"]]  # judge order = submission order
    subs = _rows(
        sample_db, "SELECT round, is_new_best, best_round FROM submissions WHERE run_key = ? ORDER BY t", [KEY]
    )
    creation = {e["round"]: i for i, e in enumerate(hist["entries"])}
    prev = None
    for i, (rnd, is_new, best_round) in enumerate(subs):
        known = sorted(creation[r[0]] for r in subs[: i + 1])
        b = selection.select_best([hist["entries"][j] for j in known], task["score_direction"], task["selection"])
        assert best_round == b["best_round"], rnd
        assert is_new == (b["best_round"] == rnd and b["best_round"] != prev), rnd
        prev = b["best_round"]
    assert [r[0] for r in subs if r[1]][-1] == best["best_round"]


def test_sforge_submit_results_in_the_transcript_link_to_the_rounds(sample_db):
    truth = {r["round"]: r for r in _truth()["rounds"] if r["kind"] == "agent"}
    got = _rows(
        sample_db,
        "SELECT round, tool_use_id, summary FROM events WHERE run_key = ? AND kind = 'tool_result' "
        "AND round LIKE 'agent-%' ORDER BY \"offset\"",
        [KEY],
    )
    assert [r[0] for r in got] == sorted(truth, key=lambda r: int(r.split("-")[1]))
    for rnd, tid, _ in got:
        assert tid == truth[rnd]["tool_use_id"]
    # the printed results are the judge's (the real sforge-submit script printed them)
    text = (TASK_DIR / "agent_output.txt").read_text()
    for line in text.splitlines():
        obj = json.loads(line)
        if obj["type"] != "user":
            continue
        content = obj["message"]["content"][0].get("content")
        m = re.search(r"Round: (agent-\d+)", content or "")
        if not m:
            continue
        rep = json.loads((TASK_DIR / "submissions" / m.group(1) / "report.json").read_text())
        sm = re.search(r"Score:\s+(\S+)", content)
        assert sm and float(sm.group(1)) == rep["score"]
        assert f"Passed:      {rep['passed']}/{rep['total_tests']}" in content


# ---------------------------------------------------------------------------- (b) live → replay equivalence


def _steps(dst: Path) -> list[tuple[float, str, object]]:
    """(true epoch, action, argument) in the order the recording wrote the files."""
    t = _truth()
    steps: list[tuple[float, str, object]] = []
    start = t["started_at_epoch"]
    # run_agent.log: the lines up to "Running agent" at the start, the rest when the agent has finished
    log = (TASK_DIR / "run_agent.log").read_bytes().splitlines(keepends=True)
    head_n = next(i for i, ln in enumerate(log) if b" - Running agent: " in ln) + 1
    steps.append((start - 1e-3, "start", b"".join(log[:head_n])))
    # transcript lines; every third one arrives in two halves (a refresh sees the half-written line)
    data = (TASK_DIR / "agent_output.txt").read_bytes()
    offs = t["agent_output"]["line_epochs"]
    for i, (off, ep) in enumerate(offs):
        end = offs[i + 1][0] if i + 1 < len(offs) else len(data)
        line = data[off:end]
        if i % 3 == 1 and len(line) > 4:
            half = len(line) // 2
            steps.append((ep, "transcript", line[:half]))
            steps.append((ep, "transcript", line[half:]))  # same time: the stable sort keeps file order
        else:
            steps.append((ep, "transcript", line))
    # submission folders: the judge's files before grading ends, then test output + report + full log
    for r in t["rounds"]:
        steps.append((r["grading_start_epoch"], "round_start", r["round"]))
        steps.append((r["grading_end_epoch"], "round_end", r["round"]))
    ticks = (TASK_DIR / "auto_eval_ticks.log").read_bytes().splitlines(keepends=True)
    tick_t = {r["round"]: r["tick_log_epoch"] for r in t["rounds"] if "tick_log_epoch" in r}
    for ln in ticks:
        rnd = re.search(rb"round=(\S+)", ln).group(1).decode()
        steps.append((tick_t[rnd], "ticks", ln))
    end = max(s[0] for s in steps) + 1.0
    steps.append((end, "end_files", b"".join(log[head_n:])))
    steps.append((end + 1.0, "final", None))
    steps.sort(key=lambda s: s[0])
    return steps


def _apply(step, dst: Path) -> None:
    _, action, arg = step
    td = dst / RUN_ID / TASK_ID
    if action == "start":
        td.mkdir(parents=True)
        shutil.copy2(RUN_DIR / "run_config.json", dst / RUN_ID / "run_config.json")
        for name in ("run_config.json", "_sforge-submit.sh", "agent_prompt.md", "started_at"):
            shutil.copy2(TASK_DIR / name, td / name)
        (td / "run_agent.log").write_bytes(arg)
    elif action in ("transcript", "ticks"):
        name = "agent_output.txt" if action == "transcript" else "auto_eval_ticks.log"
        with open(td / name, "ab") as f:
            f.write(arg)
    elif action == "round_start":
        src, out = TASK_DIR / "submissions" / arg, td / "submissions" / arg
        out.mkdir(parents=True)
        for name in ("submission.tar.gz", "allowed_files.txt", "eval.sh"):
            shutil.copy2(src / name, out / name)
        log = (src / "run_instance.log").read_bytes()
        cut = log.index(b"Running eval script")
        (out / "run_instance.log").write_bytes(log[: log.rindex(b"\n", 0, cut) + 1])
    elif action == "round_end":
        src, out = TASK_DIR / "submissions" / arg, td / "submissions" / arg
        shutil.copy2(src / "test_output.txt", out / "test_output.txt")
        shutil.copy2(src / "report.json", out / "report.json")
        shutil.copy2(src / "run_instance.log", out / "run_instance.log")
    elif action == "end_files":
        with open(td / "run_agent.log", "ab") as f:
            f.write(arg)
        for name in ("final_archive.tar.gz", "evolve_state.json", "run_history.json"):
            shutil.copy2(TASK_DIR / name, td / name)
    elif action == "final":
        shutil.copy2(TASK_DIR / "final_result.json", td / "final_result.json")


def _same_tree(a: Path, b: Path) -> None:
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert fa == fb
    for rel in fa:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_live_recording_replays_with_the_same_events(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    conn_a = open_db(tmp_path / "live.duckdb")
    # alarms off: the recording is hours/days old while the copy is made now, so age-based rules
    # (no new best, stall, abort) would fire on the replayed timeline; they are not what is compared
    settings = AlarmSettings(
        discovery_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        stats_interval_s=0,
        grading_grace_s=1e9,
        container_grace_s=0,
        stall_after_s=1e12,
        no_new_best_after_s=1e12,
        abort_after_s=1e12,
    )
    sup = Supervisor(conn_a, [runs], docker_client=None, settings=settings, tasks_dir=TASKS)
    saw_half_line = saw_in_flight = False
    try:
        steps = _steps(runs)
        for step in steps:
            _apply(step, runs)
            out = sup.poll_once()
            if out:
                run = out[0]
                saw_in_flight |= bool(run.grading_rounds)
                st = sup.runs[KEY].sources.get("agent_output.txt")
                if st is not None:
                    size = (runs / RUN_ID / TASK_ID / "agent_output.txt").stat().st_size
                    saw_half_line |= st.offset < size
        for _ in range(3):  # the last files: refresh, finalize
            out = sup.poll_once()
        assert [r.run_key for r in out] == [KEY] and out[0].status == "finished", [(r.run_key, r.status) for r in out]
        internal = [m for _, m in sup.notes if m.startswith(("could not", "refresh failed", "tail failed"))]
        assert internal == []
    finally:
        sup.close()
    assert saw_half_line, "no refresh saw a half-written transcript line"
    assert saw_in_flight, "no refresh saw a submission folder before its report.json"
    _same_tree(runs / RUN_ID, RUN_DIR)  # the staged copy is now the complete run dir

    conn_b = open_db(tmp_path / "replay.duckdb")
    rep = ingest_paths(conn_b, [runs], tasks_dir=TASKS)
    assert rep.runs == [KEY], rep.messages
    try:
        # live-only event kinds: none was recorded (no Docker; alarms off)
        assert (
            _rows(
                conn_a,
                "SELECT count(*) FROM events WHERE run_key = ? AND kind IN ('alarm', 'container_state', "
                "'resource_sample')",
                [KEY],
            )[0][0]
            == 0
        )
        ev_a = Counter(_rows(conn_a, f"SELECT {EVENT_COLS} FROM events WHERE run_key = ?", [KEY]))
        ev_b = Counter(_rows(conn_b, f"SELECT {EVENT_COLS} FROM events WHERE run_key = ?", [KEY]))
        assert sum(ev_b.values()) > 60
        assert ev_a == ev_b, {
            "live only": list((ev_a - ev_b).elements())[:10],
            "offline only": list((ev_b - ev_a).elements())[:10],
        }
        # generations are first-line hashes, the same for the file grown live and the complete copy:
        # so event ids are equal too
        ids_a = {r[0] for r in _rows(conn_a, "SELECT event_id FROM events WHERE run_key = ?", [KEY])}
        ids_b = {r[0] for r in _rows(conn_b, "SELECT event_id FROM events WHERE run_key = ?", [KEY])}
        assert ids_a == ids_b
        # times: observed live, interpolated / recorded offline
        n_obs = _rows(
            conn_a,
            "SELECT count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt' AND t_source = 'observed'",
            [KEY],
        )[0][0]
        assert n_obs > 0
        assert (
            _rows(conn_b, "SELECT count(*) FROM events WHERE run_key = ? AND t_source = 'observed'", [KEY])[0][0] == 0
        )
        # submissions and the run's aggregates
        q = f"SELECT {SUB_COLS} FROM submissions WHERE run_key = ? ORDER BY round"
        subs_a, subs_b = _rows(conn_a, q, [KEY]), _rows(conn_b, q, [KEY])
        assert subs_a == subs_b and len(subs_a) == len(_truth()["rounds"])
        qr = (
            "SELECT status, best_round, best_score, best_pass_rate, best_score_0_100, agent_submissions, "
            "auto_submissions, n_tool_calls, input_tokens, output_tokens FROM runs WHERE run_key = ?"
        )
        assert _rows(conn_a, qr, [KEY]) == _rows(conn_b, qr, [KEY])
        assert _rows(conn_b, qr, [KEY])[0][:2] == ("finished", _truth()["expected"]["best_round"])
    finally:
        conn_a.close()
        conn_b.close()


# ---------------------------------------------------------------------------- (c) replay resolves


def test_replay_resolves_the_recorded_run(sample_db):
    key = resolve_run(sample_db, f"{RUN_ID}/{TASK_ID}")
    assert key == KEY
    assert resolve_run(sample_db, RUN_ID) == KEY
    head = store.run_header(sample_db, key)
    cur = ReplayCursor(store.run_events(sample_db, key), store.submissions(sample_db, key), start=head["started_at"])
    assert cur.n > 60 and cur.new_best_idx
    best = _truth()["expected"]["best_round"]
    assert cur.round[cur.new_best_idx[-1]] == best
