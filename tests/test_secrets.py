"""No secret is stored, exported, answered or shown (edgetui.redact, one pattern set everywhere).

Each kind of secret is planted in each place of a Claude Code stream-json transcript
(assistant text, thinking, tool input, tool result, a malformed line's raw bytes, a
key right after an escaped newline inside JSON), ingested by the real CLI into a real
DuckDB file, then looked for in every column, the file's bytes, the Parquet export and
``edgetui sql`` output. Research data shaped like secrets (git SHAs, UUIDs, sha256
hashes, base64 image data, a lone 40-character string) must survive intact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from edgetui.live.alarms import AlarmCommand
from edgetui.redact import REDACTED, redact_bytes, redact_text, redacted_copy

EDGETUI = [sys.executable, "-m", "edgetui.cli.main"]

#: one of each kind (all made up; shaped like the real thing)
SECRETS = {
    "anthropic": "sk-ant-api03-" + "Qx7vB2mN9pL4kR8sT1wY6zA3cD5fG0hJ" * 2,
    "openai": "sk-proj-" + "a8F3kL0pQ2wE5rT7yU9iO1" * 2,
    "github_pat_classic": "ghp_" + "R4nD0mT0k3nV4lu3sXyZ" + "abcdefghij123456",
    "github_fine_grained": "github_pat_11AB3CDEF0" + "k" * 10 + "_" + "Zx9Yw8Vu7Ts6" * 5,
    "aws_access_key_id": "AKIAZ7Q4X2P9LM3N8R5T",
    "aws_secret_key_env": "Wk3/Lp9+Qz7Rt5Yv2Nb8Mc4Xd6Fg1Hj0Ks7PqLmA",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZ2VudC0xMjMiLCJpYXQiOjE3MDAwMDAwMDB9."
    "Hk2mQ9xV4pL7nR0sT3wY6zA8cD1fG5jK",
    "ssh_private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
    "c2gtZWQyNTUxOQAAACDqP4h0n3r5t7y9u1i3o5p7a9s1d3f5g7h9j1k3l5z7x9c1vQAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "google": "AIzaSyB7xK2mP9qL4nR8sT1wV6yZ3aC5dF0gH2j",
    "slack": "xoxb-2048163512-4096327024123-Zk8Lp3Qm7Rn2Ts9Vw4Xy1Ab6",
    "gitlab": "glpat-Xy7Kp2Lm9Qn4Rs8Tv1Wz",
    "url_password": "Hunter2Secret99",
}
#: shaped like secrets, but research data: must stay exactly
KEEP = {
    "git_sha": "3f786850e387550fdab836ed7e6dc881de23001b",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "b64_png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "forty_chars": "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0h",
    "max_tokens": "max_tokens=4096",
}


def _text_with(name: str, value: str) -> str:
    if name == "url_password":
        return f"connect to postgres://agent:{value}@db.internal:5432/bench now"
    if name == "aws_secret_key_env":
        return f"export AWS_SECRET_ACCESS_KEY={value} && aws s3 ls"
    return f"the credential is {value} (do not share)"


def _transcript(path: Path) -> None:
    lines = []
    n = 0
    for name, value in SECRETS.items():
        text = _text_with(name, value)
        n += 1
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [
                        {"type": "thinking", "thinking": "thinking: " + text, "signature": "s"},
                        {"type": "text", "text": "said: " + text},
                        {"type": "tool_use", "id": f"tu_{n}", "name": "Bash", "input": {"command": text}},
                    ],
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            }
        )
        lines.append(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"tu_{n}", "content": "result:\n" + text}],
                },
            }
        )
    # a key at the start of a line inside a JSON string (after an escaped newline)
    lines.append(
        {
            "type": "assistant",
            "message": {
                "id": "msg_nl",
                "role": "assistant",
                "content": [{"type": "text", "text": "first line\n" + SECRETS["anthropic"] + "\nlast line"}],
            },
        }
    )
    keep = " ".join(f"{k}={v}" if k != "max_tokens" else v for k, v in KEEP.items())
    lines.append(
        {
            "type": "assistant",
            "message": {
                "id": "msg_keep",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "keep: " + keep},
                    {
                        "type": "tool_use",
                        "id": "tu_keep",
                        "name": "Read",
                        "input": {"sha": KEEP["git_sha"], "id": KEEP["uuid"]},
                    },
                ],
            },
        }
    )
    body = "\n".join(json.dumps(x) for x in lines) + "\n"
    # a malformed line: its raw bytes are kept, with the secrets replaced
    body += "not json at all " + SECRETS["github_pat_classic"] + " " + SECRETS["slack"] + "\n"
    path.write_text(body)


def _leaks(blob: str | bytes) -> list[str]:
    s = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    found = []
    for name, value in SECRETS.items():
        for piece in value.splitlines():
            probe = piece if len(piece) < 60 else piece[:60]
            if "-----" in probe:
                continue  # the BEGIN / END marker lines are not secret
            if probe in s or json.dumps(probe)[1:-1] in s:
                found.append(name)
    return sorted(set(found))


@pytest.fixture
def ingested(tmp_path):
    tr = tmp_path / "agent_output.jsonl"
    _transcript(tr)
    assert len(_leaks(tr.read_text())) == len(SECRETS)  # precondition: every secret is planted
    db = tmp_path / "s.duckdb"
    r = subprocess.run([*EDGETUI, "--db", str(db), "ingest", "-q", str(tr)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return db, tmp_path


def test_no_secret_in_any_column_nor_the_file(ingested):
    db, _ = ingested
    conn = duckdb.connect(str(db), read_only=True)
    cols = [
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
        ).fetchall()
    ]
    everything = conn.execute(
        "SELECT string_agg(concat_ws(' ', "
        + ", ".join(f'decode("{c}")' if c == "raw" else f'CAST("{c}" AS VARCHAR)' for c in cols)
        + "), chr(10)) FROM events"
    ).fetchone()[0]
    kinds = {k for (k,) in conn.execute("SELECT DISTINCT kind FROM events").fetchall()}
    assert {"agent_message", "thinking", "tool_call", "tool_result", "parse_error"} <= kinds
    assert _leaks(everything) == []
    assert everything.count(REDACTED) >= 4 * len(SECRETS)  # each place of each kind, at least
    # research data untouched, in text and in data
    for name, value in KEEP.items():
        assert value in everything, name
    tool = conn.execute("SELECT data FROM events WHERE tool_use_id = 'tu_keep' AND kind = 'tool_call'").fetchone()[0]
    assert KEEP["git_sha"] in tool and KEEP["uuid"] in tool
    raw = conn.execute("SELECT raw FROM events WHERE kind = 'parse_error'").fetchone()[0]
    assert raw.startswith(b"not json at all ") and raw.count(REDACTED.encode()) == 2
    conn.close()
    assert _leaks(db.read_bytes()) == []


def test_no_secret_in_export_nor_sql_output(ingested):
    db, tmp = ingested
    out = tmp / "export"
    r = subprocess.run([*EDGETUI, "--db", str(db), "export", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    parquet = list(out.glob("*.parquet"))
    assert parquet
    conn = duckdb.connect()
    dumped = conn.execute(
        f"SELECT string_agg(CAST(columns(*) AS VARCHAR), ' ') FROM read_parquet('{out / 'events.parquet'}')"
    ).fetchall()
    assert _leaks(" ".join(str(x) for x in dumped[0])) == []
    for p in parquet:
        assert _leaks(p.read_bytes()) == [], p.name
    for fmt in ("table", "json", "csv"):
        r = subprocess.run(
            [*EDGETUI, "--db", str(db), "sql", "--format", fmt, "SELECT summary, data, decode(raw) AS raw FROM events"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "400"},
        )
        assert r.returncode == 0, r.stderr
        assert "<redacted>" in r.stdout and _leaks(r.stdout) == [], fmt


def test_every_kind_redacted_in_text_and_in_serialised_json():
    for name, value in SECRETS.items():
        text = _text_with(name, value)
        assert _leaks(redact_text(text)) == [], name
        # the same text as a JSON line's raw bytes, after an escaped newline
        raw = json.dumps({"text": "x\n" + text}).encode()
        assert _leaks(redact_bytes(raw)) == [], name
        assert json.loads(redact_bytes(raw))  # still valid JSON
    for name, value in KEEP.items():
        assert redact_text(f"value {value} end") == f"value {value} end", name
        assert redact_text(f"AKIA… far away; {value}") == f"AKIA… far away; {value}", name
    # an AWS secret beside its access key id is found by that context; a git SHA beside one stays
    near = f"{SECRETS['aws_access_key_id']} {SECRETS['aws_secret_key_env']}"
    assert _leaks(redact_text(near)) == []
    assert KEEP["git_sha"] in redact_text(f"{SECRETS['aws_access_key_id']} {KEEP['git_sha']}")


def test_pager_copy_and_on_alarm_json_are_redacted(tmp_path):
    f = tmp_path / "run_agent.log"
    f.write_text("".join(_text_with(n, v) + "\n" for n, v in SECRETS.items()) + "plain line\n")
    view = Path(redacted_copy(f))
    try:
        body = view.read_text()
        assert _leaks(body) == [] and body.endswith("plain line\n")
        assert (view.stat().st_mode & 0o777) == 0o600
    finally:
        view.unlink()
        view.parent.rmdir()
    sink = tmp_path / "alarm.json"
    cmd = AlarmCommand(f"cat > {sink}")
    cmd.fire(
        {
            "rule": "infra_error",
            "message": _text_with("github_pat_classic", SECRETS["github_pat_classic"]),
            "detail": {"env": _text_with("aws_secret_key_env", SECRETS["aws_secret_key_env"])},
        }
    )
    cmd.wait()
    got = json.loads(sink.read_text())
    assert got["rule"] == "infra_error" and REDACTED in got["message"] and _leaks(sink.read_text()) == []


def test_supervisor_notes_and_messages_are_redacted(tmp_path, db_path):
    from edgetui.store.database import open_db
    from edgetui.live.supervisor import Supervisor

    conn = open_db(db_path)
    sup = Supervisor(conn, [tmp_path / "runs"], docker_client=None)
    try:
        sup._note("judge said: " + _text_with("slack", SECRETS["slack"]))
        assert _leaks(" ".join(m for _, m in sup.notes)) == [] and any(REDACTED in m for _, m in sup.notes)
    finally:
        sup.close()
        conn.close()


def test_old_database_is_rescrubbed_and_rewritten(tmp_path):
    """A schema-1 file (an earlier version) holding secrets: opening it re-scrubs every table and
    rewrites the file, so its bytes no longer hold them."""
    from edgetui.store.database import open_db
    from edgetui.store.schema import _V1

    p = tmp_path / "old.duckdb"
    c = duckdb.connect(str(p))
    for st in _V1:
        c.execute(st)
    c.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    sec = SECRETS["github_pat_classic"]
    c.execute(
        "INSERT INTO events (event_id, run_key, kind, source, summary, data, raw) VALUES "
        "('e1', 'r', 'agent_message', 's', ?, ?, ?)",
        [f"token {sec}", json.dumps({"text": "line\n" + sec, "sha": KEEP["git_sha"]}), f'{{"x":"{sec}"}}'.encode()],
    )
    c.execute(
        "INSERT INTO runs (run_key, host, run_id, task_id, config) VALUES ('r', 'h', 'r', 't', ?)",
        [json.dumps({"env": {"GH": sec}})],
    )
    c.execute("INSERT INTO test_results VALUES ('r', 'agent-1', 0, 't', 'failed', ?, NULL, NULL, NULL)", [sec])
    c.execute("CHECKPOINT")
    c.close()
    assert sec.encode() in p.read_bytes()  # precondition: the secret is in the file's bytes
    conn = open_db(p, read_only=True)  # even a read-only open migrates first
    try:
        summ, data, raw = conn.execute("SELECT summary, data, decode(raw) FROM events").fetchone()
        assert summ == "token <redacted>" and json.loads(data) == {"text": "line\n<redacted>", "sha": KEEP["git_sha"]}
        assert raw == '{"x":"<redacted>"}'
        assert conn.execute("SELECT config FROM runs").fetchone()[0] == '{"env":{"GH":"<redacted>"}}'
        assert conn.execute("SELECT message FROM test_results").fetchone()[0] == REDACTED
        from edgetui.store.schema import SCHEMA_VERSION

        assert dict(conn.execute("SELECT key, value FROM meta").fetchall()) == {"schema_version": str(SCHEMA_VERSION)}
    finally:
        conn.close()
    assert sec.encode() not in p.read_bytes()
    assert not Path(str(p) + ".rewrite").exists()


def test_batch_scrub_is_each_row_redacted_alone():
    """events_to_table scrubs a batch with one prefilter scan of each column's Arrow buffer
    (rows side by side, no separator): every row comes out as redacting that row alone gives,
    secrets at row edges and across neighbours included, known secret values too."""
    import orjson

    from edgetui.parsers.arrow_batches import Scrubber, events_to_table
    from edgetui.events import make_event
    from edgetui.redact import redact_obj

    known = "Zq8-known-value-77"
    texts = [_text_with(n, v) for n, v in SECRETS.items()] + [f"value {v} end" for v in KEEP.values()]
    texts += [f"plain {known}", known, "token", "=abcdefghijklmnop rest", "api_key", "", "nothing here"]
    events = []
    for i in range(600):
        t = texts[i % len(texts)] if i % 3 else "quiet row %d" % i
        nxt = texts[(i + 1) % len(texts)]
        events.append(
            make_event(
                dict(
                    kind="message",
                    source="agent_output.jsonl",
                    generation="g",
                    offset=i,
                    sub=0,
                    summary=t,
                    tool_name=(nxt[:40] if i % 5 == 0 else None),
                    model=("m-" + t[-8:] if i % 7 == 0 else None),
                    round=None,
                    data=({"text": t, "api_key": "abcdefghijklmnopqrstu", "n": i} if i % 2 else {"k": [t, nxt]}),
                    raw=(t.encode() + b"\xff" if i % 11 == 0 else None),
                )
            )
        )
    secrets = {known}
    tbl = events_to_table("rk", events, Scrubber(secrets)).to_pydict()
    for i, e in enumerate(events):
        assert tbl["summary"][i] == redact_text(e.summary, secrets), i
        if e.tool_name is not None:
            assert tbl["tool_name"][i] == redact_text(e.tool_name, secrets), i
        if e.model is not None:
            assert tbl["model"][i] == redact_text(e.model, secrets), i
        assert orjson.loads(tbl["data"][i]) == redact_obj(e.data, secrets), i
        if e.raw is not None:
            assert tbl["raw"][i] == redact_bytes(e.raw, secrets), i
    blob = json.dumps(tbl, default=lambda b: b.decode("utf-8", "replace"))
    assert _leaks(blob) == [] and known not in blob
    assert "abcdefghijklmnopqrstu" not in blob  # (a credential's name as the key of a string value)
    assert KEEP["git_sha"] in blob and KEEP["uuid"] in blob


def test_parsing_process_batches_scrubbed_by_the_writer(tmp_path, monkeypatch):
    """A transcript parsed in the second process (its batches cross unscrubbed; the writing process
    scrubs them): no secret in the database, a known secret value (SFORGE_ADMIN_SECRET) included,
    and the same rows as the one-process ingest; DuckDB's thread setting is back after it."""
    import edgetui.record.line_recording as ingest_mod
    from edgetui.cli.main import main
    from edgetui.store.database import open_db

    admin = "adm1n-Secret-Value-42"
    tr = tmp_path / "agent_output.jsonl"
    _transcript(tr)
    extra = json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": "msg_adm",
                "role": "assistant",
                "content": [{"type": "text", "text": f"the admin secret is {admin} here"}],
            },
        }
    )
    tr.write_text(tr.read_text() + extra + "\n")
    monkeypatch.setenv("SFORGE_ADMIN_SECRET", admin)
    single, multi = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    monkeypatch.setenv("EDGETUI_NO_MP", "1")
    assert main(["--db", str(single), "ingest", "-q", str(tr)]) == 0
    monkeypatch.delenv("EDGETUI_NO_MP")
    monkeypatch.setattr(ingest_mod, "MP_MIN_BYTES", 1)
    monkeypatch.setattr(ingest_mod, "CHILD_BATCH_BYTES", 2048)  # several batches
    called, threads = [], []
    real = ingest_mod._ingest_lines_mp

    def spy(rec, *a, **k):
        called.append(1)
        out = real(rec, *a, **k)
        threads.append(rec.conn.execute("SELECT current_setting('threads')").fetchone()[0])
        return out

    monkeypatch.setattr(ingest_mod, "_ingest_lines_mp", spy)
    assert main(["--db", str(multi), "ingest", "-q", str(tr)]) == 0
    assert called
    c = open_db(multi)
    assert threads == [c.execute("SELECT current_setting('threads')").fetchone()[0]]
    rows = c.execute("SELECT summary, data, raw FROM events ORDER BY event_id").fetchall()
    c.close()
    blob = json.dumps([[s, d, r.decode("utf-8", "replace") if r else None] for s, d, r in rows])
    assert _leaks(blob) == [] and admin not in blob and REDACTED in blob
    c1 = open_db(single)
    assert c1.execute("SELECT summary, data, raw FROM events ORDER BY event_id").fetchall() == rows
    c1.close()


def test_array_hits_of_slices_chunks_and_wide_arrays():
    """The buffer scan maps matches to the right rows of a sliced array (offsets not from 0), of
    each chunk of a chunked column, and of large (64-bit offset) arrays; nulls never match."""
    import pyarrow as pa

    from edgetui.parsers.arrow_batches import Scrubber

    sc = Scrubber({"known-secret-1"})
    vals = ["clean", None, "x " + SECRETS["github_pat_classic"], "", "plain", "the known-secret-1 here", "end"]
    want = [2, 5]
    for typ in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        binary = typ in (pa.binary(), pa.large_binary())
        items = [v.encode() if binary and v is not None else v for v in vals]
        arr = pa.array(items, typ)
        assert sc.array_hits(arr, "text") == want, typ
        assert sc.array_hits(arr.slice(2), "text") == [0, 3], typ
        assert sc.array_hits(arr.slice(3, 2), "text") == [], typ
        chunked = pa.chunked_array([arr.slice(0, 3), arr.slice(3)])
        assert [sc.array_hits(c, "text") for c in chunked.chunks] == [[2], [2]], typ
