"""Transcript shapes recorded wrong before issue 33 (items 1-6): Claude ``api_error`` records, Codex
rollouts ending while commands run, unified exec, ``codex exec --json`` with several threads,
code-mode cells, rollbacks, OpenCode's ``invalid`` tool, blank text blocks, the detail header.

The fixtures in ``tests/fixtures/transcript_shapes/`` are hand-made from the shapes the issue
describes (the README there says where each shape comes from); expectations are written from the
fixture lines here, not from the parsers. Each case is also checked on the real transcripts of
``../shared/data/transcript-corpus`` where the shape occurs there (read in place, never copied).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import duckdb
import pytest
from rich.console import Console

from conftest import CORPUS, shared_data_reason
from edgetui.store import queries as store
from edgetui.cli.main import main
from edgetui.parsers.transcript_identity import transcript_task_id
from edgetui.parsers.base import END_OF_FILE_SUB, iter_lines
from edgetui.parsers.claude_session import ClaudeSessionParser
from edgetui.parsers.codex import CodexJsonParser, CodexRolloutParser
from edgetui.parsers.opencode import OpenCodeParser
from edgetui.views.widgets.detail import render_detail

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcript_shapes"


def parse(parser_cls, data: bytes, source: str = "src"):
    parser = parser_cls(source, "gen")
    events = []
    for ln in iter_lines(io.BytesIO(data)):
        events += parser.feed(ln.data, ln.offset)
    return events + parser.finish()


def fixture(name: str) -> Path:
    return FIXTURES / name


def real(folder: str, name: str) -> Path:
    path = CORPUS / folder / name
    if not path.is_file():
        pytest.skip(shared_data_reason(path))
    return path


def records(path: Path) -> list[tuple[int, dict]]:
    out, off = [], 0
    for piece in path.read_bytes().split(b"\n"):
        if piece.strip():
            out.append((off, json.loads(piece)))
        off += len(piece) + 1
    return out


def ends_after_outputs(path: Path, end_type: str) -> bytes:
    """The file's own lines with each ``end_type`` event_msg moved to just after its call's output
    (the order in which the end merely follows the output that gave the result)."""
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    ends = {}
    for ln in lines:
        p = json.loads(ln)["payload"]
        if p.get("type") == end_type:
            ends[p["call_id"]] = ln
    out = []
    for ln in lines:
        p = json.loads(ln)["payload"]
        if p.get("type") == end_type:
            continue
        out.append(ln)
        if p.get("type") in ("function_call_output", "custom_tool_call_output") and p["call_id"] in ends:
            out.append(ends[p["call_id"]])
    return b"\n".join(out) + b"\n"


def of(events, kind: str, tool_use_id=None):
    return [e for e in events if e.kind == kind and (tool_use_id is None or e.tool_use_id == tool_use_id)]


def ingest_runs(tmp_path: Path, capsys, *files: Path) -> tuple[Path, dict[str, dict]]:
    db = tmp_path / "t.duckdb"
    assert main(["--db", str(db), "ingest", "-q", *map(str, files)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    return db, {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}


def run_key(path: Path) -> str:
    return f"local/{path.stem}/{transcript_task_id(path)}"


# ---------------------------------------------------------------- 1. Claude api_error records


def test_claude_api_error_records_are_errors_with_status_message_and_attempt():
    path = fixture("claude_session_api_errors_only.jsonl")
    want = [
        (o["error"].get("status"), o["retryAttempt"], o["maxRetries"])
        for _, o in records(path)
        if o["type"] == "system"
    ]
    events = parse(ClaudeSessionParser, path.read_bytes())
    errs = [e for e in of(events, "system") if (e.data or {}).get("subtype") == "api_error"]
    assert [(e.data["status"], e.data["attempt"], e.data["max_retries"]) for e in errs] == want
    assert all(e.is_error and e.level == "error" for e in errs)
    assert errs[0].summary == "API error 1/10 (status 529): 529 overloaded_error: Overloaded"
    assert errs[2].summary == "API error 3/10: Connection error."  # no status in that record
    end = events[-1]
    assert (end.kind, end.sub, end.data["reason"], end.data["api_errors"]) == (
        "segment_end",
        END_OF_FILE_SUB,
        "api_errors_only",
        3,
    )


def test_a_session_answering_only_with_api_errors_is_flagged_in_runs_and_header(tmp_path, capsys):
    only = fixture("claude_session_api_errors_only.jsonl")
    answered = fixture("claude_session_api_error_then_answer.jsonl")
    db, rows = ingest_runs(tmp_path, capsys, only, answered)
    assert "api-errors-only" in rows[only.stem]["flags"].split()
    assert "api-errors-only" not in rows[answered.stem]["flags"].split()
    with duckdb.connect(str(db), read_only=True) as conn:
        assert "api-errors-only" in store.run_header(conn, run_key(only))["transcript_flags"]
        assert store.run_header(conn, run_key(answered))["transcript_flags"] == []


def test_real_session_whose_only_answer_is_an_api_error_is_flagged(tmp_path, capsys):
    """``B/octora-…``: the only answer is a synthetic authentication error; ``B/willitrain-…``
    has one synthetic rate-limit message among real answers."""
    octora = real("B", "octora-2.1.107-vscode.jsonl")
    rain = real("B", "willitrain-windows-2.1.22.jsonl")
    _, rows = ingest_runs(tmp_path, capsys, octora, rain)
    assert "api-errors-only" in rows[octora.stem]["flags"].split()
    assert "api-errors-only" not in rows[rain.stem]["flags"].split()


# ---------------------------------------------------------------- 2. rollout ends while commands run


def test_an_exec_command_end_without_a_later_output_is_the_calls_result():
    path = fixture("codex_rollout_ends_while_running.jsonl")
    ends = {
        o["payload"]["call_id"]: o["payload"]
        for _, o in records(path)
        if o["payload"].get("type") == "exec_command_end"
    }
    events = parse(CodexRolloutParser, path.read_bytes())
    for cid, end in ends.items():
        (res,) = of(events, "tool_result", cid)
        assert res.data["exit_code"] == end["exit_code"] and res.data["content"] == end["aggregated_output"]
        assert res.is_error is (end["exit_code"] != 0)
        assert res.sub == END_OF_FILE_SUB  # said at the end of a finished file only
    fail = of(events, "tool_result", "call_test")[0]
    assert fail.level == "error" and fail.summary == "exec_command → exit 1: F."


def test_the_real_beam_rollout_cut_between_an_end_and_its_output_keeps_the_result():
    """``C/beam-…`` read up to the ``exec_command_end`` of exit 128 whose output comes on the next
    line: the file then ends while the command's result is known only from its end."""
    path = real("C", "beam-rollout-0.122.0-alpha.13.jsonl")
    recs = records(path)
    at = next(
        i
        for i, (_, o) in enumerate(recs)
        if o["payload"].get("type") == "exec_command_end" and o["payload"]["exit_code"] == 128
    )
    end = recs[at][1]["payload"]
    cut = recs[at + 1][0]  # the bytes up to its output's line
    events = parse(CodexRolloutParser, path.read_bytes()[:cut])
    (res,) = of(events, "tool_result", end["call_id"])
    assert res.data["exit_code"] == 128 and res.is_error and res.data["content"] == end["aggregated_output"]


# ---------------------------------------------------------------- 3. unified exec


def test_unified_exec_output_and_later_end_make_one_result_with_the_final_exit_code():
    path = fixture("codex_rollout_unified_exec.jsonl")
    recs = records(path)
    ends = {o["payload"]["call_id"]: o["payload"] for _, o in recs if o["payload"].get("type") == "exec_command_end"}
    events = parse(CodexRolloutParser, path.read_bytes())
    # one result per command, none of them a bare exec_command_end row
    assert not [e for e in of(events, "system") if (e.data or {}).get("event") == "exec_command_end"]
    (build,) = of(events, "tool_result", "call_build")
    assert build.data["exit_code"] == ends["call_build"]["exit_code"] == 1 and build.is_error
    assert build.data["content"] == ends["call_build"]["aggregated_output"]
    assert build.data["first_output"] == "Building...\n" and build.data["session_id"] == "42"
    assert build.summary.startswith("exec_command → exit 1")
    (ls,) = of(events, "tool_result", "call_ls")  # the end merely follows its output: still one row
    assert ls.data["exit_code"] == 0 and not ls.is_error
    (serve,) = of(events, "tool_result", "call_serve")  # still running when the file ends
    assert serve.data["running"] is True and serve.sub == END_OF_FILE_SUB and serve.data.get("exit_code") is None
    assert serve.summary == "exec_command → running (session 44): listening on :8080"


def test_real_beam_rollout_has_one_result_row_per_command():
    """``C/beam-…`` as written (each end before its output), and its own lines with each
    ``exec_command_end`` moved after its output (the order where the end merely follows)."""
    path = real("C", "beam-rollout-0.122.0-alpha.13.jsonl")
    recs = records(path)
    outs = [o["payload"]["call_id"] for _, o in recs if o["payload"].get("type") == "function_call_output"]
    codes = {
        o["payload"]["call_id"]: o["payload"]["exit_code"]
        for _, o in recs
        if o["payload"].get("type") == "exec_command_end"
    }
    for data in (path.read_bytes(), ends_after_outputs(path, "exec_command_end")):
        events = parse(CodexRolloutParser, data)
        results = of(events, "tool_result")
        assert [e.tool_use_id for e in results] == outs
        assert all(e.data["exit_code"] == codes[e.tool_use_id] for e in results if e.tool_use_id in codes)
        assert not [e for e in of(events, "system") if (e.data or {}).get("event") == "exec_command_end"]


# ---------------------------------------------------------------- 4. exec --json, several threads


def test_exec_json_usage_is_cumulative_only_within_one_thread():
    path = fixture("codex_exec_json_two_threads.jsonl")
    turns, thread, prev = [], None, None
    for _, o in records(path):  # independent reading: cumulative within a thread id
        if o["type"] == "thread.started":
            if o["thread_id"] != thread:
                thread, prev = o["thread_id"], None
        elif o["type"] == "turn.completed":
            u = o["usage"]
            turns.append(u["output_tokens"] - (prev["output_tokens"] if prev else 0))
            prev = u
    events = parse(CodexJsonParser, path.read_bytes())
    usage = [e.usage.output_tokens for e in of(events, "token_usage")]
    assert usage == turns == [300, 400, 250]
    assert [e.data["cumulative"] for e in of(events, "token_usage")] == [None, None, True]


def test_real_exec_json_runs_appended_count_as_their_parts():
    a = real("C", "llmtaste-exec-json-turn2-todo-filechange-cmd.jsonl").read_bytes()
    b = real("C", "llmtaste-exec-json-resume-minimal.jsonl").read_bytes()
    for first, second in ((a, b), (b, a)):
        alone = sum(
            e.usage.output_tokens for x in (first, second) for e in of(parse(CodexJsonParser, x), "token_usage")
        )
        both = sum(e.usage.output_tokens for e in of(parse(CodexJsonParser, first + second), "token_usage"))
        assert both == alone


# ---------------------------------------------------------------- 5. code mode, patch ends


def test_code_mode_cells_are_summarised_by_their_output():
    events = parse(CodexRolloutParser, fixture("codex_rollout_code_mode.jsonl").read_bytes())
    res = {e.tool_use_id: e for e in of(events, "tool_result")}
    assert res["call_c1"].summary == "exec →: 12 passed in 1.10s"
    assert res["call_c2"].summary == "exec →: $ ls"  # the output as a list of content items
    assert res["call_c3"].summary == "exec → running (cell 3): starting e2e suite"
    assert res["call_c3"].data["cell_id"] == "3" and not res["call_c3"].is_error
    assert res["call_c4"].summary.startswith("exec → failed: Script error: SyntaxError")
    assert res["call_c4"].is_error and res["call_c4"].data["cell_state"] == "failed"
    assert not [e for e in events if "Script " in e.summary.split(":")[0] or "exit None" in e.summary]


def test_patch_apply_end_without_exit_code_is_summarised_by_success():
    events = parse(CodexRolloutParser, fixture("codex_rollout_code_mode.jsonl").read_bytes())
    assert len(of(events, "tool_result", "call_p1")) == 1  # the end after its output: a copy
    assert not [e for e in of(events, "system") if (e.data or {}).get("event") == "patch_apply_end"]
    (p2,) = of(events, "tool_result", "call_p2")  # the end is the result: its output never came
    assert p2.is_error and p2.data["success"] is False and "exit_code" not in p2.data
    assert p2.summary == "apply_patch → failed: Failed to find expected lines in src/gone.py"


def test_real_scout_rollout_patches_show_no_exit_none():
    """``C/scout-…`` (0.142): its ``patch_apply_end`` records have ``success`` and no ``exit_code``;
    as written (each before its output) and moved after their outputs."""
    path = real("C", "scout-rollout-0.142.4-tui.jsonl")
    for data in (path.read_bytes(), ends_after_outputs(path, "patch_apply_end")):
        events = parse(CodexRolloutParser, data)
        patches = [e for e in of(events, "tool_result") if e.tool_name == "apply_patch"]
        assert len(patches) == 2 and all(e.data["exit_code"] == 0 and not e.is_error for e in patches)
        assert not [e for e in events if "exit None" in e.summary]
        assert not [e for e in of(events, "system") if (e.data or {}).get("event") == "patch_apply_end"]


# ---------------------------------------------------------------- 6. smaller shapes


def test_thread_rolled_back_shows_num_turns_and_the_turns_it_undid():
    path = fixture("codex_rollout_rolled_back.jsonl")
    recs = records(path)
    at = next(i for i, (_, o) in enumerate(recs) if o["payload"].get("type") == "thread_rolled_back")
    n = recs[at][1]["payload"]["num_turns"]
    users = [(off, o["payload"]["content"][0]["text"]) for off, o in recs[:at] if o["payload"].get("role") == "user"]
    events = parse(CodexRolloutParser, path.read_bytes())
    (rb,) = [e for e in of(events, "system") if (e.data or {}).get("event") == "thread_rolled_back"]
    assert rb.data["num_turns"] == n == 2 and rb.level == "warning"
    assert [(t["offset"], t["text"]) for t in rb.data["undone_turns"]] == users[-n:]
    assert rb.summary == "thread rolled back 2 turns: undid “now delete the tests”, “and push it”"


def test_the_turns_a_rollback_undid_are_marked_on_their_rows(tmp_path, capsys):
    path = fixture("codex_rollout_rolled_back.jsonl")
    recs = records(path)
    at = next(off for off, o in recs if o["payload"].get("type") == "thread_rolled_back")
    users = [off for off, o in recs if o["payload"].get("role") == "user" and off < at]
    first = users[-2]  # num_turns 2: the last two user turns before the rollback
    want = {off for off, o in recs if first <= off < at}
    db, _ = ingest_runs(tmp_path, capsys, path)
    assert main(["--db", str(db), "ingest", "-q", "--full", str(path)]) == 0  # marking twice changes nothing
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            """SELECT "offset", summary, data->>'$.rolled_back' FROM events WHERE run_key = ?""", [run_key(path)]
        ).fetchall()
    marked = {off for off, _, rb in rows if rb is not None}
    assert marked == want and {int(rb) for _, _, rb in rows if rb is not None} == {at}
    assert all(summ.startswith("↶ ") and not summ.startswith("↶ ↶") for off, summ, _ in rows if off in marked)
    assert not [summ for off, summ, _ in rows if off not in marked and summ.startswith("↶")]


def test_opencode_call_to_the_invalid_tool_is_an_error():
    events = parse(OpenCodeParser, fixture("opencode_invalid_tool.jsonl").read_bytes())
    (res,) = of(events, "tool_result")
    assert res.tool_name == "invalid" and res.is_error and res.level == "error"
    assert res.data["invalid_tool"] == "Write"
    assert of(events, "tool_call")[0].summary == "invalid: model called unavailable tool Write"
    assert res.summary.startswith("invalid → error: unavailable tool Write: The arguments provided")


def test_whitespace_only_assistant_text_makes_no_row():
    path = fixture("claude_session_api_error_then_answer.jsonl")
    events = parse(ClaudeSessionParser, path.read_bytes())
    texts = [b["text"] for _, o in records(path) if o["type"] == "assistant" for b in o["message"]["content"]]
    assert [e.data["text"] for e in of(events, "agent_message")] == [t for t in texts if t.strip()]
    blank_only = [
        off
        for off, o in records(path)
        if o["type"] == "assistant" and not any(b["text"].strip() for b in o["message"]["content"])
    ]
    assert blank_only and not [e for e in events if e.offset in blank_only]
    # its usage still counts: carried by the first event of the message that shows
    assert of(events, "agent_message")[0].usage.output_tokens == 7


def test_detail_header_never_shows_an_internal_sub_index(tmp_path, capsys):
    only = fixture("claude_session_api_errors_only.jsonl")
    db, _ = ingest_runs(tmp_path, capsys, only)
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            'SELECT event_id, source, "offset", sub FROM events WHERE run_key = ? AND sub > 0', [run_key(only)]
        ).fetchall()
        assert 1 in {r[3] for r in rows}
        for eid, source, offset, sub in rows:
            text = detail_text({"event": store.event_detail(conn, eid)})
            assert f"{source}@{offset}" in text and f"#{sub}" not in text
        assert END_OF_FILE_SUB in {r[3] for r in rows}  # the api-errors-only end, after the last line


def detail_text(detail: dict) -> str:
    con = Console(width=200, record=True, file=io.StringIO())
    con.print(render_detail(detail))
    return con.export_text()
