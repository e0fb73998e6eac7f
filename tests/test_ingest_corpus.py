"""Every real transcript in ../shared/data/transcript-corpus ingests without error, with
counts checked against independent counting (plain json), and the schema migrates."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from edgetui.cli.main import main
from edgetui.store.schema import SCHEMA_VERSION, migrate


def _files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".txt"))


def test_every_corpus_file_ingests(corpus, tmp_path, capsys):
    db = tmp_path / "c.duckdb"
    files = _files(corpus)
    assert len(files) >= 17
    assert main(["--db", str(db), "ingest", "-q", *map(str, files)]) == 0
    out = capsys.readouterr()
    assert "could not record" not in out.err and "Traceback" not in out.err
    assert f"recorded {len(files)} run(s)" in out.out
    c = duckdb.connect(str(db), read_only=True)
    for f in files:
        from edgetui.parsers.transcript_identity import transcript_task_id

        key = f"local/{f.stem}/{transcript_task_id(f)}"
        lines = [l for l in f.read_bytes().splitlines() if l.strip()]
        non_json = 0
        tool_ids: set[str] = set()
        for l in lines:
            try:
                o = json.loads(l)
            except ValueError:
                non_json += 1
                continue
            msg = o.get("message") if isinstance(o, dict) else None
            if (
                isinstance(o, dict)
                and o.get("type") == "assistant"
                and isinstance(msg, dict)
                and isinstance(msg.get("content"), list)
            ):
                tool_ids |= {b["id"] for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
        got_err = c.execute("SELECT count(*) FROM events WHERE run_key = ? AND kind = 'parse_error'", [key]).fetchone()[
            0
        ]
        assert got_err == non_json, f.name
        # every line that holds an event is recorded at its own byte offset
        n_offsets = c.execute(
            'SELECT count(DISTINCT "offset") FROM events WHERE run_key = ? AND source = ?', [key, f.name]
        ).fetchone()[0]
        assert 0 < n_offsets <= len(lines), f.name
        if tool_ids and "/A/" in str(f):
            got = {
                r[0]
                for r in c.execute(
                    "SELECT DISTINCT tool_use_id FROM events WHERE run_key = ? AND kind = 'tool_call'", [key]
                ).fetchall()
            }
            assert got == tool_ids, f.name
        # every event has a time after alignment (recorded or interpolated)
        assert c.execute("SELECT count(*) FROM events WHERE run_key = ? AND t IS NULL", [key]).fetchone()[0] == 0, (
            f.name
        )


def test_migration_from_empty_and_refusal_of_newer(tmp_path, capsys):
    db = tmp_path / "m.duckdb"
    c = duckdb.connect(str(db))
    assert migrate(c) == 0
    assert migrate(c) == SCHEMA_VERSION
    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    c.close()
    assert main(["--db", str(db), "ingest", "-q", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "newer than this edgetui" in err and "Traceback" not in err


def test_a_folder_of_bare_transcripts_ingests_like_its_files(corpus, tmp_path, capsys):
    files = _files(corpus)
    by_folder, by_files = tmp_path / "folder.duckdb", tmp_path / "files.duckdb"
    assert main(["--db", str(by_folder), "ingest", "-q", str(corpus)]) == 0
    assert main(["--db", str(by_files), "ingest", "-q", *map(str, files)]) == 0
    import duckdb

    c = duckdb.connect(str(by_folder))
    c.execute(f"ATTACH '{by_files}' AS f (READ_ONLY)")
    assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == len(files)
    for q in ("SELECT event_id FROM {p}events EXCEPT SELECT event_id FROM {o}events",):
        assert c.execute(q.format(p="", o="f.")).fetchall() == [] and c.execute(q.format(p="f.", o="")).fetchall() == []
    # a folder with neither run directories nor transcripts: a clear one-line refusal, exit 1
    empty = tmp_path / "nothing"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "notes.md").write_text("# not a transcript\n")
    assert main(["--db", str(tmp_path / "e.duckdb"), "ingest", "-q", str(empty)]) == 1
    assert "no agent transcript" in capsys.readouterr().err


def test_cut_off_streams_interrupted_and_failed_results_are_flagged(corpus, tmp_path, capsys):
    """Real files: a stream without its result record is flagged incomplete (its segment ends with
    the reason), an init-only file has no turns, and a result with is_error shows an error flag;
    the replay header says the same."""
    import json as _json

    from edgetui.store import queries as store
    from edgetui.views.widgets.header import header_text

    names = [
        "trackgentic-no-result-event.jsonl",
        "trackgentic-init-only-no-turns.jsonl",
        "archistrator-failure-scrubbed.jsonl",
        "llmtaste-claude-resumed-turn4-result-key-order.jsonl",
    ]
    files = [corpus / "A" / n for n in names]
    db = tmp_path / "flags.duckdb"
    assert main(["--db", str(db), "ingest", "-q", *map(str, files)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    flags = {r["run_id"]: r["flags"].split() for r in _json.loads(capsys.readouterr().out)}
    assert "incomplete" in flags["trackgentic-no-result-event"]
    assert {"incomplete", "no-turns"} <= set(flags["trackgentic-init-only-no-turns"])
    assert "error" in flags["archistrator-failure-scrubbed"]
    assert not {"incomplete", "error", "no-turns"} & set(flags["llmtaste-claude-resumed-turn4-result-key-order"])
    c = duckdb.connect(str(db), read_only=True)
    try:
        reason = c.execute(
            "SELECT data->>'$.reason' FROM events WHERE kind = 'segment_end' AND run_key LIKE "
            "'%trackgentic-no-result-event%'"
        ).fetchall()
        key = c.execute("SELECT run_key FROM runs WHERE run_id = 'trackgentic-no-result-event'").fetchone()[0]
        head = store.run_header(c, key)
    finally:
        c.close()
    assert reason and reason[-1][0] in ("no_result", "ended_after_tool_call")
    assert "incomplete" in header_text(head, 160).plain


def test_success_after_an_interrupted_turn_is_flagged_interrupted(tmp_path, capsys):
    """claude-code#40432: a result "success" with no result text and a tool call never answered."""
    import json as _json

    lines = [
        {"type": "system", "subtype": "init", "session_id": "s"},
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "role": "assistant",
                "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "sleep 999"}}],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "num_turns": 1,
            "stop_reason": "tool_use",
            "session_id": "s",
        },
    ]
    f = tmp_path / "interrupted.jsonl"
    f.write_text("".join(_json.dumps(x) + "\n" for x in lines))
    db = tmp_path / "i.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    row = _json.loads(capsys.readouterr().out)[0]
    assert "interrupted" in row["flags"].split() and "incomplete" not in row["flags"].split()


def test_a_stream_that_grows_after_an_ingest_is_no_longer_incomplete(tmp_path, capsys):
    import json as _json

    f = tmp_path / "growing.jsonl"
    f.write_text(_json.dumps({"type": "system", "subtype": "init", "session_id": "s"}) + "\n")
    db = tmp_path / "g.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    with open(f, "a") as fh:
        fh.write(
            _json.dumps(
                {
                    "type": "assistant",
                    "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
                }
            )
            + "\n"
        )
        fh.write(_json.dumps({"type": "result", "subtype": "success", "result": "ok", "num_turns": 1}) + "\n")
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    flags = _json.loads(capsys.readouterr().out)[0]["flags"].split()
    assert "incomplete" not in flags
