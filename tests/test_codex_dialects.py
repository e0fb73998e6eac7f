"""Codex ``exec --json`` dialects, rollout vocabularies and cut-off Codex and OpenCode streams
(issue 12, items 2, 3 and 7).

The fixtures in ``tests/fixtures/codex_dialects/`` were written from Codex's own source (the
README there cites repository, commit and file for each, and says which shapes come from a
report's quoted shape instead). Expectations are computed here from the fixture lines with the
stdlib ``json`` module, independently of the parsers.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from conftest import need_shared_data
from edgetui.cli.main import main
from edgetui.parsers.base import iter_lines
from edgetui.parsers.codex import CodexJsonParser, CodexRolloutParser
from edgetui.parsers.detect import detect_format, parser_for
from edgetui.parsers.opencode import OpenCodeParser

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "codex_dialects"
EXEC_FIXTURES = sorted(FIXTURES.glob("exec_json_*.jsonl"))
ROLLOUT_FIXTURES = sorted(FIXTURES.glob("rollout_*.jsonl"))
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}


def parse(parser_cls, data: bytes, source: str = "src"):
    parser = parser_cls(source, "gen")
    events = []
    for ln in iter_lines(io.BytesIO(data)):
        events += parser.feed(ln.data, ln.offset)
    return events + parser.finish()


def records(path: Path) -> list[tuple[int, dict]]:
    out, off = [], 0
    for piece in path.read_bytes().split(b"\n"):
        if piece.strip():
            out.append((off, json.loads(piece)))
        off += len(piece) + 1
    return out


def kinds(events, kind: str):
    return [e for e in events if e.kind == kind]


def usage_tuple(u: dict) -> tuple[int, int, int]:
    """edgetui's convention: input = reported input - cached; cached → cache_read."""
    cached = u.get("cached_input_tokens") or 0
    return (u["input_tokens"] - cached, u["output_tokens"], cached)


def expected_exec(path: Path) -> dict:
    """Messages, tool call ids, results and per-message usage of an exec --json file, by dialect."""
    agent, user, calls, results, usage = [], [], [], 0, []
    last_total = None
    for _, o in records(path):
        m = o.get("msg")
        if isinstance(m, dict):  # protocol events
            t = m["type"]
            if t == "agent_message":
                agent.append(m["message"])
            elif t == "user_message":
                user.append(m["message"])
            elif t.endswith("_begin") or t.endswith("_end"):
                if m["call_id"] not in calls:
                    calls.append(m["call_id"])
                results += t.endswith("_end")
            elif t == "token_count":
                info = m.get("info")
                if info is None:
                    usage.append(usage_tuple(m))
                elif info["total_token_usage"]["total_tokens"] != last_total:
                    usage.append(usage_tuple(info["last_token_usage"]))
                    last_total = info["total_token_usage"]["total_tokens"]
            continue
        if set(o) == {"prompt"}:
            user.append(o["prompt"])
            continue
        item = o.get("item") or {}
        itype = item.get("type", item.get("item_type"))
        if o.get("type") == "item.completed" and itype in ("agent_message", "assistant_message"):
            agent.append(item["text"])
        if itype in TOOL_ITEMS:
            if item["id"] not in calls:
                calls.append(item["id"])
            results += o["type"] == "item.completed"
        if o.get("type") == "turn.completed":
            usage.append(usage_tuple(o["usage"]))
    return {"agent": agent, "user": user, "calls": calls, "results": results, "usage": usage}


@pytest.mark.parametrize("path", EXEC_FIXTURES, ids=[p.name for p in EXEC_FIXTURES])
def test_each_exec_json_dialect_yields_its_messages_tool_calls_and_usage(path: Path):
    assert detect_format(path.read_bytes()[:65536], path.name) == "codex_json"
    events = parse(CodexJsonParser, path.read_bytes())
    want = expected_exec(path)
    assert want["agent"] and want["calls"] and want["usage"]  # the fixture exercises all three
    assert [e.data["text"] for e in kinds(events, "agent_message")] == want["agent"]
    assert [e.data["text"] for e in kinds(events, "user_message")] == want["user"]
    calls = kinds(events, "tool_call")
    assert [e.tool_use_id.split("@")[0] for e in calls] == want["calls"]
    results = kinds(events, "tool_result")
    assert len(results) == want["results"]
    assert {e.tool_use_id for e in results} <= {e.tool_use_id for e in calls}
    tok = [e for e in kinds(events, "token_usage") if e.usage is not None]
    assert [(e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens) for e in tok] == want["usage"]
    assert not kinds(events, "parse_error")
    init = kinds(events, "session_init")
    dialect = {"protocol": "protocol", "item_type_session": "item_type", "item_type_thread": "items"}
    assert len(init) == 1 and init[0].data["dialect"] == next(v for k, v in dialect.items() if k in path.name)
    from_items = [e for e in events if e.kind in ("agent_message", "tool_call", "tool_result")]
    assert all(e.data.get("item_type_key") is ("item_type" in path.name or None) for e in from_items)


def test_session_created_leads_a_codex_stream_not_a_claude_one():
    head = (FIXTURES / "exec_json_item_type_session_created.jsonl").read_bytes()
    assert detect_format(head) == "codex_json"
    only = json.dumps({"type": "session.created", "session_id": "0199"}).encode() + b"\n"
    assert detect_format(only) == "codex_json"
    # a Claude stream line with a session_id is still Claude's
    claude = json.dumps({"type": "system", "subtype": "init", "session_id": "s", "model": "m"}).encode() + b"\n"
    assert detect_format(claude) == "claude_stream"
    # the protocol dialect cut right after its config summary is still recognised
    cfg = (FIXTURES / "exec_json_protocol.jsonl").read_bytes().split(b"\n")[0] + b"\n"
    assert detect_format(cfg) == "codex_json"


def test_protocol_dialect_pairs_begin_and_end_with_exit_codes_and_durations():
    path = FIXTURES / "exec_json_protocol.jsonl"
    events = parse(CodexJsonParser, path.read_bytes())
    ends = {
        o["msg"]["call_id"]: o["msg"]
        for _, o in records(path)
        if isinstance(o.get("msg"), dict) and o["msg"]["type"].endswith("_end")
    }
    res = {e.tool_use_id: e for e in kinds(events, "tool_result")}
    assert set(res) == set(ends)
    for cid, m in ends.items():
        if m["type"] == "exec_command_end":
            assert res[cid].data["exit_code"] == m["exit_code"]
            assert res[cid].is_error is (m["exit_code"] != 0)
            assert res[cid].data["content"] == m["aggregated_output"]
            d = m["duration"]
            assert res[cid].data["duration_ms"] == pytest.approx(d["secs"] * 1000 + d["nanos"] / 1e6)
    names = {e.tool_use_id: e.tool_name for e in kinds(events, "tool_call")}
    assert names == {
        "call_a1": "exec",
        "call_a2": "apply_patch",
        "call_a3": "docs.search",
        "ws_1": "web_search",
        "call_a4": "exec",
    }
    # the web search's end came without its begin: the call is made from the end, on its line
    ws = [e for e in events if e.tool_use_id == "ws_1"]
    assert [e.kind for e in ws] == ["tool_call", "tool_result"] and ws[0].data["from_end"] is True
    assert kinds(events, "agent_message")[0].model == "gpt-5-codex"
    assert kinds(events, "session_init")[0].data["cwd"] == "/work"
    assert all(e.data.get("submission_id") == "0" for e in events if e.offset > 300)
    repeat = [e for e in kinds(events, "token_usage") if e.usage is None]
    assert len(repeat) == 1 and repeat[0].data["repeat"] is True


def test_protocol_dialect_counts_the_prompt_once_when_an_event_repeats_it():
    lines = [
        {"workdir": "/w", "model": "m", "approval": "never", "sandbox": "read-only"},
        {"prompt": "do x"},
        {"id": "0", "msg": {"type": "user_message", "message": "do x"}},
        {"id": "0", "msg": {"type": "user_message", "message": "and then y"}},
    ]
    events = parse(CodexJsonParser, jsonl(*lines))
    assert [e.data["text"] for e in kinds(events, "user_message")] == ["do x", "and then y"]
    assert [e.data.get("mirror") for e in events if e.offset == records_of(jsonl(*lines))[2][0]] == [True]


def test_item_type_dialect_reads_item_type_as_type():
    events = parse(CodexJsonParser, (FIXTURES / "exec_json_item_type_thread_started.jsonl").read_bytes())
    sub = [e for e in kinds(events, "tool_call") if e.data.get("sforge_submit")]
    assert len(sub) == 1 and sub[0].data["submit_mode"] == "submit"
    failed = [e for e in kinds(events, "tool_result") if e.is_error]
    assert [e.data["exit_code"] for e in failed] == [2]
    assert [e.summary for e in kinds(events, "agent_error")] == [
        "error: stream disconnected before completion",
        "turn failed: stream disconnected before completion",
    ]
    assert len(kinds(events, "thinking")) == 1


# ----------------------------------------------------------------------------- rollouts


MIRRORS = {"agent_message", "user_message", "agent_reasoning", "agent_reasoning_raw_content"}


def silent_offsets(path: Path) -> set[int]:
    """Lines allowed to leave no event: event_msg copies of the conversation (messages once a
    response_item message was seen, reasoning once any response_item was: their text is recorded
    from it)."""
    seen_response = seen_message = False
    out = set()
    for off, o in records(path):
        if o.get("type") == "response_item":
            seen_response = True
            seen_message = seen_message or o["payload"].get("type") == "message"
        elif o.get("type") == "event_msg" and o["payload"]["type"] in MIRRORS:
            if seen_message if o["payload"]["type"] in ("agent_message", "user_message") else seen_response:
                out.add(off)
    return out


def test_rollout_whose_only_conversation_is_event_msg_gives_its_turns():
    path = FIXTURES / "rollout_event_msg_only.jsonl"
    assert detect_format(path.read_bytes()) == "codex_rollout"
    events = parse(CodexRolloutParser, path.read_bytes())
    pay = [o["payload"] for _, o in records(path) if o["type"] == "event_msg"]
    assert [e.data["text"] for e in kinds(events, "agent_message")] == [
        p["message"] for p in pay if p["type"] == "agent_message"
    ]
    assert [e.data["text"] for e in kinds(events, "user_message")] == [
        p["message"] for p in pay if p["type"] == "user_message" and p.get("kind") == "plain"
    ]
    assert [e.tool_use_id for e in kinds(events, "tool_call")] == [
        p["call_id"] for p in pay if p["type"] == "exec_command_begin"
    ]
    res = kinds(events, "tool_result")
    assert [e.data["exit_code"] for e in res] == [p["exit_code"] for p in pay if p["type"] == "exec_command_end"]
    assert [
        (e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens) for e in kinds(events, "token_usage")
    ] == [usage_tuple(p["info"]["last_token_usage"]) for p in pay if p["type"] == "token_count"]
    assert len(kinds(events, "thinking")) == 1
    assert all(e.t_source == "recorded" for e in events)
    assert {off for off, _ in records(path)} == {e.offset for e in events}  # every line has its event


def test_rollout_item_completed_leaves_an_event_and_never_a_second_copy():
    path = FIXTURES / "rollout_item_completed.jsonl"
    events = parse(CodexRolloutParser, path.read_bytes())
    recs = records(path)
    item_lines = {
        off: o["payload"]["item"]
        for off, o in recs
        if o["type"] == "event_msg" and o["payload"]["type"] == "item_completed"
    }
    assert len(item_lines) == 4
    by_off = {}
    for e in events:
        by_off.setdefault(e.offset, []).append(e)
    for off, item in item_lines.items():
        assert [e.kind for e in by_off[off]] == ["system"], item["type"]
    plan = by_off[next(o for o, i in item_lines.items() if i["type"] == "Plan")][0]
    assert plan.data["plan"] == "1. call read\n2. run the tests\n" and plan.summary == "plan: 1. call read"
    # the conversation is the response items': one user and one agent message, each once
    responses = [o["payload"] for _, o in recs if o["type"] == "response_item"]
    assert len(kinds(events, "agent_message")) == sum(1 for p in responses if p.get("role") == "assistant") == 1
    assert len(kinds(events, "user_message")) == sum(1 for p in responses if p.get("role") == "user") == 1
    assert all(
        e.data.get("mirror")
        for e in kinds(events, "system")
        if e.data.get("item_type") in ("AgentMessage", "UserMessage")
    )
    assert {off for off, _ in recs} - {e.offset for e in events} == silent_offsets(path)


def test_rollout_messages_come_from_event_msg_while_no_response_item_message_exists():
    """Response items that are only tool calls do not make the event_msg messages copies."""
    ts = "2026-05-04T10:00:0{}.000Z"
    lines = [
        {"timestamp": ts.format(0), "type": "session_meta", "payload": {"id": "s"}},
        {"timestamp": ts.format(1), "type": "event_msg", "payload": {"type": "user_message", "message": "list it"}},
        {
            "timestamp": ts.format(2),
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        },
        {
            "timestamp": ts.format(3),
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "a\nb"},
        },
        {"timestamp": ts.format(4), "type": "event_msg", "payload": {"type": "agent_message", "message": "a and b"}},
        {
            "timestamp": ts.format(5),
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        },
        {"timestamp": ts.format(6), "type": "event_msg", "payload": {"type": "agent_message", "message": "done"}},
    ]
    events = parse(CodexRolloutParser, jsonl(*lines))
    assert [e.data["text"] for e in kinds(events, "user_message")] == ["list it"]
    assert [e.data["text"] for e in kinds(events, "agent_message")] == ["a and b", "done"]
    assert [e.tool_use_id for e in kinds(events, "tool_call")] == ["c1"]


@pytest.mark.parametrize(
    "path", EXEC_FIXTURES + ROLLOUT_FIXTURES, ids=[p.name for p in EXEC_FIXTURES + ROLLOUT_FIXTURES]
)
def test_no_record_is_left_without_an_event_and_resuming_changes_nothing(path: Path):
    data = path.read_bytes()
    fmt = detect_format(data)
    cls = {"codex_json": CodexJsonParser, "codex_rollout": CodexRolloutParser}[fmt]
    whole = parse(cls, data)
    assert {off for off, _ in records(path)} - {e.offset for e in whole} == silent_offsets(path)
    assert not kinds(whole, "parse_error")
    lines = list(iter_lines(io.BytesIO(data)))
    for cut in range(len(lines) + 1):
        first = parser_for(fmt, "src", "gen")
        evs = []
        for ln in lines[:cut]:
            evs += first.feed(ln.data, ln.offset)
        second = parser_for(fmt, "src", "gen", json.loads(json.dumps(first.state())))
        for ln in lines[cut:]:
            evs += second.feed(ln.data, ln.offset)
        evs += second.finish()
        assert [e.model_dump() for e in evs] == [e.model_dump() for e in whole], f"cut at line {cut}"


def test_unknown_event_msg_and_envelopes_are_events_not_silence():
    lines = [
        {"timestamp": "2026-05-04T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s"}},
        {"timestamp": "2026-05-04T10:00:01.000Z", "type": "event_msg", "payload": {"type": "brand_new_event", "x": 1}},
        {
            "timestamp": "2026-05-04T10:00:02.000Z",
            "type": "event_msg",
            "payload": {"type": "item_started", "turn_id": "t", "item": {"type": "WebSearch", "id": "w", "query": "q"}},
        },
        {"timestamp": "2026-05-04T10:00:03.000Z", "type": "future_envelope", "payload": {"a": 1}},
        {
            "timestamp": "2026-05-04T10:00:04.000Z",
            "type": "event_msg",
            "payload": {"type": "raw_response_item", "item": {}},
        },
    ]
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    events = parse(CodexRolloutParser, data)
    offsets = [i for i, _ in records_of(data)]
    assert {e.offset for e in events} == set(offsets)
    assert [e.data.get("event") for e in events if e.offset == offsets[1]] == ["brand_new_event"]
    assert events[-1].data["payload"] == {"type": "raw_response_item", "item": {}}


def records_of(data: bytes):
    out, off = [], 0
    for piece in data.split(b"\n"):
        if piece.strip():
            out.append((off, piece))
        off += len(piece) + 1
    return out


def test_dialect_files_ingest_with_their_turns_and_tokens_counted_once(tmp_path, capsys):
    files = EXEC_FIXTURES + ROLLOUT_FIXTURES
    db = tmp_path / "d.duckdb"
    assert main(["--db", str(db), "ingest", "-q", *map(str, files)]) == 0
    assert "0 turns" not in capsys.readouterr().err
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    for f in files:
        row = rows[f.stem]
        assert "no-turns" not in row["flags"].split(), f.name
        if f in EXEC_FIXTURES:
            want = sum(i + o + c for i, o, c in expected_exec(f)["usage"])
            assert row["tokens"] == want, f.name
    c = duckdb.connect(str(db), read_only=True)
    try:
        n = c.execute("SELECT count(*) FROM events WHERE kind = 'agent_message'").fetchone()[0]
    finally:
        c.close()
    assert n == sum(len(expected_exec(f)["agent"]) for f in EXEC_FIXTURES) + 2  # + one per rollout


# ----------------------------------------------------------------------------- OpenCode cut off


def oc(typ: str, ts: int, **part) -> dict:
    return {"type": typ, "timestamp": ts, "sessionID": "ses_cut", "part": {"sessionID": "ses_cut", **part}}


STEP_START = oc("step_start", 1767225600000, id="prt_1", messageID="msg_1", snapshot="0f1e", type="step-start")
RUNNING_TOOL = oc(
    "tool_use",
    1767225601000,
    id="prt_2",
    messageID="msg_1",
    type="tool",
    tool="bash",
    callID="call_9",
    state={"status": "running", "input": {"command": "make test"}, "time": {"start": 1767225601000}},
)
FINISH_TOOLS = oc(
    "step_finish",
    1767225602000,
    id="prt_3",
    messageID="msg_1",
    type="step-finish",
    reason="tool-calls",
    tokens={"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}},
    cost=0.0,
)
FINISH_STOP = {**FINISH_TOOLS, "part": {**FINISH_TOOLS["part"], "reason": "stop"}}


def jsonl(*recs: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in recs)


@pytest.mark.parametrize(
    "recs,reason",
    [
        ((STEP_START,), "no_step_finish"),  # anomalyco/opencode#31404: only step_start
        ((STEP_START, RUNNING_TOOL), "ended_after_tool_call"),
        ((STEP_START, FINISH_TOOLS), "ended_after_tool_call"),
        ((STEP_START, FINISH_STOP), None),
        ((STEP_START, FINISH_TOOLS, STEP_START, FINISH_STOP), None),
    ],
    ids=["step-start-only", "tool-running", "finished-for-tool-calls", "finished", "two-steps"],
)
def test_an_opencode_stream_cut_mid_step_ends_with_a_reason(recs, reason):
    events = parse(OpenCodeParser, jsonl(*recs))
    ends = kinds(events, "segment_end")
    if reason is None:
        assert not ends
        return
    assert len(ends) == 1 and ends[0].data["reason"] == reason and ends[0].data["incomplete"] is True
    assert ends[0] is events[-1] and ends[0].offset == records_of(jsonl(*recs))[-1][0]
    assert ends[0].t == recs[-1]["timestamp"] / 1000 and ends[0].t_source == "recorded"
    if reason == "ended_after_tool_call" and RUNNING_TOOL in recs:
        assert ends[0].data["unanswered_tool_calls"] == ["call_9"]


def test_an_exit_marker_or_error_record_is_not_a_cut_off():
    marker = jsonl(STEP_START) + b"__SFORGE_EXIT__0\n"
    assert [e.data["reason"] for e in kinds(parse(OpenCodeParser, marker), "segment_end")] == ["exit_marker"]
    err = {
        "type": "error",
        "timestamp": 1767225603000,
        "sessionID": "ses_cut",
        "error": {"name": "APIError", "data": {"message": "overloaded"}},
    }
    assert not kinds(parse(OpenCodeParser, jsonl(STEP_START, err)), "segment_end")


def test_an_opencode_file_with_only_step_start_is_flagged_incomplete(tmp_path, capsys):
    from edgetui.store import queries as store
    from edgetui.views.widgets.header import header_text

    f = tmp_path / "opencode-step-start-only.jsonl"
    f.write_bytes(jsonl(STEP_START))
    db = tmp_path / "o.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert "incomplete" in row["flags"].split()
    c = duckdb.connect(str(db), read_only=True)
    try:
        reason = c.execute("SELECT data->>'$.reason' FROM events WHERE kind = 'segment_end'").fetchall()
        head = store.run_header(c, c.execute("SELECT run_key FROM runs").fetchone()[0])
    finally:
        c.close()
    assert reason == [("no_step_finish",)]
    assert "incomplete" in header_text(head, 160).plain
    # the stream goes on and finishes its step: no longer incomplete
    with open(f, "ab") as fh:
        fh.write(jsonl(FINISH_STOP))
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    assert "incomplete" not in json.loads(capsys.readouterr().out)[0]["flags"].split()


# ----------------------------------------------------------------------------- Codex cut off


def head_records(path: Path, n: int) -> bytes:
    """The first ``n`` lines of a fixture, as a stream cut there would hold them."""
    return b"".join(ln + b"\n" for ln in [x for x in path.read_bytes().split(b"\n") if x.strip()][:n])


CODEX_CUTS = [
    # (fixture, lines kept, reason or None, unanswered tool_use ids): the fixture's own records
    ("exec_json_item_type_session_created.jsonl", 9, None, []),
    ("exec_json_item_type_session_created.jsonl", 8, "no_turn_complete", []),  # no turn.completed
    ("exec_json_item_type_session_created.jsonl", 4, "ended_after_tool_call", ["item_1@s0"]),  # command started
    ("exec_json_item_type_thread_started.jsonl", 13, None, []),  # ends on turn.failed: an ending
    ("exec_json_item_type_thread_started.jsonl", 12, "no_turn_complete", []),  # a second turn.started, no end
    ("exec_json_item_type_thread_started.jsonl", 4, "ended_after_tool_call", ["item_1@s0"]),  # MCP call started
    ("exec_json_protocol.jsonl", 19, None, []),
    ("exec_json_protocol.jsonl", 6, "ended_after_tool_call", ["call_a1"]),  # begin and output delta, no end
    ("exec_json_protocol.jsonl", 12, "ended_after_tool_call", ["call_a3"]),
    ("exec_json_protocol.jsonl", 4, None, []),  # the protocol dialect never prints task_complete: no telling
    ("rollout_item_completed.jsonl", 13, None, []),
    ("rollout_item_completed.jsonl", 12, "no_turn_complete", []),  # task_started without its task_complete
    ("rollout_event_msg_only.jsonl", 5, "ended_after_tool_call", ["call_r1"]),
    ("rollout_event_msg_only.jsonl", 9, None, []),  # an old rollout (no task_started): no turn end expected
]


@pytest.mark.parametrize(
    "name,n,reason,unanswered",
    CODEX_CUTS,
    ids=[f"{c[0].split('.')[0]}-{c[1]}-{c[2] or 'complete'}" for c in CODEX_CUTS],
)
def test_a_codex_stream_cut_off_ends_with_a_reason(name, n, reason, unanswered):
    from edgetui.parsers.base import END_OF_FILE_SUB

    path = FIXTURES / name
    data = head_records(path, n)
    cls = CodexRolloutParser if name.startswith("rollout") else CodexJsonParser
    events = parse(cls, data)
    ends = [e for e in kinds(events, "segment_end") if e.data.get("reason") != "exit_marker"]
    if reason is None:
        assert not ends
        return
    last_off, last = records_of(data)[-1]
    assert len(ends) == 1 and ends[0] is events[-1] and ends[0].sub == END_OF_FILE_SUB
    assert ends[0].data["reason"] == reason and ends[0].data["incomplete"] is True
    assert ends[0].data["unanswered_tool_calls"] == unanswered
    assert ends[0].offset == last_off and ends[0].is_error and ends[0].level == "warning"
    ts = json.loads(last).get("timestamp")
    if ts:  # rollouts: the time of the last record
        assert ends[0].t == datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    # finish() leaves the state alone: the same stream read on (it grew) is not cut any more
    p = cls("src", "gen")
    for ln in iter_lines(io.BytesIO(data)):
        p.feed(ln.data, ln.offset)
    before = p.state()
    assert p.finish() and p.state() == before
    rest = path.read_bytes()[len(data) :]
    for ln in iter_lines(io.BytesIO(rest)):
        p.feed(ln.data, ln.offset + len(data))
    assert not p.finish()


def test_an_exit_marker_after_a_cut_codex_stream_is_an_ending():
    data = head_records(FIXTURES / "exec_json_item_type_session_created.jsonl", 4) + b"__SFORGE_EXIT__137\n"
    ends = kinds(parse(CodexJsonParser, data), "segment_end")
    assert [e.data["reason"] for e in ends] == ["exit_marker"]


def test_a_codex_process_cut_off_before_the_next_one_starts_is_incomplete_mid_file():
    """Two ``codex exec --json`` processes in one file (a resume): the first stops after starting a
    command; its segment ends where the second one's ``thread.started`` line begins."""
    first = head_records(FIXTURES / "exec_json_item_type_session_created.jsonl", 4)
    second = (FIXTURES / "exec_json_item_type_thread_started.jsonl").read_bytes()
    events = parse(CodexJsonParser, first + second)
    ends = kinds(events, "segment_end")
    assert len(ends) == 1 and ends[0].offset == len(first) and ends[0].sub == 0
    assert ends[0].segment == 0 and ends[0].data["reason"] == "ended_after_tool_call"
    assert ends[0].data["unanswered_tool_calls"] == ["item_1@s0"]
    assert ends[0].data["last_record_offset"] == records_of(first)[-1][0]
    at_second = [e.kind for e in events if e.offset == len(first)]
    assert at_second == ["segment_end", "segment_start", "session_init"]


def real_codex(corpus: Path, name: str) -> Path:
    return need_shared_data(corpus / "C" / name)


def test_the_real_beam_rollout_cut_after_its_calls_is_flagged_incomplete(corpus, tmp_path, capsys):
    """``C/beam-rollout-…``: the session was cut off after five exec_command calls had been sent;
    none has its output. Parsed, ingested, listed in ``runs`` and shown in the replay header."""
    from edgetui.store import queries as store
    from edgetui.parsers.base import END_OF_FILE_SUB
    from edgetui.views.widgets.header import header_text

    path = real_codex(corpus, "beam-rollout-0.122.0-alpha.13.jsonl")
    recs = records(path)
    calls = [
        o["payload"]["call_id"]
        for _, o in recs
        if o["type"] == "response_item" and o["payload"].get("type") == "function_call"
    ]
    answered = {
        o["payload"]["call_id"]
        for _, o in recs
        if o["type"] == "response_item" and o["payload"].get("type") == "function_call_output"
    }
    want = [c for c in calls if c not in answered]
    assert len(want) == 5  # the file as published
    events = parse(CodexRolloutParser, path.read_bytes())
    end = events[-1]
    assert end.kind == "segment_end" and end.sub == END_OF_FILE_SUB and end.offset == recs[-1][0]
    assert end.data["reason"] == "ended_after_tool_call" and end.data["unanswered_tool_calls"] == want
    assert len(kinds(events, "segment_end")) == 1

    db = tmp_path / "beam.duckdb"
    assert (
        main(["--db", str(db), "ingest", "-q", str(path), str(real_codex(corpus, "scout-rollout-0.142.4-tui.jsonl"))])
        == 0
    )
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    flags = {r["run_id"]: r["flags"].split() for r in json.loads(capsys.readouterr().out)}
    assert "incomplete" in flags[path.stem]
    assert "incomplete" not in flags["scout-rollout-0.142.4-tui"]  # ends with task_complete
    c = duckdb.connect(str(db), read_only=True)
    try:
        key = c.execute("SELECT run_key FROM runs WHERE run_id = ?", [path.stem]).fetchone()[0]
        reason = c.execute(
            "SELECT data->>'$.reason' FROM events WHERE run_key = ? AND kind = 'segment_end'", [key]
        ).fetchall()
        head = store.run_header(c, key)
    finally:
        c.close()
    assert reason == [("ended_after_tool_call",)]
    assert "incomplete" in header_text(head, 160).plain

    # the same session read on (the outputs and the turn's end arrive): no longer incomplete
    grown = tmp_path / path.name
    grown.write_bytes(
        path.read_bytes()
        + b"".join(
            json.dumps(
                {
                    "timestamp": "2026-04-21T09:51:54.000Z",
                    "type": "response_item",
                    "payload": {"type": "function_call_output", "call_id": cid, "output": "ok"},
                }
            ).encode()
            + b"\n"
            for cid in want
        )
    )
    with open(grown, "ab") as fh:
        fh.write(
            json.dumps(
                {
                    "timestamp": "2026-04-21T09:51:55.000Z",
                    "type": "event_msg",
                    "payload": {"type": "task_complete", "turn_id": "t", "last_agent_message": None},
                }
            ).encode()
            + b"\n"
        )
    assert not kinds(parse(CodexRolloutParser, grown.read_bytes()), "segment_end")


def test_real_codex_files_cut_before_their_turn_end_are_incomplete(corpus):
    """Real files that end with their turn's completion are whole; cut before it, they are not."""
    scout = real_codex(corpus, "scout-rollout-0.142.4-tui.jsonl")
    recs = records(scout)
    assert recs[-1][1]["payload"]["type"] == "task_complete"
    assert not kinds(parse(CodexRolloutParser, scout.read_bytes()), "segment_end")
    ends = kinds(parse(CodexRolloutParser, scout.read_bytes()[: recs[-1][0]]), "segment_end")
    assert [e.data["reason"] for e in ends] == ["no_turn_complete"] and ends[0].offset == recs[-2][0]
    exe = real_codex(corpus, "llmtaste-exec-json-turn2-todo-filechange-cmd.jsonl")
    recs = records(exe)
    assert recs[-1][1]["type"] == "turn.completed"
    assert not kinds(parse(CodexJsonParser, exe.read_bytes()), "segment_end")
    ends = kinds(parse(CodexJsonParser, exe.read_bytes()[: recs[-1][0]]), "segment_end")
    assert [e.data["reason"] for e in ends] == ["no_turn_complete"]


_CL_INIT = {"type": "system", "subtype": "init", "session_id": "s"}
_CL_TEXT = {
    "type": "assistant",
    "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
}
_CL_MORE = {
    "type": "assistant",
    "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "more"}]},
}
_EXEC = [ln + b"\n" for ln in (FIXTURES / "exec_json_item_type_session_created.jsonl").read_bytes().splitlines()]


@pytest.mark.parametrize(
    "first,more,reason",
    [
        (jsonl(_CL_INIT, _CL_TEXT), jsonl(_CL_MORE), "no_result"),
        (b"".join(_EXEC[:2]), _EXEC[2], "no_turn_complete"),
        (b"".join(_EXEC[:3]), _EXEC[3], "ended_after_tool_call"),
        (jsonl(STEP_START), jsonl(RUNNING_TOOL), "ended_after_tool_call"),
    ],
    ids=["claude", "codex-turn", "codex-call", "opencode"],
)
def test_a_cut_stream_that_grows_and_is_still_cut_stays_incomplete(tmp_path, capsys, first, more, reason):
    """Ingested, then grown by a line that still ends nothing, then ingested again: the run is still
    flagged, with one segment_end at the new last line (the parser's state saved at the first ingest
    is not marked "ended" by finish())."""
    f = tmp_path / "cut.jsonl"
    f.write_bytes(first)
    db = tmp_path / "c.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    with open(f, "ab") as fh:
        fh.write(more)
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    assert "incomplete" in json.loads(capsys.readouterr().out)[0]["flags"].split()
    c = duckdb.connect(str(db), read_only=True)
    try:
        ends = c.execute("SELECT \"offset\", data->>'$.reason' FROM events WHERE kind = 'segment_end'").fetchall()
    finally:
        c.close()
    assert ends == [(len(first), reason)]


FINAL_RESULT = {
    "agent": "codex",
    "task": "taskA",
    "run_id": "run1",
    "model": "gpt-5.5",
    "best_pass_rate": 0.0,
    "best_round": "",
    "total_rounds": 0,
    "agent_submissions": 0,
    "auto_submissions": 0,
    "timed_out": True,
    "runtime_seconds": 100.0,
    "archive_size_bytes": 0,
    "resume_count": 0,
}
FINAL_RESULT["timed_out"] = False  # a run that ended otherwise (a timed-out one is stopped at its budget: not a cut)


def test_a_codex_stream_still_growing_live_is_not_incomplete(tmp_path):
    """A run's ``codex exec --json`` transcript that stops after a command started: while the run goes
    on (no ``final_result.json``) the live supervisor and an offline ingest leave it unflagged; once the
    run has finished, both flag it ``incomplete``."""
    from edgetui.store import queries as store
    from edgetui.store.database import open_db
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    td = tmp_path / "runs" / "run1" / "taskA"
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text("2026-05-04 10:00:00,000 - INFO - Images ready\n")
    (td / "agent_output.txt").write_bytes(head_records(FIXTURES / "exec_json_item_type_session_created.jsonl", 4))
    conn = open_db(tmp_path / "live.duckdb")
    settings = AlarmSettings(
        discovery_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        stats_interval_s=0,
        grading_grace_s=0,
        container_grace_s=0,
    )
    sup = Supervisor(conn, [tmp_path / "runs"], docker_client=None, settings=settings)
    try:
        key = sup.poll_once()[0].run_key
        assert conn.execute("SELECT agent_format FROM runs WHERE run_key = ?", [key]).fetchone()[0] == "codex_json"
        assert "incomplete" not in store.transcript_flags(conn, key)
        sup.poll_once()
        assert "incomplete" not in store.transcript_flags(conn, key)
        (td / "final_result.json").write_text(json.dumps(FINAL_RESULT))
        assert sup.poll_once()[0].status == "finished"
        assert "incomplete" in store.transcript_flags(conn, key)
        assert conn.execute(
            "SELECT data->>'$.reason' FROM events WHERE run_key = ? AND kind = 'segment_end'", [key]
        ).fetchall() == [("ended_after_tool_call",)]
    finally:
        sup.close()
        conn.close()
    # offline, the same: the unfinished run is not incomplete, the finished one is
    for final, want in ((False, False), (True, True)):
        if not final:
            (td / "final_result.json").unlink()
        else:
            (td / "final_result.json").write_text(json.dumps(FINAL_RESULT))
        db = tmp_path / f"offline-{final}.duckdb"
        assert main(["--db", str(db), "ingest", "-q", str(tmp_path / "runs")]) == 0
        c = duckdb.connect(str(db), read_only=True)
        try:
            got = store.transcript_flags(c, c.execute("SELECT run_key FROM runs").fetchone()[0])
        finally:
            c.close()
        assert ("incomplete" in got) is want, (final, got)


# ----------------------------------------------------------------------------- odd values


from hypothesis import HealthCheck, given, settings  # noqa: E402 - with the property tests below that use it
from hypothesis import strategies as st  # noqa: E402 - with the property tests below that use it

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=6,
)
_MSG_TYPES = sorted(
    {
        "agent_message",
        "user_message",
        "agent_reasoning",
        "exec_command_begin",
        "exec_command_end",
        "patch_apply_begin",
        "patch_apply_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "token_count",
        "session_configured",
        "item_completed",
        "item_started",
        "task_started",
    }
)
_FIELDS = [
    "message",
    "text",
    "call_id",
    "command",
    "cwd",
    "changes",
    "invocation",
    "result",
    "duration",
    "exit_code",
    "aggregated_output",
    "stdout",
    "info",
    "input_tokens",
    "output_tokens",
    "item",
    "success",
    "kind",
    "query",
]
_TURN_ITEM = st.fixed_dictionaries(
    {"type": st.sampled_from(["Plan", "AgentMessage", "UserMessage", "Reasoning", "Other"])},
    optional={f: _JSON for f in ("id", "text", "content", "summary_text", "raw_content")},
)
_PAYLOAD = st.fixed_dictionaries(
    {"type": st.sampled_from(_MSG_TYPES)}, optional={**{f: _JSON for f in _FIELDS}, "item": _TURN_ITEM | _JSON}
)
_ITEM = st.fixed_dictionaries(
    {
        "id": _JSON,
        "item_type": st.sampled_from(
            [
                "assistant_message",
                "reasoning",
                "command_execution",
                "file_change",
                "mcp_tool_call",
                "web_search",
                "todo_list",
            ]
        ),
    },
    optional={f: _JSON for f in ("text", "command", "aggregated_output", "exit_code", "status", "changes", "items")},
)
_RECORD = st.one_of(
    _PAYLOAD.map(lambda p: {"id": "0", "msg": p}),
    _PAYLOAD.map(lambda p: {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": p}),
    st.tuples(st.sampled_from(["item_completed", "item_started"]), st.text(max_size=3), _TURN_ITEM).map(
        lambda t: {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "event_msg",
            "payload": {"type": t[0], "turn_id": t[1], "item": t[2]},
        }
    ),
    st.tuples(st.sampled_from(["item.started", "item.completed", "session.created"]), _ITEM).map(
        lambda t: {"type": t[0], "item": t[1], "session_id": t[1].get("id")}
    ),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_RECORD, max_size=12))
def test_odd_values_in_the_new_shapes_never_break_a_parser(recs):
    data = jsonl(*recs)
    for cls in (CodexJsonParser, CodexRolloutParser):
        p = cls("src", "gen")
        out = []
        for ln in iter_lines(io.BytesIO(data)):
            out += p.feed(ln.data, ln.offset)
        out += p.finish()
        assert not [e for e in out if e.kind == "parse_error"], [
            e.data["reason"] for e in out if e.kind == "parse_error"
        ]
        json.dumps(p.state())
