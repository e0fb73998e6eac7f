"""Annotations (add, edit, delete, the queue of unlabelled moments, while the app holds the
database) and `edgetui report` (md / json / html); a JSON report's annotations come back on a
fresh database built by ingesting the same run again; export carries annotations and moments."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800"
TASKS = ROOT / "sample_runs" / "tasks"
KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"


def _q(db: Path, sql: str, params=None):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, params or []).fetchall()
    finally:
        c.close()


@pytest.fixture()
def gw_db(tmp_path) -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    shutil.copytree(RUN, runs / RUN.name)
    db = tmp_path / "a.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(runs)]) == 0
    return db, runs


def test_annotate_edit_delete_and_the_queue(gw_db, capsys):
    db, _ = gw_db
    assert main(["--db", str(db), "moments", "opus48"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "annotations", "--queue", "--format", "json"]) == 0
    queue = json.loads(capsys.readouterr().out)
    assert [q["round"] for q in queue] == ["agent-52", "agent-85", "agent-167"]
    assert (
        main(
            [
                "--db",
                str(db),
                "annotate",
                "opus48",
                "--round",
                "agent-85",
                "--label",
                "reframe",
                "--text",
                "coherent statistic",
            ]
        )
        == 0
    )
    aid = capsys.readouterr().out.split("annotation ")[1].split()[0]
    # a moment's annotation is on its round's judge-result event
    ((eid, rnd, label, text),) = _q(db, "SELECT event_id, round, label, text FROM annotations")
    assert _q(db, "SELECT kind, round FROM events WHERE event_id = ?", [eid]) == [("judge_result", "agent-85")]
    assert (rnd, label, text) == ("agent-85", "reframe", "coherent statistic")
    assert main(["--db", str(db), "annotations", "--queue", "--format", "json"]) == 0
    assert [q["round"] for q in json.loads(capsys.readouterr().out)] == ["agent-52", "agent-167"]
    assert main(["--db", str(db), "annotate", "--edit", aid, "--label", "bug fix"]) == 0
    assert _q(db, "SELECT label, text FROM annotations") == [("bug fix", "coherent statistic")]
    # an event's annotation: any event, free text only
    ev = _q(db, f"SELECT event_id FROM events WHERE run_key = '{KEY}' AND kind = 'thinking' LIMIT 1")[0][0]
    assert main(["--db", str(db), "annotate", "opus48", "--event", ev, "--text", "interesting"]) == 0
    assert main(["--db", str(db), "annotate", "opus48", "--round", "agent-999", "--label", "tuning"]) == 2
    assert "no graded round 'agent-999'" in capsys.readouterr().err
    assert main(["--db", str(db), "annotate", "opus48", "--round", "agent-52", "--label", "<script>"]) == 2
    assert main(["--db", str(db), "annotate", "--delete", aid]) == 0
    assert main(["--db", str(db), "annotate", "--delete", aid]) == 1
    assert _q(db, "SELECT count(*) FROM annotations")[0][0] == 1


def test_annotating_works_while_another_process_holds_the_database(gw_db, capsys):
    db, _ = gw_db
    code = (
        "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert main(["--db", str(db), "annotate", "opus48", "--round", "agent-167", "--label", "reward hack?"]) == 0
        aid = capsys.readouterr().out.split("annotation ")[1].split()[0]
        # the same annotation again, through the holder: stored once, said
        assert main(["--db", str(db), "annotate", "opus48", "--round", "agent-167", "--label", "reward hack?"]) == 0
        out = capsys.readouterr().out
        assert f"annotation {aid} on agent-167 (already)" in out
        assert main(["--db", str(db), "annotate", "--edit", aid, "--text", "check the scorer"]) == 0
    finally:
        p.kill()
        p.wait()
    assert _q(db, "SELECT round, label, text FROM annotations") == [("agent-167", "reward hack?", "check the scorer")]


def test_the_same_annotation_twice_is_stored_once(gw_db, capsys):
    db, _ = gw_db
    add = ["--db", str(db), "annotate", "opus48", "--round", "agent-85", "--label", "reframe", "--text", "coherent"]
    assert main(add) == 0
    first = capsys.readouterr().out
    aid = first.split("annotation ")[1].split()[0]
    assert "(already)" not in first
    assert main(add) == 0
    assert capsys.readouterr().out.strip().endswith(f"annotation {aid} on agent-85 (already)")
    assert main([*add[:-1], " coherent "]) == 0  # (spaces at the ends aside: the same note)
    assert "(already)" in capsys.readouterr().out
    assert _q(db, "SELECT count(*) FROM annotations")[0][0] == 1
    # another text, or another label, on the same event is another annotation
    assert main([*add[:-1], "coherent network statistic"]) == 0
    assert main([*add[:-3], "tuning", "--text", "coherent"]) == 0
    assert "(already)" not in capsys.readouterr().out
    assert _q(db, "SELECT count(*) FROM annotations")[0][0] == 3


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs, self.tags = [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k in ("src", "href", "action", "data", "poster") or (k == "xmlns" and tag != "svg"):
                self.refs.append((tag, k, v))


def test_reports_and_annotations_survive_a_fresh_ingest_import_and_export(gw_db, tmp_path, capsys):
    db, runs = gw_db
    assert main(["--db", str(db), "annotate", "opus48", "--round", "agent-85", "--label", "reframe"]) == 0
    ev = _q(db, f"SELECT event_id FROM events WHERE run_key = '{KEY}' AND kind = 'agent_message' LIMIT 1 OFFSET 7")[0][
        0
    ]
    assert main(["--db", str(db), "annotate", "opus48", "--event", ev, "--text", "the plan"]) == 0
    before = _q(db, "SELECT annotation_id, event_id, round, label, text FROM annotations ORDER BY 1")
    capsys.readouterr()
    # JSON: a moments list with rounds and elapsed seconds, and the annotations
    out = tmp_path / "r.json"
    assert main(["--db", str(db), "report", "opus48", "--format", "json", "-o", str(out)]) == 0
    rep = json.loads(out.read_text())
    subs = dict(_q(db, f"SELECT round, elapsed_s FROM submissions WHERE run_key = '{KEY}'"))
    assert [m["round"] for m in rep["moments"]] == ["agent-52", "agent-85", "agent-167"]
    assert all(m["elapsed_s"] == pytest.approx(subs[m["round"]]) for m in rep["moments"])
    assert len(rep["annotations"]) == 2 and rep["moments"][1]["why"]["prev_round"]
    # Markdown: readable on its own, the chart as text with the three moments on it
    assert main(["--db", str(db), "report", "opus48"]) == 0
    md = capsys.readouterr().out
    chart = md.split("```")[1]
    plotted = "\n".join(ln for ln in chart.splitlines() if "│" in ln)  # (the legend line names ✦ too)
    assert plotted.count("✦") == 3 and "42.8" in chart and "67" in chart
    assert "### agent-85" in md and "**reframe**" in md and "the plan" in md
    # HTML: one file, nothing it would fetch (no src/href/link/script), the chart inline
    html = tmp_path / "r.html"
    assert main(["--db", str(db), "report", "opus48", "--format", "html", "-o", str(html)]) == 0
    p = _Refs()
    p.feed(html.read_text())
    assert p.refs == [] and "script" not in p.tags and "link" not in p.tags and "svg" in p.tags
    assert "default-src 'none'" in html.read_text() and html.read_text().count("✦") >= 3
    # export carries the annotations and the (built) moments
    assert main(["--db", str(db), "moments", "opus48"]) == 0
    assert main(["--db", str(db), "export", str(tmp_path / "exp")]) == 0
    c = duckdb.connect()
    assert c.execute(f"SELECT count(*) FROM '{tmp_path / 'exp' / 'annotations.parquet'}'").fetchone()[0] == 2
    assert c.execute(f"SELECT count(*) FROM '{tmp_path / 'exp' / 'moments.parquet'}'").fetchone()[0] > 0
    c.close()
    # a fresh database from the same run: import finds every annotation on the same events, twice idempotent
    fresh = tmp_path / "fresh.duckdb"
    assert main(["--db", str(fresh), "ingest", "-q", "--tasks-dir", str(TASKS), str(runs)]) == 0
    capsys.readouterr()
    assert main(["--db", str(fresh), "import", str(out)]) == 0
    assert "2 annotations restored" in capsys.readouterr().out
    assert main(["--db", str(fresh), "import", str(out)]) == 0
    assert "0 annotations restored, 2 already there, 0 not matched" in capsys.readouterr().out
    assert _q(fresh, "SELECT annotation_id, event_id, round, label, text FROM annotations ORDER BY 1") == before
    # one that cannot be matched is listed, and the status says so
    rep["annotations"].append({**rep["annotations"][0], "annotation_id": "0" * 16, "event_id": "nope"})
    out.write_text(json.dumps(rep))
    assert main(["--db", str(fresh), "import", str(out)]) == 1
    text = capsys.readouterr().out
    assert "1 not matched" in text and "no event 'nope'" in text
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["--db", str(fresh), "import", str(tmp_path / "bad.json")]) == 2
    assert "not JSON (line 1" in capsys.readouterr().err
