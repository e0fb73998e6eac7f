"""Codex (text, exec --json, rollout) and OpenCode parsers, format detection.

Corpus tests compute their expectations independently with the stdlib ``json``
module and compare them with the parsers' events; they skip when the shared
data folder (``../shared/data`` beside the clone) is absent. The Codex text
tests use the hand-written fixtures in ``tests/fixtures/codex_text/`` (see the
README there: written from the SForge reference §6.3, docs/transcript-formats.md §5;
not captured from Codex).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgetui.events import Event, Kind
from edgetui.parsers.base import iter_lines
from edgetui.parsers.codex import CodexJsonParser, CodexRolloutParser, CodexTextParser
from edgetui.times import iso8601_to_epoch
from edgetui.parsers.detect import FORMATS, detect_format, parser_for
from edgetui.parsers.opencode import OpenCodeParser

from conftest import SHARED_DATA as DATA, need_shared_data  # (../shared/data or EDGETUI_SHARED_DATA)

CORPUS = DATA / "transcript-corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "codex_text"
# the corpus fixture (conftest.need_corpus): without the corpus a test skips locally, fails under CI=true
needs_corpus = pytest.mark.usefixtures("corpus")


def corpus_files(folder: str) -> list[Path]:
    d = CORPUS / folder
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []


def or_missing(paths: list[Path], folder: str) -> list[Path]:
    """``paths``, or one case naming the missing folder: a parametrized test over an empty list would be
    skipped silently by pytest, even under CI=true; this one case runs and says (need_shared_data)."""
    return paths or [CORPUS / folder / "(missing)"]


ROLLOUTS = or_missing([p for p in corpus_files("C") if "rollout" in p.name], "C")
EXEC_JSON = or_missing([p for p in corpus_files("C") if "exec-json" in p.name], "C")
OPENCODE = or_missing(corpus_files("D"), "D")
TEXT_FIXTURES = sorted(FIXTURES.glob("*.txt"))


def ids(paths):
    return [p.name for p in paths]


def parse_bytes(parser_cls, data: bytes, source: str = "agent_output.txt", generation: str = "gen"):
    parser = parser_cls(source, generation)
    events = []
    for ln in iter_lines(io.BytesIO(data)):
        events += parser.feed(ln.data, ln.offset)
    events += parser.finish()
    return events


def parse_file(parser_cls, path: Path):
    return parse_bytes(parser_cls, path.read_bytes(), source=path.name)


def feed_lines(parser, lines: list[bytes], start: int = 0):
    out, off = [], start
    for ln in lines:
        out += parser.feed(ln, off)
        off += len(ln) + 1
    return out


def of_kind(events, kind: Kind):
    return [e for e in events if e.kind == kind.value]


def json_lines(path: Path):
    """(offset, object) of every line, with plain json (objects only)."""
    out = []
    off = 0
    for piece in path.read_bytes().split(b"\n"):
        if piece.strip():
            o = json.loads(piece.decode("utf-8"))
            if isinstance(o, dict):
                out.append((off, o))
        off += len(piece) + 1
    return out


def iso_epoch(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


# ----------------------------------------------------------------------------- all corpus files


CASES = (
    [(p, CodexRolloutParser) for p in ROLLOUTS]
    + [(p, CodexJsonParser) for p in EXEC_JSON]
    + [(p, OpenCodeParser) for p in OPENCODE]
)


@needs_corpus
@pytest.mark.parametrize("path,parser_cls", CASES, ids=[p.name for p, _ in CASES])
def test_corpus_parses_cleanly(path: Path, parser_cls):
    events = parse_file(parser_cls, path)
    assert events
    assert not of_kind(events, Kind.PARSE_ERROR)
    n_lines = sum(1 for ln in path.read_bytes().split(b"\n") if ln.strip())
    offsets = {off for off, _ in json_lines(path)}
    assert len(offsets) == n_lines
    assert {e.offset for e in events} <= offsets
    # identity: (offset, sub) unique, subs dense per record
    per_offset: dict[int, list[int]] = {}
    for e in events:
        per_offset.setdefault(e.offset, []).append(e.sub)
        assert e.source == path.name and e.generation == "gen"
        assert e.agent_format == parser_cls.agent_format
        assert e.summary and "\n" not in e.summary
        Event.model_validate(e.model_dump())
    from edgetui.parsers.base import END_OF_FILE_SUB

    # a cut-off stream ends with one "incomplete" segment_end after its last line (END_OF_FILE_SUB)
    for e in events:
        if e.sub == END_OF_FILE_SUB:
            assert e is events[-1] and e.kind == "segment_end" and e.data["incomplete"] is True
            assert e.offset == max(offsets)
            per_offset[e.offset].remove(END_OF_FILE_SUB)
    for subs in per_offset.values():
        assert subs == list(range(len(subs)))


@needs_corpus
@pytest.mark.parametrize("path", ROLLOUTS, ids=ids(ROLLOUTS))
def test_rollout_counts_match_independent_json(path: Path):
    events = parse_file(CodexRolloutParser, path)
    rec = json_lines(path)
    call_ids, out_ids, end_codes, assistant, user_msgs, token_counts, args = [], [], {}, 0, [], [], {}
    ts = {}
    for off, o in rec:
        ts[off] = iso_epoch(o["timestamp"])
        p = o.get("payload") or {}
        if o["type"] == "response_item":
            if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
                call_ids.append(p["call_id"])
                if p.get("type") == "function_call":
                    args[p["call_id"]] = json.loads(p["arguments"])
            elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
                out_ids.append(p["call_id"])
            elif p.get("type") == "message" and p.get("role") == "assistant":
                assistant += 1
        elif o["type"] == "event_msg":
            if p.get("type") == "exec_command_end":
                end_codes[p["call_id"]] = p["exit_code"]
            elif p.get("type") == "user_message":
                user_msgs.append(p["message"])
            elif p.get("type") == "token_count" and p.get("info"):
                token_counts.append(p["info"]["last_token_usage"])

    calls, results = of_kind(events, Kind.TOOL_CALL), of_kind(events, Kind.TOOL_RESULT)
    assert len(calls) == len(set(call_ids)) == len(call_ids)
    assert [e.tool_use_id for e in calls] == call_ids
    assert [e.tool_use_id for e in results] == out_ids
    # calls without output (the beam file is cut off) stay unpaired
    assert {e.tool_use_id for e in calls} - {e.tool_use_id for e in results} == set(call_ids) - set(out_ids)
    for e in calls:
        if e.tool_use_id in args:
            assert e.data["arguments"] == args[e.tool_use_id]
            assert e.data["command"] == args[e.tool_use_id]["cmd"]
    by_id = {e.tool_use_id: e for e in results}
    for cid, code in end_codes.items():
        if cid in by_id:
            assert by_id[cid].data["exit_code"] == code
            assert by_id[cid].is_error is (code != 0)
    assert len(of_kind(events, Kind.AGENT_MESSAGE)) == assistant
    assert [e.data["text"] for e in of_kind(events, Kind.USER_MESSAGE)] == user_msgs
    usage = [e for e in of_kind(events, Kind.TOKEN_USAGE) if e.usage is not None]
    assert len(usage) == len(token_counts)
    for e, u in zip(usage, token_counts):
        # edgetui convention: input_tokens is uncached input (reported input - cached)
        assert (e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens) == (
            u["input_tokens"] - u["cached_input_tokens"],
            u["output_tokens"],
            u["cached_input_tokens"],
        )
    # every event carries its line's recorded time as an epoch float
    for e in events:
        assert isinstance(e.t, float) and e.t_source == "recorded"
        assert e.t == pytest.approx(ts[e.offset], rel=0, abs=1e-6)
    assert len(of_kind(events, Kind.SESSION_INIT)) == sum(1 for _, o in rec if o["type"] == "session_meta")
    # lines without an event: event_msg mirrors of response items, and exec/patch ends that come
    # before their output (their exit code / duration go into that output's tool_result)
    out_offset = {}
    for off, o in rec:
        p = o.get("payload") or {}
        if o["type"] == "response_item" and p.get("type") in ("function_call_output", "custom_tool_call_output"):
            out_offset[p["call_id"]] = off
    silent = set()
    for off, o in rec:
        p = o.get("payload") or {}
        if o["type"] != "event_msg":
            continue
        if p.get("type") in ("agent_message", "user_message", "agent_reasoning"):
            silent.add(off)
        elif p.get("type") in ("exec_command_end", "patch_apply_end") and out_offset.get(p.get("call_id"), -1) > off:
            silent.add(off)
    assert {off for off, _ in rec} - {e.offset for e in events} == silent


@needs_corpus
def test_rollout_scout_patches_and_failures():
    path = need_shared_data(CORPUS / "C" / "scout-rollout-0.142.4-tui.jsonl")
    events = parse_file(CodexRolloutParser, path)
    patches = [e for e in of_kind(events, Kind.TOOL_CALL) if e.tool_name == "apply_patch"]
    assert len(patches) == 2
    assert all(e.data["patch"].startswith("*** Begin Patch") for e in patches)
    assert patches[0].data["files"] == [".config/opencode/opencode.jsonc"]
    res = {e.tool_use_id: e for e in of_kind(events, Kind.TOOL_RESULT)}
    assert all(res[p.tool_use_id].data["exit_code"] == 0 for p in patches)
    sess = of_kind(events, Kind.SESSION_INIT)[0]
    assert sess.data["session_id"] == "019f522f-ea1b-7622-b951-584ce660e69d"
    assert of_kind(events, Kind.AGENT_MESSAGE)[-1].model == "gpt-5.5"


@needs_corpus
def test_rollout_beam_failed_commands():
    path = need_shared_data(CORPUS / "C" / "beam-rollout-0.122.0-alpha.13.jsonl")
    events = parse_file(CodexRolloutParser, path)
    failed = [e for e in of_kind(events, Kind.TOOL_RESULT) if e.is_error]
    assert sorted(e.data["exit_code"] for e in failed) == [2, 128, 128]
    assert all(e.level == "error" for e in failed)
    # "rate limits" token_count (info null) carries no usage
    assert not [e for e in of_kind(events, Kind.TOKEN_USAGE) if e.usage is None]


@needs_corpus
@pytest.mark.parametrize("path", EXEC_JSON, ids=ids(EXEC_JSON))
def test_exec_json_counts_match_independent_json(path: Path):
    events = parse_file(CodexJsonParser, path)
    rec = json_lines(path)
    tool_types = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
    tool_ids, completed_cmd, completed_tools, messages, usages = set(), [], 0, 0, []
    for _, o in rec:
        item = o.get("item") or {}
        if o["type"].startswith("item.") and item.get("type") in tool_types:
            tool_ids.add(item["id"])
            if o["type"] == "item.completed":
                completed_tools += 1
                if item["type"] == "command_execution":
                    completed_cmd.append(item)
        if o["type"] == "item.completed" and item.get("type") == "agent_message":
            messages += 1
        if o["type"] == "turn.completed":
            usages.append(o["usage"])
    calls, results = of_kind(events, Kind.TOOL_CALL), of_kind(events, Kind.TOOL_RESULT)
    assert len(calls) == len(tool_ids)
    assert len(results) == completed_tools
    execs = [e for e in results if e.tool_name == "exec"]
    assert len(execs) == len(completed_cmd)
    assert [e.data["exit_code"] for e in execs] == [i["exit_code"] for i in completed_cmd]
    assert [e.is_error for e in execs] == [i["exit_code"] != 0 for i in completed_cmd]
    assert [e.data["content"] for e in execs] == [i["aggregated_output"] for i in completed_cmd]
    assert {e.tool_use_id for e in calls} == {e.tool_use_id for e in results}
    assert len(of_kind(events, Kind.AGENT_MESSAGE)) == messages
    tok = of_kind(events, Kind.TOKEN_USAGE)
    assert [(e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens) for e in tok] == [
        (u["input_tokens"] - u["cached_input_tokens"], u["output_tokens"], u["cached_input_tokens"]) for u in usages
    ]
    assert tok[0].data["cumulative"] is None  # first turn: nothing to compare with
    assert all(e.t is None for e in events)  # the stream has no clock


@needs_corpus
def test_exec_json_failed_command_and_todo():
    path = need_shared_data(CORPUS / "C" / "llmtaste-exec-json-turn2-todo-filechange-cmd.jsonl")
    events = parse_file(CodexJsonParser, path)
    failed = [e for e in of_kind(events, Kind.TOOL_RESULT) if e.is_error]
    assert len(failed) == 1 and failed[0].data["exit_code"] == 1
    assert failed[0].data["content"].startswith("# github.com/juhokoskela/pipedrive-go/pipedrive/v1")
    todos = [e for e in of_kind(events, Kind.SYSTEM) if "todo" in e.data]
    assert [sum(x["completed"] for x in e.data["todo"]) for e in todos] == [0, 2, 4, 4]
    changes = [e for e in of_kind(events, Kind.TOOL_CALL) if e.tool_name == "file_change"]
    assert len(changes) == 3 and changes[0].data["changes"][0]["kind"] == "update"


@needs_corpus
@pytest.mark.parametrize("path", OPENCODE, ids=ids(OPENCODE))
def test_opencode_counts_match_independent_json(path: Path):
    events = parse_file(OpenCodeParser, path)
    rec = json_lines(path)
    tools = [o for _, o in rec if o["type"] == "tool_use"]
    finishes = [o for _, o in rec if o["type"] == "step_finish"]
    texts = [o for _, o in rec if o["type"] == "text"]
    ts = {off: o["timestamp"] / 1000 for off, o in rec}
    calls, results = of_kind(events, Kind.TOOL_CALL), of_kind(events, Kind.TOOL_RESULT)
    assert [e.tool_use_id for e in calls] == [o["part"]["callID"] for o in tools]
    done = [o for o in tools if o["part"]["state"]["status"] in ("completed", "error")]
    assert [e.tool_use_id for e in results] == [o["part"]["callID"] for o in done]
    assert [e.data["exit_code"] for e in results] == [o["part"]["state"]["metadata"]["exit"] for o in done]
    assert [e.data["content"] for e in results] == [o["part"]["state"]["output"] for o in done]
    assert [e.data["command"] for e in calls] == [o["part"]["state"]["input"]["command"] for o in tools]
    assert [e.t for e in calls] == pytest.approx(
        [o["part"]["state"]["time"]["start"] / 1000 for o in tools], rel=0, abs=1e-6
    )
    assert [e.t for e in results] == pytest.approx(
        [o["part"]["state"]["time"]["end"] / 1000 for o in done], rel=0, abs=1e-6
    )
    tok = of_kind(events, Kind.TOKEN_USAGE)
    assert len(tok) == len(finishes)
    for e, o in zip(tok, finishes):
        t = o["part"]["tokens"]
        assert (e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens, e.usage.cache_write_tokens) == (
            t["input"],
            t["output"],
            t["cache"]["read"],
            t["cache"]["write"],
        )
        assert e.stated_cost_usd == pytest.approx(o["part"]["cost"])
        assert e.data["reason"] == o["part"]["reason"]
    assert [e.data["text"] for e in of_kind(events, Kind.AGENT_MESSAGE)] == [o["part"]["text"] for o in texts]
    sids = {o["sessionID"] for _, o in rec}
    assert len(of_kind(events, Kind.SESSION_INIT)) == len(sids)
    for e in events:
        assert e.data["session_id"] in sids
        assert isinstance(e.t, float) and e.t_source == "recorded"
        if e.kind not in (Kind.TOOL_CALL.value, Kind.TOOL_RESULT.value):
            assert e.t == pytest.approx(ts[e.offset], rel=0, abs=1e-6)


# ----------------------------------------------------------------------------- detection


@needs_corpus
def test_detect_format_on_corpus():
    expected_by_folder = {"A": "claude_stream", "B": "claude_session", "D": "opencode"}
    seen = Counter()
    for folder in "ABCD":
        for path in corpus_files(folder):
            if folder == "C":
                want = "codex_rollout" if "rollout" in path.name else "codex_json"
            else:
                want = expected_by_folder[folder]
            head = path.read_bytes()[: 64 * 1024]
            assert detect_format(head, path.name) == want, path.name
            seen[folder] += 1
    assert all(seen[f] > 0 for f in "ABCD")


def test_detect_format_codex_text_fixtures():
    assert len(TEXT_FIXTURES) == 3
    for path in TEXT_FIXTURES:
        assert detect_format(path.read_bytes()[: 64 * 1024], path.name) == "codex_text"


def test_detect_format_synthetic():
    assert detect_format(b"") == "unknown"
    assert detect_format(b"just some text\nmore text\n") == "unknown"
    assert detect_format(b"\xef\xbb\xbf" + b"OpenAI Codex v0.130.0 (research preview)\n--------\n") == "codex_text"
    assert detect_format(b"Reading additional input from stdin...\n") == "codex_text"
    noisy = b"bash: no job control in this shell\n" + json.dumps({"type": "thread.started", "thread_id": "x"}).encode()
    assert detect_format(noisy + b"\n") == "codex_json"
    oc = {"type": "step_start", "timestamp": 1, "sessionID": "ses_1", "part": {"type": "step-start"}}
    assert detect_format(json.dumps(oc).encode() + b"\n") == "opencode"
    # a first rollout line cut by the 64 KiB window
    meta = {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "s", "base_instructions": {"text": "x" * 100_000}},
    }
    head = json.dumps(meta).encode()[: 64 * 1024]
    assert detect_format(head) == "codex_rollout"
    assert detect_format(b'[1, 2]\n"str"\n') == "unknown"
    assert detect_format(b"", "rollout-2026-01-01T00-00-00-abc.jsonl") == "codex_rollout"
    # JSON before a Codex-looking line wins (a Claude stream that talks about Codex)
    claude = {"type": "system", "subtype": "init", "session_id": "s", "model": "m"}
    assert detect_format(json.dumps(claude).encode() + b"\nOpenAI Codex v1 (research preview)\n") == "claude_stream"


def test_parser_for_every_format():
    from edgetui.parsers.claude import ClaudeStreamParser
    from edgetui.parsers.claude_session import ClaudeSessionParser

    want = {
        "claude_stream": ClaudeStreamParser,
        "claude_session": ClaudeSessionParser,
        "codex_text": CodexTextParser,
        "codex_json": CodexJsonParser,
        "codex_rollout": CodexRolloutParser,
        "opencode": OpenCodeParser,
    }
    assert set(FORMATS) == set(want)
    for fmt, cls in want.items():
        p = parser_for(fmt, "src", "gen")
        assert type(p) is cls
        assert p.source == "src" and p.generation == "gen"
    resumed = parser_for("codex_json", "src", "gen", {"segment": 3, "seg_init": True, "after_exit": False})
    assert resumed.state()["segment"] == 3
    with pytest.raises(ValueError):
        parser_for("unknown", "src", "gen")


# ----------------------------------------------------------------------------- state round trip


def split_round_trip(parser_cls, data: bytes, cut_index: int):
    """Parse lines[:cut_index] with one parser, the rest with a fresh one resumed from its state."""
    lines = list(iter_lines(io.BytesIO(data)))
    first = parser_cls("src", "gen")
    events = []
    for ln in lines[:cut_index]:
        events += first.feed(ln.data, ln.offset)
    state = json.loads(json.dumps(first.state()))  # must survive JSON persistence
    ro = first.resume_offset()
    start = ro if ro is not None else (lines[cut_index].offset if cut_index < len(lines) else len(data))
    second = parser_cls("src", "gen", state)
    for ln in iter_lines(io.BytesIO(data), start):
        events += second.feed(ln.data, ln.offset)
    events += second.finish()
    return events, ro


ROUND_TRIP = CASES + [(p, CodexTextParser) for p in TEXT_FIXTURES]


@pytest.mark.parametrize("path,parser_cls", ROUND_TRIP, ids=[p.name for p, _ in ROUND_TRIP])
def test_state_round_trip_matches_single_pass(path: Path, parser_cls):
    need_shared_data(path)
    data = path.read_bytes()
    whole = [e.model_dump() for e in parse_bytes(parser_cls, data, source="src")]
    n = len(list(iter_lines(io.BytesIO(data))))
    held = 0
    for cut in range(n + 1):
        events, ro = split_round_trip(parser_cls, data, cut)
        held += ro is not None
        assert [e.model_dump() for e in events] == whole, f"cut at line {cut}"
    if parser_cls is CodexTextParser:
        assert held > 0  # the text parser really held blocks across cuts
    else:
        assert held == 0


def _exit_stream(record: dict) -> bytes:
    line = json.dumps(record).encode()
    return b"\n".join([line, b"noise", b"__SFORGE_EXIT__3", line, line + b"__SFORGE_EXIT__0", line, b""])


SYNTHETIC_ROUND_TRIP = [
    ("codex_text_multiline", CodexTextParser, lambda: MULTILINE_TEXT),
    ("codex_json_exits", CodexJsonParser, lambda: _exit_stream({"type": "thread.started", "thread_id": "t"})),
    (
        "rollout_exits",
        CodexRolloutParser,
        lambda: _exit_stream({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s"}}),
    ),
    (
        "opencode_exits",
        OpenCodeParser,
        lambda: _exit_stream({"type": "step_start", "timestamp": 5, "sessionID": "s", "part": {}}),
    ),
]


@pytest.mark.parametrize("name,parser_cls,make", SYNTHETIC_ROUND_TRIP, ids=[c[0] for c in SYNTHETIC_ROUND_TRIP])
def test_state_round_trip_synthetic(name, parser_cls, make):
    data = make()
    whole = [e.model_dump() for e in parse_bytes(parser_cls, data, source="src")]
    assert any(e["kind"] == "segment_start" for e in whole)
    for cut in range(len(list(iter_lines(io.BytesIO(data)))) + 1):
        events, _ = split_round_trip(parser_cls, data, cut)
        assert [e.model_dump() for e in events] == whole, f"cut at line {cut}"


# ----------------------------------------------------------------------------- Codex text fixtures


def fixture_events(name: str):
    return parse_file(CodexTextParser, FIXTURES / name)


def test_codex_text_plain_run():
    events = fixture_events("plain_run.txt")
    assert not of_kind(events, Kind.PARSE_ERROR)
    init = of_kind(events, Kind.SESSION_INIT)
    assert len(init) == 1 and init[0].model == "gpt-5.3-codex" and init[0].offset == 0
    assert init[0].data["session_id"] == "019e0a11-7c2d-7b40-9a55-3f1d2c4b5e6f"
    assert init[0].data["cwd"] == "/home/agent/workspace" and init[0].data["reasoning_effort"] == "high"
    assert not of_kind(events, Kind.SEGMENT_START)
    user = of_kind(events, Kind.USER_MESSAGE)
    assert len(user) == 1 and user[0].data["text"].endswith("then submit with `sforge-submit`.")
    assert of_kind(events, Kind.THINKING)[0].data["text"].startswith("**Planning the work**")
    assert len(of_kind(events, Kind.AGENT_MESSAGE)) == 3
    calls, results = of_kind(events, Kind.TOOL_CALL), of_kind(events, Kind.TOOL_RESULT)
    assert [e.data["command"] for e in calls] == [
        "/bin/bash -lc 'ls -la'",
        "/bin/bash -lc 'make test'",
        "/bin/bash -lc \"sed -i '1i int solve_step(int);' src/solver.c && make test\"",
        "/bin/bash -lc 'cd /home/agent/workspace && sforge-submit'",
    ]
    assert {e.data["cwd"] for e in calls} == {"/home/agent/workspace"}
    assert all(e.tool_name == "exec" for e in calls + results)
    assert [e.tool_use_id for e in calls] == [e.tool_use_id for e in results]
    assert [e.tool_use_id for e in calls] == [f"exec@{e.offset}" for e in calls]
    assert [e.data["exit_code"] for e in results] == [0, 2, 0, 0]
    assert [e.is_error for e in results] == [False, True, False, False]
    assert [e.data["duration_ms"] for e in results] == [12, 1520, 2400, 65000]
    assert results[1].data["content"].splitlines()[-1] == "make: *** [Makefile:9: build/solver.o] Error 1"
    assert results[2].data["content"] == "cc -O2 -c src/solver.c -o build/solver.o\nALL 200 TESTS PASSED"
    assert [e.round for e in results] == [None, None, None, "agent-3"]
    assert [bool(e.data.get("sforge_submit")) for e in calls] == [False, False, False, True]
    sub = results[3].data["submit_result"]
    assert sub["round"] == "agent-3" and sub["passed"] == 171 and sub["total"] == 200
    assert calls[3].data["submit_mode"] == "submit"
    tok = of_kind(events, Kind.TOKEN_USAGE)
    assert len(tok) == 1 and tok[0].data["total_tokens"] == 48213 and tok[0].usage is None
    assert {e.segment for e in events} == {0}


def test_codex_text_resume():
    events = fixture_events("resume_run.txt")
    assert not of_kind(events, Kind.PARSE_ERROR)
    kinds = [e.kind for e in events]
    i_end = kinds.index(Kind.SEGMENT_END.value)
    assert events[i_end].data["exit_code"] == 137 and events[i_end].is_error
    assert kinds[i_end + 1 : i_end + 3] == [Kind.SEGMENT_START.value, Kind.SESSION_INIT.value]
    assert [e.segment for e in of_kind(events, Kind.SESSION_INIT)] == [0, 1]
    assert of_kind(events, Kind.SEGMENT_START)[0].segment == 1
    assert all(e.segment == 0 for e in events[: i_end + 1])
    assert all(e.segment == 1 for e in events[i_end + 1 :])
    ends = of_kind(events, Kind.SEGMENT_END)
    assert [e.data["exit_code"] for e in ends] == [137, 0] and ends[1].is_error is False
    assert [e.data["text"] for e in of_kind(events, Kind.USER_MESSAGE)][1] == "Continue working."
    results = of_kind(events, Kind.TOOL_RESULT)
    assert [e.round for e in results] == [None, None, None]
    listing, cooldown = results[1], results[2]
    assert listing.data["submit_mode"] == "list" and listing.data["submit_result"]["mode"] == "list"
    assert cooldown.is_error and cooldown.data["exit_code"] == 1
    assert cooldown.data["submit_result"]["rejected"] == "cooldown"


def test_codex_text_noise_invalid_utf8_and_truncated_block():
    path = FIXTURES / "noisy_truncated.txt"
    data = path.read_bytes()
    events = parse_file(CodexTextParser, path)
    logs = of_kind(events, Kind.LOG)
    assert [e.offset for e in logs] == [0, data.index(b"(Use `node")]
    err = of_kind(events, Kind.AGENT_ERROR)
    assert len(err) == 1 and err[0].offset == data.index(b"ERROR: stream")
    assert (
        of_kind(events, Kind.AGENT_MESSAGE)[0].data["text"] == "Let me check the binary output of the benchmark tool."
    )
    bad = of_kind(events, Kind.PARSE_ERROR)
    assert len(bad) == 1
    assert bad[0].offset == data.index(b"\x89BIN")
    assert bad[0].raw == b"\x89BIN\xff\xfe\x00\x01garbage"
    results = of_kind(events, Kind.TOOL_RESULT)
    assert results[0].data["content"].startswith("\ufffdBIN")
    assert results[1].round == "agent-5"
    assert results[1].data["submit_result"]["status"] == "error"
    calls = of_kind(events, Kind.TOOL_CALL)
    assert len(calls) == 3 and len(results) == 2
    assert calls[-1].data == {
        "command": "/bin/bash -lc 'make -j8 bench'",
        "cwd": "/home/agent/workspace",
        "incomplete": True,
    }
    # the cut-off block is held until finish()
    parser = CodexTextParser("src", "gen")
    for ln in iter_lines(io.BytesIO(data)):
        parser.feed(ln.data, ln.offset)
    assert parser.resume_offset() == data.rindex(b"exec\n")
    tail = parser.finish()
    assert [e.kind for e in tail] == [Kind.TOOL_CALL.value]
    assert parser.resume_offset() is None and parser.finish() == []


MULTILINE_TEXT = (
    b"OpenAI Codex v0.130.0 (research preview)\n--------\nmodel: m\n--------\n"
    b"exec\n/bin/bash -lc 'cat > a.txt <<EOF\nfor f in /tmp/x\nEOF' in /home/agent/w\n"
    b" exited -1 in 2m 3s:\npartial output__SFORGE_EXIT__124\n"
    b"thinking\nsomething after the marker\n"
)


def test_codex_text_multiline_command_and_glued_exit_marker():
    text = MULTILINE_TEXT
    events = parse_bytes(CodexTextParser, text)
    call = of_kind(events, Kind.TOOL_CALL)[0]
    assert call.data["command"] == "/bin/bash -lc 'cat > a.txt <<EOF\nfor f in /tmp/x\nEOF'"
    assert call.data["cwd"] == "/home/agent/w"
    res = of_kind(events, Kind.TOOL_RESULT)[0]
    assert res.data["exit_code"] == -1 and res.is_error and res.data["duration_ms"] == 123000
    assert res.data["content"] == "partial output"
    end = of_kind(events, Kind.SEGMENT_END)[0]
    assert end.data["exit_code"] == 124 and end.offset == text.index(b"partial output")
    # a record after the marker opens segment 1 even without a new header
    assert [e.kind for e in events[-2:]] == [Kind.SEGMENT_START.value, Kind.THINKING.value]
    assert events[-1].segment == 1


# ----------------------------------------------------------------------------- bad input, segments, usage


BAD_LINES = [
    b"(node:1) Warning: something",
    b'{"type": "thread.started", "thread_id": "\xff\xfe"}',
    b"[1, 2, 3]",
    b'"just a string"',
    b'{"type": "turn.started"',  # truncated
]


@pytest.mark.parametrize("parser_cls", [CodexJsonParser, CodexRolloutParser, OpenCodeParser])
def test_json_parsers_bad_input_is_parse_error(parser_cls):
    p = parser_cls("src", "gen")
    out = feed_lines(p, BAD_LINES, start=10)
    assert [e.kind for e in out] == [Kind.PARSE_ERROR.value] * len(BAD_LINES)
    off = 10
    for e, ln in zip(out, BAD_LINES):
        assert e.offset == off and e.raw == ln and e.sub == 0
        assert "parser failure" not in e.data["reason"]
        off += len(ln) + 1
    assert "invalid UTF-8" in out[1].data["reason"]
    assert p.feed(b"   ", 99) == []
    assert p.finish() == []


@pytest.mark.parametrize(
    "parser_cls,record",
    [
        (CodexJsonParser, {"type": "thread.started", "thread_id": "t1"}),
        (
            CodexRolloutParser,
            {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": "s1"}},
        ),
        (OpenCodeParser, {"type": "step_start", "timestamp": 1000, "sessionID": "ses_1", "part": {}}),
    ],
)
def test_json_parsers_exit_marker_and_segments(parser_cls, record):
    line = json.dumps(record).encode()
    p = parser_cls("src", "gen")
    out = feed_lines(p, [line, b"__SFORGE_EXIT__3", line + b"__SFORGE_EXIT__0", line])
    kinds = [(e.offset, e.sub, e.kind, e.segment) for e in out]
    o2 = len(line) + 1
    o3 = o2 + len(b"__SFORGE_EXIT__3") + 1
    o4 = o3 + len(line + b"__SFORGE_EXIT__0") + 1
    assert (o2, 0, Kind.SEGMENT_END.value, 0) in kinds
    end = [e for e in out if e.kind == Kind.SEGMENT_END.value]
    assert [e.data["exit_code"] for e in end] == [3, 0] and [e.is_error for e in end] == [True, False]
    assert [e.segment for e in of_kind(out, Kind.SEGMENT_START)] == [1, 2]
    third = [(e.sub, e.kind) for e in out if e.offset == o3]
    assert third[0] == (0, Kind.SEGMENT_START.value) and third[-1] == (len(third) - 1, Kind.SEGMENT_END.value)
    assert {e.segment for e in out if e.offset == o4} == {2}


def test_exec_json_cumulative_usage():
    def turn(i, o):
        return json.dumps(
            {"type": "turn.completed", "usage": {"input_tokens": i, "cached_input_tokens": 0, "output_tokens": o}}
        ).encode()

    p = CodexJsonParser("src", "gen")
    out = feed_lines(p, [turn(100, 10), turn(250, 30), turn(50, 5)])
    assert [e.data["cumulative"] for e in out] == [None, True, False]
    assert out[1].data["delta"]["input_tokens"] == 150 and out[1].data["delta"]["output_tokens"] == 20
    assert "delta" not in out[2].data
    assert out[1].usage.input_tokens == 150  # cumulative turn: only this turn's increase is counted
    assert out[1].data["raw_usage"]["input_tokens"] == 250  # as reported


def test_exec_json_items_without_start_and_submit():
    item = {
        "id": "item_1",
        "type": "command_execution",
        "command": "bash -lc 'sforge-submit'",
        "aggregated_output": "  Round: agent-2\n\n  agent-2 Results\n  Pass rate:   50.0%\n",
        "exit_code": 0,
        "status": "completed",
    }
    mcp = {
        "id": "item_2",
        "type": "mcp_tool_call",
        "server": "fs",
        "tool": "read",
        "arguments": {"p": 1},
        "status": "failed",
        "error": {"message": "boom"},
    }
    lines = [
        json.dumps({"type": "item.completed", "item": item}).encode(),
        json.dumps({"type": "item.completed", "item": mcp}).encode(),
        json.dumps({"type": "turn.failed", "error": {"message": "quota"}}).encode(),
    ]
    out = feed_lines(CodexJsonParser("src", "gen"), lines)
    assert [e.kind for e in out] == ["tool_call", "tool_result", "tool_call", "tool_result", "agent_error"]
    assert out[0].data["sforge_submit"] and out[1].round == "agent-2"
    assert out[1].data["submit_result"]["pass_rate"] == pytest.approx(0.5)
    assert out[3].tool_name == "fs.read" and out[3].is_error and out[3].data["content"] == "boom"
    assert out[4].data["message"] == "quota"


def test_rollout_repeated_token_count_and_pairing_across_resume():
    def tc(total):
        return json.dumps(
            {
                "timestamp": "2026-01-01T00:00:01.5Z",
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"total_tokens": total},
                        "last_token_usage": {"input_tokens": 7, "output_tokens": 1},
                    },
                },
            }
        ).encode()

    call = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "sforge-submit --list"}',
                "call_id": "c1",
            },
        }
    ).encode()
    end = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "event_msg",
            "payload": {
                "type": "exec_command_end",
                "call_id": "c1",
                "exit_code": 3,
                "duration": {"secs": 1, "nanos": 500000000},
            },
        }
    ).encode()
    outp = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "Submission History\n"},
        }
    ).encode()
    p = CodexRolloutParser("src", "gen")
    first = feed_lines(p, [tc(10), tc(10), call, end])
    assert first[0].usage.input_tokens == 7 and first[1].usage is None and first[1].data["repeat"]
    assert first[0].t == pytest.approx(iso_epoch("2026-01-01T00:00:01.500Z"), rel=0, abs=1e-6)
    assert len(first) == 3  # exec_command_end lends its data, no event of its own
    resumed = CodexRolloutParser("src", "gen", json.loads(json.dumps(p.state())))
    res = resumed.feed(outp, 1000)[0]
    assert res.kind == "tool_result" and res.tool_name == "exec_command"
    assert res.data["exit_code"] == 3 and res.is_error and res.data["duration_ms"] == 1500
    assert res.data["submit_mode"] == "list" and res.round is None


def test_iso_to_epoch():
    assert iso8601_to_epoch("2026-07-11T17:18:23.720Z") == pytest.approx(
        iso_epoch("2026-07-11T17:18:23.720Z"), rel=0, abs=1e-6
    )
    assert iso8601_to_epoch("2026-07-11T17:18:23Z") == pytest.approx(
        iso_epoch("2026-07-11T17:18:23.000Z"), rel=0, abs=1e-6
    )
    assert iso8601_to_epoch("2026-07-11T17:18:23.1234567+00:00") == pytest.approx(
        iso_epoch("2026-07-11T17:18:23.123456Z"), rel=0, abs=1e-6
    )
    assert iso8601_to_epoch("2026-07-11T22:48:23+05:30") == pytest.approx(
        iso_epoch("2026-07-11T17:18:23.000Z"), rel=0, abs=1e-6
    )
    assert iso8601_to_epoch("not a time") is None and iso8601_to_epoch(12) is None


def test_opencode_error_and_running_tool():
    lines = [
        json.dumps(
            {
                "type": "tool_use",
                "timestamp": 2000,
                "sessionID": "s",
                "part": {
                    "type": "tool",
                    "tool": "bash",
                    "callID": "b1",
                    "state": {"status": "running", "input": {"command": "ls"}},
                },
            }
        ).encode(),
        json.dumps(
            {
                "type": "tool_use",
                "timestamp": 3000,
                "sessionID": "s",
                "part": {
                    "type": "tool",
                    "tool": "edit",
                    "callID": "e1",
                    "state": {"status": "error", "input": {"filePath": "/a"}, "error": "no such file"},
                },
            }
        ).encode(),
        json.dumps(
            {
                "type": "error",
                "timestamp": 4000,
                "sessionID": "s",
                "error": {"name": "APIError", "data": {"message": "rate limited"}},
            }
        ).encode(),
        json.dumps(
            {
                "type": "step_finish",
                "timestamp": 5000,
                "sessionID": "s2",
                "part": {
                    "reason": "stop",
                    "cost": 0.5,
                    "tokens": {"input": 1, "output": 2, "reasoning": 3, "cache": {"read": 4, "write": 5}},
                },
            }
        ).encode(),
    ]
    out = feed_lines(OpenCodeParser("src", "gen"), lines)
    assert [e.kind for e in out] == [
        "session_init",
        "tool_call",
        "tool_call",
        "tool_result",
        "agent_error",
        "segment_start",
        "session_init",
        "token_usage",
    ]
    tok = out[-1]
    assert (
        tok.usage.input_tokens,
        tok.usage.output_tokens,
        tok.usage.cache_read_tokens,
        tok.usage.cache_write_tokens,
    ) == (1, 2, 4, 5)
    assert tok.data["reasoning_tokens"] == 3 and tok.stated_cost_usd == 0.5 and tok.segment == 1
    assert tok.data["session_id"] == "s2" and tok.t == 5.0
    assert out[1].t == 2.0 and out[1].data["command"] == "ls"
    assert out[3].is_error and out[3].data["content"] == "no such file" and out[3].t == 3.0
    assert out[4].data["message"] == "rate limited" and out[4].data["name"] == "APIError"


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    b"user",
                    b"codex",
                    b"exec",
                    b"thinking",
                    b"tokens used",
                    b"--------",
                    b"__SFORGE_EXIT__1",
                    b"OpenAI Codex v0.1 (research preview)",
                    b" succeeded in 5ms:",
                    b"ls in /x",
                    b'{"type":"item.completed","item":{"type":"command_execution","id":1}}',
                    b'{"type":"response_item","payload":{"type":"function_call_output"}}',
                    b'{"type":"tool_use","part":{"state":[]}}',
                    b'{"type":"step_finish","part":{"tokens":1}}',
                ]
            ),
        ),
        max_size=25,
    )
)
def test_fuzz_never_raises_and_no_internal_failure(lines):
    lines = [ln.replace(b"\n", b" ") for ln in lines]
    for cls in (CodexTextParser, CodexJsonParser, CodexRolloutParser, OpenCodeParser):
        p = cls("src", "gen")
        out = feed_lines(p, lines) + p.finish()
        for e in out:
            if e.kind == Kind.PARSE_ERROR.value:
                assert "parser failure" not in e.data["reason"], e.data["reason"]
        json.dumps(p.state())
