"""edgetui.parsers.claude: stream-json and session-file parsers, sforge-submit output parsing.

Corpus tests compute their expectations independently with the stdlib ``json``
module and compare them with the parser's events. They skip when the shared
data folder (``../shared/data`` beside the clone) is absent.
"""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgetui.events import Event, Kind
from edgetui.parsers.base import iter_lines
from edgetui.parsers.claude import (
    ClaudeStreamParser,
    content_text,
    parse_sforge_submit_output,
    parse_timestamp,
    sforge_submit_mode,
)
from edgetui.parsers.claude_session import FORMATS, ClaudeSessionParser, detect_claude_format

from conftest import SHARED_DATA as DATA, need_shared_data  # (../shared/data or EDGETUI_SHARED_DATA)

CORPUS = DATA / "transcript-corpus"
STREAM_DIR = CORPUS / "A"
SESSION_DIR = CORPUS / "B"


def corpus_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


need = need_shared_data


STREAM_FILES = corpus_files(STREAM_DIR)
SESSION_FILES = corpus_files(SESSION_DIR)
ALL_FILES = [(p, ClaudeStreamParser) for p in STREAM_FILES] + [(p, ClaudeSessionParser) for p in SESSION_FILES]
if not ALL_FILES:  # keep one parametrized case so the skip reason shows up
    ALL_FILES = [(STREAM_DIR / "missing", ClaudeStreamParser)]


def parse_bytes(parser_cls, data: bytes, source: str = "agent_output.txt", generation: str = "gen"):
    parser = parser_cls(source, generation)
    events = []
    for ln in iter_lines(io.BytesIO(data)):
        events += parser.feed(ln.data, ln.offset)
    events += parser.finish()
    return events, parser


def parse_file(parser_cls, path: Path):
    return parse_bytes(parser_cls, path.read_bytes(), source=path.name)[0]


def feed_lines(parser, lines: list[bytes], start: int = 0):
    """Feed raw lines (no terminator) as if they were consecutive in one file."""
    out, off = [], start
    for ln in lines:
        out += parser.feed(ln, off)
        off += len(ln) + 1
    return out


def dumps(o) -> bytes:
    return json.dumps(o, separators=(",", ":")).encode()


def iso_epoch(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


# ----------------------------------------------------------------------------- independent expectations


def expected(path: Path) -> dict:
    """Counts computed with plain ``json`` only."""
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
        base = 3
    else:
        base = 0
    exp = {
        "line_offsets": set(),
        "non_json": [],
        "tool_use_ids": [],
        "tool_result_ids": [],
        "usage_msg_ids": set(),
        "results": 0,
        "inits": 0,
        "timestamps": {},
        "subagent_offsets": set(),
    }
    off = base
    pieces = raw.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    for piece in pieces:
        line = piece[:-1] if piece.endswith(b"\r") else piece
        this = off
        off += len(piece) + 1
        if not line.strip():
            continue
        exp["line_offsets"].add(this)
        try:
            o = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            exp["non_json"].append((this, line))
            continue
        if not isinstance(o, dict):
            exp["non_json"].append((this, line))
            continue
        if isinstance(o.get("timestamp"), str):
            exp["timestamps"][this] = iso_epoch(o["timestamp"])
        records = [o]
        if (
            o.get("type") == "progress"
            and isinstance(o.get("data"), dict)
            and o["data"].get("type") == "agent_progress"
        ):
            records.append(o["data"].get("message") or {})
        for r in records:
            typ = r.get("type")
            msg = r.get("message") if isinstance(r.get("message"), dict) else {}
            content = msg.get("content")
            if typ == "system" and r.get("subtype") == "init":
                exp["inits"] += 1
            if typ == "result":
                exp["results"] += 1
            if r.get("parent_tool_use_id"):
                exp["subagent_offsets"].add(this)
            if typ == "assistant":
                if isinstance(content, list):
                    exp["tool_use_ids"] += [
                        b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                    ]
                if isinstance(msg.get("usage"), dict) and msg.get("id"):
                    exp["usage_msg_ids"].add(msg["id"])
            if typ == "user" and isinstance(content, list):
                exp["tool_result_ids"] += [
                    b["tool_use_id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
    return exp


# ----------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("path,parser_cls", ALL_FILES, ids=lambda v: getattr(v, "name", getattr(v, "__name__", str(v))))
def test_corpus_counts_match_independent_json(path: Path, parser_cls):
    need(path)
    exp = expected(path)
    events = parse_file(parser_cls, path)
    from edgetui.parsers.base import END_OF_FILE_SUB

    # a stream whose last segment has no result record ends with one "incomplete" segment_end
    # (after the last line: END_OF_FILE_SUB); session files never do
    end = [e for e in events if e.sub == END_OF_FILE_SUB]
    events = [e for e in events if e.sub != END_OF_FILE_SUB]
    last_type = None
    for ln in path.read_bytes().splitlines():
        try:
            last_type = json.loads(ln).get("type") if ln.strip() else last_type
        except (ValueError, AttributeError):
            pass
    if parser_cls is ClaudeStreamParser:
        assert len(end) == (0 if last_type == "result" else 1), (last_type, end)
        assert all(e.kind == "segment_end" and e.data["incomplete"] for e in end)
    else:  # a session file: an end only for a session whose only answer is API errors
        errors, answers = 0, 0
        for ln in path.read_bytes().splitlines():
            try:
                o = json.loads(ln)
            except ValueError:
                continue
            if o.get("type") == "system" and o.get("subtype") == "api_error":
                errors += 1
            elif o.get("type") == "assistant":
                if o.get("isApiErrorMessage") or o.get("error"):
                    errors += 1
                else:
                    answers += any(
                        b.get("type") != "text" or b.get("text", "").strip()
                        for b in o["message"].get("content") or []
                        if isinstance(b, dict)
                    )
        only_errors = bool(errors) and not answers
        assert [e.data.get("reason") for e in end] == (["api_errors_only"] if only_errors else [])
        assert all(e.kind == "segment_end" and e.is_error and e.data["api_errors"] == errors for e in end)
    kinds = Counter(e.kind for e in events)

    # nothing dropped: every non-blank line yields at least one event, subs are 0..n-1
    by_offset = defaultdict(list)
    for e in events:
        by_offset[e.offset].append(e.sub)
    assert set(by_offset) == exp["line_offsets"]
    for subs in by_offset.values():
        assert subs == list(range(len(subs)))

    assert sorted(e.tool_use_id for e in events if e.kind == "tool_call") == sorted(exp["tool_use_ids"])
    assert len(set(exp["tool_use_ids"])) == kinds["tool_call"]
    assert sorted(e.tool_use_id for e in events if e.kind == "tool_result") == sorted(exp["tool_result_ids"])

    errs = [(e.offset, e.raw) for e in events if e.kind == "parse_error"]
    assert errs == exp["non_json"]

    with_usage = [e.message_id for e in events if e.usage is not None]
    assert len(with_usage) == len(set(with_usage)), "usage attached twice to one message id"
    assert set(with_usage) == exp["usage_msg_ids"]

    assert kinds["agent_result"] == exp["results"]
    if parser_cls is ClaudeStreamParser:
        assert kinds["session_init"] == exp["inits"]
        assert kinds["segment_end"] == exp["results"]  # no exit markers in the corpus
    else:
        assert kinds["session_init"] == 1  # one sessionId per corpus session file

    # recorded times: every event of a line with a timestamp carries it, others have none
    for e in events:
        if e.offset in exp["timestamps"]:
            assert e.t == pytest.approx(exp["timestamps"][e.offset], abs=1e-6)
            assert e.t_source == "recorded"
        else:
            assert e.t is None and e.t_source is None

    # subagent lines are the ones whose events carry a parent_tool_use_id
    assert {e.offset for e in events if e.parent_tool_use_id} == exp["subagent_offsets"]

    fmt = "claude_stream" if parser_cls is ClaudeStreamParser else "claude_session"
    assert all(e.agent_format == fmt for e in events)
    assert all(e.source == path.name and e.generation == "gen" for e in events)
    assert len({e.event_id() for e in events}) == len(events)


@pytest.mark.parametrize("path,parser_cls", ALL_FILES, ids=lambda v: getattr(v, "name", getattr(v, "__name__", str(v))))
def test_corpus_events_are_valid_models(path: Path, parser_cls):
    """Events built without validation equal what pydantic validation makes of them."""
    need(path)
    for e in parse_file(parser_cls, path):
        assert type(e.kind) is str and e.kind in {k.value for k in Kind}
        assert e.t_source is None or type(e.t_source) is str
        dumped = e.model_dump()
        again = Event.model_validate(dumped)
        assert again.model_dump() == dumped
        assert again == e
        assert isinstance(e.summary, str) and "\n" not in e.summary and len(e.summary) <= 240
        assert e.segment is not None


@pytest.mark.parametrize("path,parser_cls", ALL_FILES, ids=lambda v: getattr(v, "name", getattr(v, "__name__", str(v))))
def test_state_round_trip_matches_single_pass(path: Path, parser_cls):
    need(path)
    data = path.read_bytes()
    lines = list(iter_lines(io.BytesIO(data)))
    whole = []
    p = parser_cls(path.name, "gen")
    for ln in lines:
        whole += p.feed(ln.data, ln.offset)
    whole += p.finish()

    for cut in sorted({1, len(lines) // 3, len(lines) // 2, len(lines) - 1}):
        first = parser_cls(path.name, "gen")
        part = []
        for ln in lines[:cut]:
            part += first.feed(ln.data, ln.offset)
            assert first.resume_offset() is None
        state = json.loads(json.dumps(first.state()))
        second = parser_cls(path.name, "gen", state)
        for ln in lines[cut:]:
            part += second.feed(ln.data, ln.offset)
        part += second.finish()
        assert [e.model_dump() for e in part] == [e.model_dump() for e in whole]


def test_detect_format_on_corpus():
    need(CORPUS)
    for p in STREAM_FILES:
        assert detect_claude_format(p.read_bytes()[:65536]) == "claude_stream", p.name
    for p in SESSION_FILES:
        assert detect_claude_format(p.read_bytes()[:65536]) == "claude_session", p.name
    for folder in ("C", "D"):  # Codex / OpenCode are not Claude
        for p in corpus_files(CORPUS / folder):
            assert detect_claude_format(p.read_bytes()[:65536]) is None, p.name


# ----------------------------------------------------------------------------- specific corpus checks


def test_subagent_file_parent_ids_and_split_usage():
    path = need(STREAM_DIR / "archistrator-subagent-scrubbed.jsonl")
    events = parse_file(ClaudeStreamParser, path)
    agent_call = next(e for e in events if e.kind == "tool_call")
    assert agent_call.tool_name == "Agent" and agent_call.parent_tool_use_id is None
    sub = [e for e in events if e.parent_tool_use_id is not None]
    assert sub and all(e.parent_tool_use_id == agent_call.tool_use_id for e in sub)
    assert any(e.kind == "user_message" for e in sub)

    # two lines share message.id: usage on the first event only
    mid = agent_call.message_id
    same = [e for e in events if e.message_id == mid]
    assert [e.kind for e in same] == ["thinking", "tool_call"]
    assert same[0].usage is not None and same[1].usage is None
    assert (same[0].usage.input_tokens, same[0].usage.output_tokens) == (2, 2)
    assert (same[0].usage.cache_read_tokens, same[0].usage.cache_write_tokens) == (29178, 5588)
    assert same[0].summary == "[thinking: signature only]" and same[0].data["text"] == ""

    # tool_result list content is joined from its text blocks
    rec = next(
        json.loads(ln) for ln in path.read_bytes().splitlines() if b'"tool_result"' in ln and b'"type":"user"' in ln
    )
    blocks = rec["message"]["content"][0]["content"]
    result = next(e for e in events if e.kind == "tool_result")
    assert result.data["content"] == "\n".join(b["text"] for b in blocks)
    assert result.tool_use_id == agent_call.tool_use_id and result.is_error is False

    res = next(e for e in events if e.kind == "agent_result")  # "type" is not the first key
    assert res.stated_cost_usd == pytest.approx(0.11543595)
    assert res.data["num_turns"] == 2 and res.data["subtype"] == "success"
    assert res.usage is None  # segment totals stay in data
    init = next(e for e in events if e.kind == "session_init")
    assert init.model == "claude-sonnet-5" and init.data["tools"] == 29
    assert init.data["claude_code_version"] == "2.1.220"
    assert init.data["session_id"] == "bda495be-48e6-4476-8117-9e8459107b7d"
    assert init.data["permissionMode"] == "auto"


def test_failure_file_agent_error():
    path = need(STREAM_DIR / "archistrator-failure-scrubbed.jsonl")
    events = parse_file(ClaudeStreamParser, path)
    kinds = [e.kind for e in events]
    assert "agent_message" not in kinds
    err = next(e for e in events if e.kind == "agent_error")
    assert err.data["error"] == "model_not_found" and err.is_error is True
    assert "no-such-model" in err.data["text"] and err.model == "<synthetic>"
    res = next(e for e in events if e.kind == "agent_result")
    assert res.is_error is True and res.data["subtype"] == "success" and res.stated_cost_usd == 0.0
    end = next(e for e in events if e.kind == "segment_end")
    assert end.data["reason"] == "result" and end.is_error is True


def test_skillsbench_noise_lines_are_parse_errors():
    path = need(STREAM_DIR / "skillsbench-harbor-stdout-bash-noise.txt")
    raw = path.read_bytes()
    line1, line2 = raw.split(b"\n")[:2]
    events = parse_file(ClaudeStreamParser, path)
    errs = [e for e in events if e.kind == "parse_error"]
    assert [(e.offset, e.raw) for e in errs[:2]] == [(0, line1), (len(line1) + 1, line2)]
    assert line1.startswith(b"bash:")
    err_result = [e for e in events if e.kind == "tool_result" and e.is_error]
    assert len(err_result) == 1 and "EISDIR" in err_result[0].data["content"]
    assert err_result[0].summary.startswith("error: ")


def test_stream_stop_hook_and_api_retry():
    path = need(STREAM_DIR / "trackgentic-stream-hooks-apiretry-tasks.jsonl")
    events = parse_file(ClaudeStreamParser, path)
    hooks = [e for e in events if e.kind == "stop_hook_block"]
    assert len(hooks) == 1 and hooks[0].data["text"].startswith("Stop hook feedback")
    retries = [e for e in events if e.kind == "system" and e.data.get("subtype") == "api_retry"]
    assert len(retries) == 9 and all(e.level == "warning" for e in retries)
    assert "session_init" in {e.kind for e in events}
    # hooks before init stay in segment 0
    assert {e.segment for e in events} == {0}


def test_session_compaction_and_api_error():
    path = need(SESSION_DIR / "willitrain-windows-2.1.22.jsonl")
    events = parse_file(ClaudeSessionParser, path)
    comp = [e for e in events if e.kind == "compaction"]
    assert [e.data["phase"] for e in comp] == ["boundary", "summary"]
    assert comp[0].data["trigger"] == "auto" and comp[0].data["pre_tokens"] == 167371
    assert comp[1].data["text"].startswith("This session is being continued")
    err = [e for e in events if e.kind == "agent_error"]
    assert len(err) == 1 and err[0].data["error"] == "rate_limit"
    init = next(e for e in events if e.kind == "session_init")
    first = json.loads(path.read_bytes().split(b"\n")[0])
    assert first["type"] == "queue-operation" and init.offset > 0  # waits for the full envelope
    assert init.data["claude_code_version"] == "2.1.22"
    assert init.data["session_id"] == "33c772d9-b322-4f61-a37d-7d5634a80b45"
    assert init.data["cwd"].startswith("c:\\Users")


def test_session_usage_update_when_output_grows():
    """Later lines of one message.id can carry larger output_tokens (session files)."""
    path = need(SESSION_DIR / "scripts-1.0.128-compact.jsonl")
    events = parse_file(ClaudeSessionParser, path)
    updates = [e for e in events if "usage_update" in e.data]
    assert updates
    for u in updates:
        first = next(e for e in events if e.message_id == u.message_id and e.usage is not None)
        assert first.offset < u.offset
        assert u.data["usage_update"]["output_tokens"] != first.usage.output_tokens
    plain = [e for e in events if e.kind == "user_message" and e.data.get("is_meta")]
    assert plain  # isMeta plain-string user content


def test_truncated_last_line_is_parse_error():
    path = need(STREAM_DIR / "llmtaste-claude-resumed-turn4-result-key-order.jsonl")
    raw = path.read_bytes().rstrip(b"\n")
    last_start = raw.rfind(b"\n") + 1
    cut = raw[: last_start + (len(raw) - last_start) // 2]
    events, _ = parse_bytes(ClaudeStreamParser, cut)
    from edgetui.parsers.base import END_OF_FILE_SUB

    assert events[-1].kind == "segment_end" and events[-1].sub == END_OF_FILE_SUB  # cut off: incomplete
    events = events[:-1]
    assert events[-1].kind == "parse_error"
    assert events[-1].offset == last_start and events[-1].raw == cut[last_start:]
    assert "agent_result" not in {e.kind for e in events}


# ----------------------------------------------------------------------------- synthetic streams


def init_rec(session="s1", model="claude-x", version="2.1.159"):
    return {
        "type": "system",
        "subtype": "init",
        "session_id": session,
        "model": model,
        "cwd": "/app",
        "tools": ["Bash", "Read"],
        "claude_code_version": version,
        "permissionMode": "bypassPermissions",
        "uuid": "u-init",
    }


def asst(mid, blocks, usage=None, parent=None, **extra):
    msg = {"id": mid, "model": "claude-x", "role": "assistant", "content": blocks}
    if usage is not None:
        msg["usage"] = usage
    return {"type": "assistant", "message": msg, "parent_tool_use_id": parent, "session_id": "s1", **extra}


def user(blocks, parent=None, **extra):
    return {
        "type": "user",
        "message": {"role": "user", "content": blocks},
        "parent_tool_use_id": parent,
        "session_id": "s1",
        **extra,
    }


def result_rec(**kw):
    r = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1000,
        "num_turns": 1,
        "result": "done",
        "total_cost_usd": 0.5,
        "session_id": "s1",
    }
    r.update(kw)
    return r


U = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}


def test_second_init_and_exit_marker_segments():
    hook = {
        "type": "system",
        "subtype": "hook_started",
        "hook_name": "SessionStart:resume",
        "hook_event": "SessionStart",
        "session_id": "s2",
    }
    lines = [
        dumps(init_rec()),
        dumps(asst("m1", [{"type": "text", "text": "hi"}], U)),
        dumps(result_rec()),
        b"__SFORGE_EXIT__3",
        b"(node:12) Warning: something",
        dumps(hook),
        dumps(init_rec("s2")),
        dumps(asst("m2", [{"type": "text", "text": "again"}], U)),
    ]
    p = ClaudeStreamParser("agent_output.txt", "g")
    events = feed_lines(p, lines)
    ends = [e for e in events if e.kind == "segment_end"]
    assert [e.data.get("reason") for e in ends] == ["result", "exit_marker"]
    assert ends[1].data["exit_code"] == 3 and ends[1].is_error is True and ends[1].segment == 0
    starts = [e for e in events if e.kind == "segment_start"]
    assert len(starts) == 1 and starts[0].segment == 1
    # the first JSON record after the exit marker opens the segment (here: the resume hook)
    assert starts[0].offset == sum(len(x) + 1 for x in lines[:5])
    inits = [e for e in events if e.kind == "session_init"]
    assert [e.segment for e in inits] == [0, 1]
    assert [e.data["session_id"] for e in inits] == ["s1", "s2"]
    noise = next(e for e in events if e.kind == "parse_error")
    assert noise.segment == 0 and noise.raw == lines[4]
    assert next(e for e in events if e.message_id == "m2").segment == 1
    assert p.state()["segment"] == 1


def test_second_init_without_marker_starts_segment_1():
    lines = [dumps(init_rec()), dumps(asst("m1", [{"type": "text", "text": "hi"}], U)), dumps(init_rec())]
    events = feed_lines(ClaudeStreamParser("a", "g"), lines)
    last = [e for e in events if e.offset == len(lines[0]) + len(lines[1]) + 2]
    # segment 0 never got its result: it was cut off where the next session starts (claude-code#8126)
    assert [(e.kind, e.sub, e.segment) for e in last] == [
        ("segment_end", 0, 0),
        ("segment_start", 1, 1),
        ("session_init", 2, 1),
    ]
    assert last[0].data["reason"] == "no_result" and last[0].data["incomplete"] is True and last[0].t is None


def test_concatenated_sessions_without_results_flag_the_run_incomplete(tmp_path):
    """A file of two sessions, the first without its result (cut off, then a new session appended):
    the run is flagged incomplete, in runs and in the replay header's flags (one SQL expression)."""
    from edgetui.store.database import open_db
    from edgetui.record.ingest import ingest_paths
    from edgetui.store.queries import transcript_flags

    res = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "session_id": "s1",
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    whole = [dumps(init_rec()), dumps(asst("m1", [{"type": "text", "text": "hi"}], U)), dumps(res)]
    cut = [
        dumps(init_rec()),
        dumps(asst("m1", [{"type": "text", "text": "hi"}], U)),
        dumps(init_rec()),
        dumps(asst("m2", [{"type": "text", "text": "again"}], U)),
        dumps(res),
    ]
    flags = {}
    for name, lines in (("whole", whole + whole), ("cut", cut)):
        f = tmp_path / f"{name}.jsonl"
        f.write_bytes(b"\n".join(lines) + b"\n")
        conn = open_db(tmp_path / f"{name}.duckdb")
        ingest_paths(conn, [f])
        key = conn.execute("SELECT run_key FROM runs").fetchone()[0]
        flags[name] = transcript_flags(conn, key)
        conn.close()
    assert "incomplete" not in flags["whole"], flags
    assert "incomplete" in flags["cut"], flags


def test_init_after_compaction_same_session_keeps_segment():
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "session_id": "s1",
        "compact_metadata": {"trigger": "auto", "pre_tokens": 160000},
    }
    lines = [
        dumps(init_rec()),
        dumps(asst("m1", [{"type": "text", "text": "hi"}], U)),
        dumps(boundary),
        dumps(init_rec()),
    ]
    events = feed_lines(ClaudeStreamParser("a", "g"), lines)
    assert {e.segment for e in events} == {0}
    comp = next(e for e in events if e.kind == "compaction")
    assert comp.data["pre_tokens"] == 160000 and comp.data["trigger"] == "auto"
    # ...but a different session id is a new process
    events = feed_lines(ClaudeStreamParser("a", "g"), lines[:3] + [dumps(init_rec("s9"))])
    assert events[-1].segment == 1


def test_exit_marker_glued_to_unterminated_line():
    glued = dumps(result_rec()) + b"__SFORGE_EXIT__0"
    events = ClaudeStreamParser("a", "g").feed(glued, 0)
    assert [e.kind for e in events] == ["agent_result", "segment_end", "segment_end"]
    assert events[2].data == {"reason": "exit_marker", "exit_code": 0} and events[2].is_error is False
    half = b'{"type":"assistant","mess' + b"__SFORGE_EXIT__137"
    events = ClaudeStreamParser("a", "g").feed(half, 50)
    assert [e.kind for e in events] == ["parse_error", "segment_end"]
    assert events[0].raw == b'{"type":"assistant","mess' and events[1].data["exit_code"] == 137
    assert [e.sub for e in events] == [0, 1]


def test_bad_input_never_raises():
    p = ClaudeStreamParser("a", "g")
    cases = {
        b"\xff\xfe{not utf8}": "parse_error",
        b'{"type":"user","message":{"content":"caf\xe9"}}': "parse_error",  # latin-1 byte
        b"[1, 2, 3]": "parse_error",
        b'"just a string"': "parse_error",
        b"42": "parse_error",
        b"{truncated": "parse_error",
        b'{"type":"weird_new_type","x":1}': "system",
        b'{"foo":1}': "system",
        b'{"type":"assistant"}': "system",
        b'{"type":"assistant","message":null}': "system",
        b'{"type":"user","message":{"content":5}}': "system",
        b'{"type":"system"}': "system",
        b'{"type":"result","total_cost_usd":"NaN","is_error":"yes"}': "agent_result",
        b'{"type":"assistant","message":{"id":7,"model":3,"content":[5,null,{"type":"tool_use","id":9,"name":null,"input":"x"}],"usage":{"input_tokens":"a"}}}': "agent_message",
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":1,"content":{"type":"image"}},{"type":"image","source":{}}]}}': "tool_result",
        b'{"type":"result","total_cost_usd":NaN}': "agent_result",
    }
    off = 0
    for line, first_kind in cases.items():
        events = p.feed(line, off)
        assert events and events[0].kind == first_kind, line
        for e in events:
            assert e.offset == off
            Event.model_validate(e.model_dump())
        off += len(line) + 1
    assert p.feed(b"", 999) == [] and p.feed(b"   \r", 1000) == []
    weird = p.feed(b'{"type":"weird_new_type","x":1}', 5)[0]
    assert weird.data["type"] == "weird_new_type"
    assert p.feed(b'{"foo":1}', 6)[0].data["type"] is None
    bad = p.feed(b"\xff\xfe", 7)[0]
    assert bad.data["reason"] == "invalid UTF-8" and bad.raw == b"\xff\xfe"
    r = p.feed(b'{"type":"result","total_cost_usd":NaN}', 8)[0]
    assert r.stated_cost_usd is None


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    typ=st.sampled_from(["assistant", "user", "system", "result", "progress", "summary", "x", None]),
    sub=st.sampled_from(["init", "compact_boundary", "hook_started", "api_retry", None]),
    message=JSONISH,
    content=JSONISH,
    extra=st.dictionaries(
        st.sampled_from(
            [
                "timestamp",
                "parent_tool_use_id",
                "isSidechain",
                "sessionId",
                "error",
                "uuid",
                "data",
                "hook_event",
                "total_cost_usd",
                "isCompactSummary",
                "message",
            ]
        ),
        JSONISH,
        max_size=4,
    ),
)
def test_fuzz_records_never_raise(typ, sub, message, content, extra):
    rec = {"type": typ, "subtype": sub, **extra}
    if isinstance(message, dict):
        message = {**message, "content": content}
    rec.setdefault("message", message)
    line = json.dumps(rec).encode()
    for cls in (ClaudeStreamParser, ClaudeSessionParser):
        p = cls("a", "g")
        events = p.feed(line, 0)
        assert events
        assert all(e.kind != "parse_error" for e in events), events[0].data
        for e in events:
            assert Event.model_validate(e.model_dump()).model_dump() == e.model_dump()
        json.dumps(p.state())


def test_split_usage_counted_once_and_survives_resume():
    lines = [
        dumps(init_rec()),
        dumps(asst("m1", [{"type": "thinking", "thinking": "", "signature": "abc"}], U)),
        dumps(asst("m1", [{"type": "text", "text": "a"}], U)),
        dumps(asst("m1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}], U)),
    ]
    p = ClaudeStreamParser("a", "g")
    events = feed_lines(p, lines[:2])
    p2 = ClaudeStreamParser("a", "g", json.loads(json.dumps(p.state())))
    events += feed_lines(p2, lines[2:], start=sum(len(x) + 1 for x in lines[:2]))
    with_usage = [e for e in events if e.usage is not None]
    assert len(with_usage) == 1 and with_usage[0].kind == "thinking"
    assert with_usage[0].usage.cache_write_tokens == 7
    assert all("usage_update" not in e.data for e in events)
    # a fresh parser (no state) would attach it again: the state is what prevents it
    again = ClaudeStreamParser("a", "g").feed(lines[2], 0)
    assert again[0].usage is not None


def test_timestamps():
    assert parse_timestamp("2025-06-01T12:00:00.123Z") == pytest.approx(1748779200.123)
    assert parse_timestamp("2025-06-01T14:00:00+02:00") == pytest.approx(1748779200.0)
    assert parse_timestamp("2025-06-01T12:00:00") == pytest.approx(1748779200.0)
    assert parse_timestamp(1748779200123) == pytest.approx(1748779200.123)
    assert parse_timestamp(1748779200.5) == 1748779200.5
    assert parse_timestamp("garbage") is None and parse_timestamp(True) is None and parse_timestamp(None) is None
    rec = user([{"type": "text", "text": "x"}], timestamp="2025-06-01T12:00:00.123Z")
    e = ClaudeStreamParser("a", "g").feed(dumps(rec), 0)[0]
    assert e.t == pytest.approx(1748779200.123) and e.t_source == "recorded"
    e = ClaudeStreamParser("a", "g").feed(dumps(user([{"type": "text", "text": "x"}])), 0)[0]
    assert e.t is None and e.t_source is None


def test_user_content_variants():
    p = ClaudeStreamParser("a", "g")
    rec = user(
        [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "is_error": True,
                "content": [
                    {"type": "text", "text": "line1"},
                    {"type": "image", "source": {}},
                    {"type": "text", "text": "line2"},
                ],
            },
            {"type": "text", "text": "Stop hook feedback:\n[/tmp/sforge-stop-hook.sh]: Do not stop."},
            {"type": "text", "text": "plain prompt"},
        ]
    )
    events = p.feed(dumps(rec), 0)
    assert [e.kind for e in events] == ["tool_result", "stop_hook_block", "user_message"]
    assert events[0].data["content"] == "line1\n[image]\nline2" and events[0].is_error is True
    assert events[0].level == "error"
    s = p.feed(dumps({"type": "user", "message": {"role": "user", "content": "just text"}}), 10)
    assert [(e.kind, e.data["text"]) for e in s] == [("user_message", "just text")]
    comp = p.feed(
        dumps(
            {
                "type": "user",
                "isCompactSummary": True,
                "message": {"role": "user", "content": "Summary of earlier work"},
            }
        ),
        20,
    )
    assert comp[0].kind == "compaction" and comp[0].data["phase"] == "summary"
    assert content_text(None) == "" and content_text("x") == "x"
    assert content_text([{"type": "text", "text": "a"}, "b", {"type": "document"}]) == "a\nb\n[document]"


def test_redacted_thinking_and_summaries():
    blocks = [
        {"type": "redacted_thinking", "data": "xx"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls   -la\n/app"}},
        {"type": "text", "text": "word " * 1000},
    ]
    events = ClaudeStreamParser("a", "g").feed(dumps(asst("m1", blocks, U)), 0)
    assert [e.kind for e in events] == ["thinking", "tool_call", "agent_message"]
    assert events[0].summary == "[redacted thinking]" and events[0].data["redacted"] is True
    assert events[1].summary == "Bash: ls -la /app" and events[1].data["input"] == {"command": "ls   -la\n/app"}
    assert len(events[2].summary) == 160 and events[2].summary.endswith("…")
    assert events[2].data["text"] == "word " * 1000


# ----------------------------------------------------------------------------- session specifics


def srec(typ, sid="S1", **kw):
    return {
        "type": typ,
        "sessionId": sid,
        "uuid": kw.pop("uuid", "u"),
        "parentUuid": None,
        "isSidechain": False,
        "timestamp": "2025-06-01T12:00:00.000Z",
        "cwd": "/w",
        "version": "2.1.0",
        **kw,
    }


def test_session_sidechain_progress_and_session_change():
    task_call = srec(
        "assistant",
        message={
            "id": "m1",
            "model": "claude-x",
            "content": [{"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"description": "explore"}}],
            "usage": U,
        },
    )
    side = srec("user", isSidechain=True, message={"role": "user", "content": "explore the repo"})
    side_a = srec(
        "assistant",
        isSidechain=True,
        message={"id": "m2", "model": "claude-x", "content": [{"type": "text", "text": "found it"}], "usage": U},
    )
    prog = srec(
        "progress",
        toolUseID="agent_msg_1",
        parentToolUseID="toolu_T",
        data={
            "type": "agent_progress",
            "message": {
                "type": "assistant",
                "timestamp": "2025-06-01T12:00:05.000Z",
                "message": {
                    "id": "m3",
                    "model": "claude-x",
                    "content": [{"type": "tool_use", "id": "toolu_inner", "name": "Grep", "input": {"pattern": "x"}}],
                    "usage": U,
                },
            },
        },
    )
    hook = srec(
        "progress",
        toolUseID="toolu_T",
        parentToolUseID="toolu_T",
        data={"type": "hook_progress", "hookName": "PostToolUse:Task"},
    )
    res = srec(
        "user",
        message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_T", "content": "done"}]},
    )
    orphan = srec("user", isSidechain=True, agentId="a77", message={"role": "user", "content": "hi"})
    other = srec("user", sid="S2", message={"role": "user", "content": "new session"})
    lines = [dumps(x) for x in (task_call, side, side_a, prog, hook, res, orphan, other)]
    p = ClaudeSessionParser("s.jsonl", "g")
    events = feed_lines(p, lines)
    assert events[0].kind == "session_init" and events[0].data["session_id"] == "S1"
    assert events[0].data["claude_code_version"] == "2.1.0" and events[0].t is not None
    by_kind = [(e.kind, e.parent_tool_use_id) for e in events]
    assert ("user_message", "toolu_T") in by_kind and ("agent_message", "toolu_T") in by_kind
    inner = next(e for e in events if e.tool_use_id == "toolu_inner")
    assert inner.kind == "tool_call" and inner.parent_tool_use_id == "toolu_T"
    assert inner.t == pytest.approx(iso_epoch("2025-06-01T12:00:05.000Z"))
    hook_ev = next(e for e in events if e.kind == "system" and e.data.get("type") == "progress")
    assert hook_ev.tool_use_id == "toolu_T" and hook_ev.parent_tool_use_id is None
    orphan_ev = next(e for e in events if e.data.get("text") == "hi")
    assert orphan_ev.parent_tool_use_id == "agent:a77" and orphan_ev.data["sidechain"] is True
    last = [e for e in events if e.offset == sum(len(x) + 1 for x in lines[:-1])]
    assert [(e.kind, e.segment) for e in last] == [("segment_start", 1), ("session_init", 1), ("user_message", 1)]
    assert sum(1 for e in events if e.usage is not None) == 3


# ----------------------------------------------------------------------------- sforge-submit

RULE = "=" * 40
SUBMIT_OK = f"""
{RULE}
  Submitting for evaluation
  Archive size: 18342 bytes
  Waiting for test results...
{RULE}

  Round: agent-3  (remaining submissions: 7)

{RULE}
  agent-3 Results
{RULE}
  Score:       826577
  Pass rate:   85.5%
  Passed:      171/200

  Summary:
    171/200 tests passed. Failed: target_7

  Metrics:
    compile_time_seconds: 342

  Failed checks:
    - target_7
    - target_9
    ... and 27 more
{RULE}
"""

SUBMIT_INVALID = f"""
{RULE}
  Submitting for evaluation
  Archive size: 1000 bytes
  Waiting for test results...
{RULE}

  Round: agent-4

{RULE}
  agent-4 Results
{RULE}
  Valid:       no
  Pass rate:   0%
  Passed:      0/12

  Summary:
    build failed

  Failed tests:
    - test_a
{RULE}
"""

SUBMIT_ERROR = f"""
{RULE}
  Submitting for evaluation
  Archive size: 1000 bytes
  Waiting for test results...
{RULE}

  Round: agent-5  (remaining submissions: 2)

{RULE}
  agent-5: ERROR
  Evaluation container failed: OOMKilled
{RULE}
"""

COOLDOWN = """
========================================
  Submitting for evaluation
  Archive size: 1000 bytes
  Waiting for test results...
========================================

COOLDOWN: Please wait 412 seconds before submitting again
Please wait 412 seconds before submitting again
"""

LIMIT = "SUBMISSION LIMIT REACHED: Submission budget exhausted (20/20)\nSubmission budget exhausted (20/20)\n"

LISTING = f"""
{RULE}
  Submission History
  Total submissions: 3
  Best pass rate: 85.5%
  Best score: 826577
{RULE}

  ROUND          STATUS     VALID    PASS_RATE    SCORE      SUMMARY
  -----          ------     -----    ---------    -----      -------
  agent-1        completed  yes      12.5%        100        25/200 tests passed
  agent-2        completed  no       0%           -          build failed
  agent-3        completed  yes      85.5%        826577     171/200 tests passed. Failed: tar...

"""


def test_parse_submit_success():
    r = parse_sforge_submit_output(SUBMIT_OK)
    assert r["mode"] == "submit" and r["status"] == "completed"
    assert r["round"] == "agent-3" and r["remaining"] == 7
    assert r["valid"] is True and r["score"] == 826577.0 and isinstance(r["score"], float)
    assert r["pass_rate"] == pytest.approx(0.855) and (r["passed"], r["total"]) == (171, 200)
    assert r["summary"] == "171/200 tests passed. Failed: target_7"
    assert r["metrics"] == {"compile_time_seconds": "342"}
    assert r["failed"] == ["target_7", "target_9"] and r["failed_more"] == 27
    assert "error" not in r and "rejected" not in r


def test_parse_submit_invalid():
    r = parse_sforge_submit_output(SUBMIT_INVALID)
    assert r["round"] == "agent-4" and "remaining" not in r
    assert r["valid"] is False and "score" not in r
    assert r["pass_rate"] == 0.0 and (r["passed"], r["total"]) == (0, 12)
    assert r["failed"] == ["test_a"] and r["summary"] == "build failed"


def test_parse_submit_error_result():
    r = parse_sforge_submit_output(SUBMIT_ERROR)
    assert r["status"] == "error" and r["round"] == "agent-5" and r["remaining"] == 2
    assert r["error"] == "Evaluation container failed: OOMKilled"
    assert "pass_rate" not in r and "valid" not in r


def test_parse_submit_rejections():
    r = parse_sforge_submit_output(COOLDOWN)
    assert r["status"] == "rejected" and r["rejected"] == "cooldown" and "round" not in r
    assert r["detail"] == "Please wait 412 seconds before submitting again"
    r = parse_sforge_submit_output(LIMIT)
    assert r["rejected"] == "limit" and r["detail"] == "Submission budget exhausted (20/20)"
    r = parse_sforge_submit_output("ERROR: Evaluation timed out or judge unreachable\n")
    assert r["status"] == "failed" and r["error"] == "Evaluation timed out or judge unreachable"
    # tool timeout: round consumed, result never printed
    r = parse_sforge_submit_output(SUBMIT_OK.split("  agent-3 Results")[0])
    assert r["status"] == "pending" and r["round"] == "agent-3"


def test_parse_submit_list():
    r = parse_sforge_submit_output(LISTING)
    assert r["mode"] == "list" and "round" not in r
    assert r["total_submissions"] == 3 and r["best_pass_rate"] == pytest.approx(0.855)
    assert r["best_score"] == 826577.0
    assert [e["round"] for e in r["entries"]] == ["agent-1", "agent-2", "agent-3"]
    assert r["entries"][1] == {
        "round": "agent-2",
        "status": "completed",
        "valid": False,
        "pass_rate": 0.0,
        "score": None,
        "summary": "build failed",
    }
    assert r["entries"][0]["pass_rate"] == pytest.approx(0.125) and r["entries"][0]["score"] == 100.0


def test_parse_submit_unrelated_text():
    assert parse_sforge_submit_output("") == {}
    assert parse_sforge_submit_output("total 12\n-rw-r--r-- 1 a b 0 x.py\n") == {}
    assert parse_sforge_submit_output("User-agent-3 Results of the crawl") == {}


@pytest.mark.parametrize(
    "command,mode",
    [
        ("sforge-submit", "submit"),
        ("cd /app && sforge-submit 2>&1 | tail -40", "submit"),
        ("timeout 7200 sforge-submit --details", "details"),
        ("/usr/local/bin/sforge-submit -l", "list"),
        ("sforge-submit --list", "list"),
        ("SFORGE_PATCH_DIR=/app bash -c 'sforge-submit'", "submit"),
        ("git add -A; sforge-submit -d", "details"),
        ("cat /usr/local/bin/sforge-submit", None),
        ("echo run sforge-submit later", None),
        ("grep -n sforge-submit notes.md", None),
        ("ls -la", None),
    ],
)
def test_sforge_submit_mode(command, mode):
    assert sforge_submit_mode(command) == mode


def test_submit_round_trip_in_stream():
    call = asst(
        "m1",
        [
            {
                "type": "tool_use",
                "id": "t1",
                "name": "Bash",
                "input": {"command": "cd /app && sforge-submit", "timeout": 600000},
            }
        ],
        U,
    )
    call2 = asst("m2", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "sforge-submit"}}], U)
    call3 = asst(
        "m3", [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "sforge-submit --list"}}], U
    )
    lines = [
        dumps(init_rec()),
        dumps(call),
        dumps(user([{"type": "tool_result", "tool_use_id": "t1", "content": SUBMIT_OK, "is_error": False}])),
        dumps(call2),
        dumps(
            user(
                [{"type": "tool_result", "tool_use_id": "t2", "content": "Exit code 1\n" + COOLDOWN, "is_error": True}]
            )
        ),
        dumps(call3),
        dumps(user([{"type": "tool_result", "tool_use_id": "t3", "content": LISTING}])),
        # a result whose call this parser never saw, still carrying a round
        dumps(user([{"type": "tool_result", "tool_use_id": "zz", "content": SUBMIT_ERROR}])),
        dumps(user([{"type": "tool_result", "tool_use_id": "yy", "content": "ordinary output"}])),
    ]
    p = ClaudeStreamParser("a", "g")
    events = feed_lines(p, lines[:3])
    # resume in the middle: the pending submit ids live in the state
    p2 = ClaudeStreamParser("a", "g", json.loads(json.dumps(p.state())))
    events += feed_lines(p2, lines[3:], start=sum(len(x) + 1 for x in lines[:3]))
    calls = [e for e in events if e.kind == "tool_call"]
    assert [(e.data["sforge_submit"], e.data["submit_mode"]) for e in calls] == [
        (True, "submit"),
        (True, "submit"),
        (True, "list"),
    ]
    res = [e for e in events if e.kind == "tool_result"]
    assert res[0].round == "agent-3" and res[0].data["submit_result"]["score"] == 826577.0
    assert res[0].summary == "agent-3: score 826577 pass 85.5% (171/200)"
    assert res[1].round is None and res[1].data["submit_result"]["rejected"] == "cooldown"
    assert res[1].is_error is True
    assert res[2].round is None and res[2].data["submit_result"]["mode"] == "list"
    assert res[3].round == "agent-5" and res[3].data["submit_result"]["status"] == "error"
    assert "submit_result" not in res[4].data and res[4].round is None
    assert p2.state()["submits"] == []


def test_formats_registry():
    from edgetui.parsers import claude

    assert claude._make_event is claude._fast_event  # the unvalidated fast path is in use
    assert FORMATS == {"claude_stream": ClaudeStreamParser, "claude_session": ClaudeSessionParser}
    assert ClaudeStreamParser.agent_format == "claude_stream"
    assert ClaudeSessionParser.agent_format == "claude_session"


def test_detect_format_synthetic():
    stream = b"bash: no job control in this shell\n" + dumps(init_rec()) + b"\n"
    assert detect_claude_format(stream) == "claude_stream"
    session = dumps({"type": "summary", "summary": "x", "leafUuid": "l"}) + b"\n" + dumps(srec("user")) + b"\n"
    assert detect_claude_format(session) == "claude_session"
    big_first = dumps(srec("user", message={"content": "x" * 70000}))[:65536]
    assert detect_claude_format(big_first) == "claude_session"
    big_stream = dumps(init_rec() | {"tools": ["t" * 10] * 9000})[:65536]
    assert detect_claude_format(big_stream) == "claude_stream"
    assert detect_claude_format(b"OpenAI Codex v0.130.0 (research preview)\n--------\n") is None
    assert detect_claude_format(b"") is None
    assert detect_claude_format(b'{"type":"step_start","sessionID":"x","part":{}}\n') is None


def test_tool_reference_blocks_keep_their_tool_names():
    """Anthropic's tool search answers with ``{"type": "tool_reference", "tool_name": …}`` blocks (in a
    tool_result's content, a server-side ``tool_search_tool_result``, or alone): the names were lost
    as a bare ``[tool_reference]``; they are in the summary and ``data.tool_references`` (and the
    ``tool_name`` of a lone block)."""
    sid = {"session_id": "s-1"}
    lines = [
        {
            "type": "assistant",
            **sid,
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "github issue"}},
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": "srvtoolu_2",
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [{"type": "tool_reference", "tool_name": "mcp__github__search_issues"}],
                        },
                    },
                ],
            },
        },
        {
            "type": "user",
            **sid,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [
                            {"type": "tool_reference", "tool_name": "mcp__github__create_issue"},
                            {"type": "tool_reference", "tool_name": "mcp__github__list_issues"},
                        ],
                    }
                ],
            },
        },
        {
            "type": "user",
            **sid,
            "message": {"role": "user", "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]},
        },
    ]
    data = b"".join(json.dumps(o).encode() + b"\n" for o in lines)
    events, _parser = parse_bytes(ClaudeStreamParser, data)
    res = [e for e in events if e.kind == "tool_result"]
    server, result = sorted(res, key=lambda e: e.tool_use_id != "srvtoolu_2")
    assert "mcp__github__search_issues" in server.summary
    assert server.data["tool_references"] == ["mcp__github__search_issues"]
    assert "mcp__github__create_issue" in result.summary and "mcp__github__list_issues" in result.data["content"]
    assert result.data["tool_references"] == ["mcp__github__create_issue", "mcp__github__list_issues"]
    (lone,) = [e for e in events if e.kind == "user_message"]
    assert lone.tool_name == "WebFetch" and "WebFetch" in lone.summary
    for e in events:
        Event.model_validate(e.model_dump())


def test_finish_after_a_restored_cursor_says_the_same_as_after_the_whole_file():
    """A finished run's cut-off stream: the parser that read the whole file and one restored from
    the cursor saved after its last line (the live supervisor meeting an already-recorded run) give
    the same end-of-file ``segment_end``, at the last line's offset (it was at offset 0: one event
    more live than offline, seen on the bundled game sample)."""
    lines = [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s1", "model": "m"}),
        json.dumps(
            {
                "type": "assistant",
                "session_id": "s1",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "model": "m",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
                },
            }
        ),
    ]
    data = ("\n".join(lines) + "\n").encode()
    whole = ClaudeStreamParser("agent_output.txt", "g1")
    last = None
    for ln in iter_lines(io.BytesIO(data), 0, final=True):
        whole.feed(ln.data, ln.offset)
        last = ln.offset
    restored = ClaudeStreamParser("agent_output.txt", "g1", json.loads(json.dumps(whole.state())))
    a, b = whole.finish(), restored.finish()
    assert [e.kind for e in a] == ["segment_end"] and last and last > 0
    assert [(e.kind, e.offset, e.sub, e.summary) for e in b] == [(e.kind, e.offset, e.sub, e.summary) for e in a]
    assert b[0].offset == last


def test_usage_without_validation_is_the_validated_usage():
    """The parsers' Usage (make_usage: no validation, checked at import) equals, hashes and dumps as
    the validated model, and is what a parsed assistant record carries."""
    from edgetui.events import Usage, make_usage
    from edgetui.parsers.claude import ClaudeStreamParser

    a = make_usage(10, 20, 30, 40)
    b = Usage(input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40)
    assert a == b and hash(a) == hash(b) and a.model_dump() == b.model_dump() and type(a) is Usage
    line = (
        b'{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}],'
        b'"usage":{"input_tokens":5,"output_tokens":"x","cache_read_input_tokens":7.9,'
        b'"cache_creation_input_tokens":true}}}'
    )
    ev = ClaudeStreamParser("agent_output.jsonl", "g").feed(line, 0)[0]
    assert ev.usage == Usage(input_tokens=5, output_tokens=0, cache_read_tokens=7, cache_write_tokens=1)
