"""Records repeated across runs are counted once (issue 12, item 4; ccusage#1762).

After a resume, Claude Code can start a new session file Y with copies of an earlier file X's
records (the same uuids and message ids under a new session id). Recorded into one database,
tokens, dollars, messages and tool calls count them once, in the run ranked first (first
timestamp, then path), whatever the order of the ingests (edgetui/store/repeated_records.py).

The inputs are built at test time from a real Claude Code session file of the shared corpus
(``B/willitrain-windows-2.1.22.jsonl``, 714 records with usage): X is the file as it is; Y is its
first 300 records copied under a new session id, then the rest of X's records as Y's own (new
uuids and message ids, a day later) — the shape ccusage#1762 reports.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from edgetui.cli.main import main
from edgetui.store.database import open_db

from conftest import CORPUS, need_shared_data

REAL = CORPUS / "B" / "willitrain-windows-2.1.22.jsonl"
COPIED = 300  # records of X copied at the head of Y
TOTALS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "n_messages", "n_tool_calls")


@pytest.fixture(autouse=True)
def _real_transcript() -> Path:
    """Every test here reads REAL (skips locally without it, fails under CI=true: conftest.need_shared_data)."""
    return need_shared_data(REAL)


def _shift(ts: str, days: int) -> str:
    t = datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(days=days)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _rewrite(line: bytes, *, session: str, own: bool, restamp: bool) -> bytes:
    o = json.loads(line)
    if "sessionId" in o:
        o["sessionId"] = session
    if own:  # Y's own records: new identities
        for k in ("uuid", "parentUuid"):
            if isinstance(o.get(k), str):
                o[k] += "-y"
        if isinstance(o.get("message"), dict) and isinstance(o["message"].get("id"), str):
            o["message"]["id"] += "-y"
    if (own or restamp) and isinstance(o.get("timestamp"), str):
        o["timestamp"] = _shift(o["timestamp"], 1)
    return json.dumps(o, separators=(",", ":")).encode() + b"\n"


def _files(tmp_path: Path, restamp: bool) -> dict[str, Path]:
    """``x`` (the real file), ``y`` (the resumed file: copies of X's head, then its own records) and
    ``y_own`` (Y's own records alone: the reference for what Y adds). Y's path sorts before X's, so
    only the first timestamp makes X the owner (when the copies are re-stamped)."""
    lines = [ln for ln in REAL.read_bytes().splitlines(keepends=True) if ln.strip()]
    d = tmp_path / ("restamped" if restamp else "verbatim")
    d.mkdir()
    x, y, y_own = d / "b-original.jsonl", d / "a-resumed.jsonl", d / "y-own-records.jsonl"
    x.write_bytes(b"".join(lines))
    copied = [_rewrite(ln, session="resumed-session", own=False, restamp=restamp) for ln in lines[:COPIED]]
    own = [_rewrite(ln, session="resumed-session", own=True, restamp=restamp) for ln in lines[COPIED:]]
    y.write_bytes(b"".join(copied + own))
    y_own.write_bytes(b"".join(own))
    return {"x": x, "y": y, "y_own": y_own}


def _runs(db: Path) -> dict[str, dict]:
    c = open_db(db, read_only=True)
    try:
        cols = ", ".join(("run_dir", *TOTALS, "cost_usd", "n_repeated", "repeated_from", "run_key"))
        rows = c.execute(f"SELECT {cols} FROM runs").fetchall()
    finally:
        c.close()
    names = ("run_dir", *TOTALS, "cost_usd", "n_repeated", "repeated_from", "run_key")
    return {Path(r[0]).name: dict(zip(names, r)) for r in rows}


def _ingest(db: Path, *paths: Path) -> dict[str, dict]:
    for p in paths:  # one ingest per file: the second one meets the first one's records
        assert main(["--db", str(db), "ingest", "-q", str(p)]) == 0
    return _runs(db)


def _alone(tmp_path: Path, p: Path) -> dict:
    return _ingest(tmp_path / f"alone-{p.parent.name}-{p.stem}.duckdb", p)[p.name]


@pytest.mark.parametrize("restamp", [True, False], ids=["copies-restamped", "copies-verbatim"])
def test_records_repeated_in_a_resumed_file_are_counted_once_whatever_the_ingest_order(tmp_path, restamp, capsys):
    f = _files(tmp_path, restamp)
    xy = _ingest(tmp_path / "xy.duckdb", f["x"], f["y"])
    yx = _ingest(tmp_path / "yx.duckdb", f["y"], f["x"])
    # the same totals in both orders (every column, both runs)
    assert xy == yx
    x_alone, y_own = _alone(tmp_path, f["x"]), _alone(tmp_path, f["y_own"])
    assert x_alone["input_tokens"] and x_alone["n_messages"] and x_alone["n_tool_calls"]
    # across the two runs each record is counted once: X's records plus Y's own, never X's twice
    for col in (*TOTALS,):
        assert xy["b-original.jsonl"][col] + xy["a-resumed.jsonl"][col] == x_alone[col] + y_own[col], col
    assert xy["b-original.jsonl"]["cost_usd"] + xy["a-resumed.jsonl"]["cost_usd"] == pytest.approx(
        x_alone["cost_usd"] + y_own["cost_usd"]
    )
    x, y = xy["b-original.jsonl"], xy["a-resumed.jsonl"]
    if restamp:  # X's first record is a day earlier: X owns the shared records, Y counts only its own
        owner, other = x, y
        assert {c: x[c] for c in TOTALS} == {c: x_alone[c] for c in TOTALS}
        assert {c: y[c] for c in TOTALS} == {c: y_own[c] for c in TOTALS}
    else:  # the copies keep X's times: a tie on the first timestamp, the path decides (a-… < b-…)
        owner, other = y, x
        assert {c: x[c] for c in TOTALS} != {c: x_alone[c] for c in TOTALS}
    assert other["n_repeated"] > 0 and other["repeated_from"] == owner["run_key"]
    assert not owner["n_repeated"] and owner["repeated_from"] is None
    # edgetui runs flags the run that leaves them out, and only that one
    capsys.readouterr()
    assert main(["--db", str(tmp_path / "yx.duckdb"), "runs", "--format", "json"]) == 0
    flags = {r["run_id"]: r["flags"].split() for r in json.loads(capsys.readouterr().out)}
    other_id = "b-original" if other is x else "a-resumed"
    owner_id = "a-resumed" if other is x else "b-original"
    assert f"{other['n_repeated']}-repeated" in flags[other_id]
    assert not any(fl.endswith("-repeated") for fl in flags[owner_id])
    assert "no-turns" not in flags[other_id]


def test_one_ingest_of_both_files_gives_the_same_totals_as_two(tmp_path):
    f = _files(tmp_path, restamp=True)
    two = _ingest(tmp_path / "two.duckdb", f["y"], f["x"])
    db = tmp_path / "one.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f["y"]), str(f["x"])]) == 0
    one = _runs(db)
    assert one == two
    y_own = _alone(tmp_path, f["y_own"])  # Y, recorded first in that ingest, counts only its own records
    assert {c: one["a-resumed.jsonl"][c] for c in TOTALS} == {c: y_own[c] for c in TOTALS}


def test_replay_header_tokens_leave_out_the_repeated_records(tmp_path):
    """The replay header's token figures agree with the runs row (both leave the copies out)."""
    from edgetui.store import queries as store

    f = _files(tmp_path, restamp=True)
    db = tmp_path / "h.duckdb"
    runs = _ingest(db, f["y"], f["x"])
    c = open_db(db, read_only=True)
    try:
        for r in runs.values():
            head = store.run_header(c, r["run_key"])
            assert (head["tok_input"], head["tok_output"], head["tok_cache_read"], head["tok_cache_write"]) == (
                r["input_tokens"],
                r["output_tokens"],
                r["cache_read_tokens"],
                r["cache_write_tokens"],
            )
    finally:
        c.close()


def test_forgetting_the_owner_gives_the_records_back_to_the_other_run(tmp_path):
    f = _files(tmp_path, restamp=True)
    db = tmp_path / "f.duckdb"
    runs = _ingest(db, f["x"], f["y"])
    assert runs["a-resumed.jsonl"]["n_repeated"] > 0
    assert main(["--db", str(db), "forget", "--yes", "b-original"]) == 0
    y = _runs(db)["a-resumed.jsonl"]
    y_alone = _alone(tmp_path, f["y"])
    assert {c: y[c] for c in TOTALS} == {c: y_alone[c] for c in TOTALS}
    assert not y["n_repeated"] and y["repeated_from"] is None


def test_a_database_recorded_before_is_recounted_by_its_migration(tmp_path):
    """A file of schema 5 (no record_keys; each file counted on its own, as edgetui wrote it then)
    is recounted when opened: the same totals as a fresh ingest."""
    import duckdb

    f = _files(tmp_path, restamp=True)
    db = tmp_path / "old.duckdb"
    fresh = _ingest(db, f["x"], f["y"])
    y_alone = _alone(tmp_path, f["y"])
    c = duckdb.connect(str(db))
    c.execute("DROP TABLE record_keys")
    c.execute("ALTER TABLE runs DROP COLUMN n_repeated")
    c.execute("ALTER TABLE runs DROP COLUMN repeated_from")
    sets = ", ".join(f"{col} = ?" for col in TOTALS)
    c.execute(
        f"UPDATE runs SET {sets} WHERE run_key = ?",
        [*(y_alone[col] for col in TOTALS), fresh["a-resumed.jsonl"]["run_key"]],
    )
    c.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    c.close()
    open_db(db).close()  # migrates
    assert _runs(db) == fresh
