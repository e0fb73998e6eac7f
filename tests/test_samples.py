"""The bundled sample runs: coverage of real event kinds, time alignment against the
generator's truth, and agreement with SForge's own visualizer scanner."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main
from edgetui.record.ingest import ingest_paths

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs"
TRUTH = sorted((SAMPLES / "_truth").glob("*.json"))


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("samples") / "s.duckdb"
    assert main(["--db", str(db), "samples", "-q"]) == 0
    return db


def q(db: Path, sql: str, params=None):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, params or []).fetchall()
    finally:
        c.close()


def test_all_sample_runs_recorded_as_samples(sample_db):
    rows = q(
        sample_db,
        "SELECT run_id, task_id, is_sample, status FROM runs WHERE run_dir NOT LIKE '%/genuine/%' ORDER BY run_id",
    )
    truth = {(json.loads(f.read_text())["run_id"], json.loads(f.read_text())["task_id"]) for f in TRUTH}
    assert {(r[0], r[1]) for r in rows} == truth
    assert all(r[2] for r in rows) and all(r[3] == "finished" for r in rows)
    # and the genuine ones (sample_runs/genuine), tagged as samples too
    genuine = q(sample_db, "SELECT count(*), bool_and(is_sample) FROM runs WHERE run_dir LIKE '%/genuine/%'")[0]
    assert genuine == (5, True)
    # samples are left out unless asked for
    assert q(sample_db, "SELECT count(*) FROM runs WHERE NOT is_sample")[0][0] == 0


def test_samples_cover_corpus_event_kinds(sample_db, corpus, tmp_path):
    db = tmp_path / "a.duckdb"
    c = duckdb.connect(str(db))
    rep = ingest_paths(c, sorted((corpus / "A").iterdir()))
    c.close()
    assert len(rep.runs) == len(list((corpus / "A").iterdir()))
    corpus_kinds = {r[0] for r in q(db, "SELECT DISTINCT kind FROM events WHERE kind <> 'parse_error'")}
    sample_kinds = {r[0] for r in q(sample_db, "SELECT DISTINCT kind FROM events WHERE source = 'agent_output.txt'")}
    assert corpus_kinds - sample_kinds == set()

    def features(d: Path) -> dict:
        src = "source = 'agent_output.txt'" if d == sample_db else "TRUE"
        return {
            "split message.id": q(
                d,
                f"SELECT count(*) FROM (SELECT message_id FROM events WHERE {src} AND "
                'message_id IS NOT NULL GROUP BY run_key, message_id HAVING count(DISTINCT "offset") > 1)',
            )[0][0],
            "subagent events": q(d, f"SELECT count(*) FROM events WHERE {src} AND parent_tool_use_id IS NOT NULL")[0][
                0
            ],
            "second init": q(d, f"SELECT count(*) FROM events WHERE {src} AND kind = 'session_init' AND segment >= 1")[
                0
            ][0],
            "tool results as lists": q(
                d,
                f"SELECT count(*) FROM events WHERE {src} AND kind = 'tool_result' "
                "AND (data->>'$.content_blocks') IS NOT NULL",
            )[0][0],
        }

    fa, fs = features(db), features(sample_db)
    for name in fa:
        if fa[name]:
            assert fs[name] > 0, f"samples lack {name} (corpus A has {fa[name]})"
    # plus sforge-submit rounds linked to submissions/agent-N
    linked = q(
        sample_db,
        """SELECT count(*) FROM events e JOIN submissions s ON s.run_key = e.run_key AND s.round = e.round
                             WHERE e.kind = 'tool_result' AND e.round LIKE 'agent-%'""",
    )[0][0]
    assert linked > 200


def _truth(name_part: str) -> dict:
    for f in TRUTH:
        if name_part in f.name:
            return json.loads(f.read_text())
    raise AssertionError(name_part)


@pytest.mark.parametrize(
    "name,median_max,p95_max",
    [
        ("gw_signal_search", 5.0, 45.0),
        ("gitlet_vcs", 5.0, 20.0),
        ("lantern_cove", 1.0, 1.0),
    ],
)
def test_aligned_times_against_generator_truth(sample_db, name, median_max, p95_max, record_property):
    t = [json.loads(f.read_text()) for f in TRUTH if name in f.name and "legacy" not in f.name][0]
    key = q(sample_db, "SELECT run_key FROM runs WHERE run_id = ? AND task_id = ?", [t["run_id"], t["task_id"]])[0][0]
    got = dict(
        q(
            sample_db,
            "SELECT \"offset\", min(t) FROM events WHERE run_key = ? AND source = 'agent_output.txt' GROUP BY 1",
            [key],
        )
    )
    errs = sorted(abs(got[o] - true_t) for o, true_t in t["agent_output"]["line_epochs"] if got.get(o) is not None)
    assert len(errs) >= 0.9 * len(t["agent_output"]["line_epochs"])
    med, p95 = statistics.median(errs), errs[int(0.95 * len(errs)) - 1]
    record_property("median_s", med)
    record_property("p95_s", p95)
    print(f"{name}: aligned {len(errs)} lines, median error {med:.1f} s, p95 {p95:.1f} s")
    assert med <= median_max and p95 <= p95_max


def test_sforge_scanner_agrees_on_best_and_counts(sample_db):
    scanner = pytest.importorskip("sforge.visualizer.scanner")
    from sforge.visualizer.server import _load_task_meta

    index = scanner.RunsIndex(SAMPLES / "runs", task_meta=_load_task_meta(SAMPLES / "tasks"))
    runs = index.list_runs()
    assert len(runs) == len(TRUTH)
    for r in runs:
        row = q(
            sample_db,
            "SELECT run_key, best_round, agent_submissions, auto_submissions, game_sessions "
            "FROM runs WHERE run_id = ? AND task_id = ?",
            [r.run_id, r.task],
        )
        assert row, f"{r.run_id}/{r.task} not recorded"
        key, best_round, n_agent, n_auto, n_game = row[0]
        kinds: dict[str, int] = {}
        for s in r.submissions:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        assert best_round == r.best_round, r.key
        assert n_agent == kinds.get("agent", 0), r.key
        assert n_auto == kinds.get("auto", 0), r.key
        assert n_game == kinds.get("game", 0), r.key
        # every round folder the scanner lists (an in-flight game session included), manual-N excluded
        ours_total = q(sample_db, "SELECT count(*) FROM submissions WHERE run_key = ? AND kind <> 'manual'", [key])[0][
            0
        ]
        assert ours_total == len(r.submissions), r.key


def test_best_so_far_matches_truth(sample_db):
    t = _truth("gw_signal_search")
    key = q(sample_db, "SELECT run_key FROM runs WHERE run_id = ?", [t["run_id"]])[0][0]
    news = q(
        sample_db,
        "SELECT count(*) FILTER (is_new_best), min(score) FILTER (is_new_best), max(best_score) "
        "FROM submissions WHERE run_key = ?",
        [key],
    )[0]
    assert news[0] == t["expected"]["new_bests"]
    assert news[1] == pytest.approx(t["expected"]["first_best_score"])
    assert news[2] == pytest.approx(t["expected"]["best_score"])


def test_sforge_submit_calls_precede_their_grading(sample_db):
    """Each sforge-submit tool call is anchored just before its round's report.json submitted_at."""
    late, n = q(
        sample_db,
        """SELECT count(*) FILTER (c.t > s.submitted_at), count(*)
        FROM events c JOIN events r ON r.run_key = c.run_key AND r.tool_use_id = c.tool_use_id AND r.kind = 'tool_result'
        JOIN submissions s ON s.run_key = r.run_key AND s.round = r.round
        WHERE c.kind = 'tool_call' AND c.source = 'agent_output.txt'""",
    )[0]
    assert n > 250
    assert late <= 0.05 * n
