"""Every secret kind, planted in every place of a run folder, reaches no sink.

Places: the transcript, run_agent.log (a PEM private key printed one log record a line), a
submission archive (a file of every kind and a key file), the round's ``analysis.md``,
``run_config.json`` (its ``api_key`` and ``extra_env``: values no rule knows, only the run's own
known secrets), the judge's admin secret file, a test's message in ``report.json`` and
``test_output.txt``. Sinks: the database (every table, the file's bytes), ``export``'s Parquet,
``report`` as md / json / html, the why view (its data, its text, the replay's why screen), the
pager's copy of each run file (with the live core's known secrets), ``--on-alarm`` JSON and the
CLI's stderr. Research data shaped like secrets (a git SHA, a hex hash, ``author``) is kept.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import duckdb
import pytest

from edgetui.store.database import open_db
from edgetui.redact import REDACTED, redact_text, redacted_copy

from test_secrets import SECRETS as RULE_SECRETS, _text_with

EDGETUI = [sys.executable, "-m", "edgetui.cli.main"]
ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
RUN = GENUINE / "runs" / "real-stats-20261201180500"
KEY = "local/real-stats-20261201180500/tiny_stats"
#: a run with reframing moments (a report shows their why: agent-85's archive and analysis.md)
GW_RUN = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800"
GW_TASKS = ROOT / "sample_runs" / "tasks"

#: a credential's value starting with a digit, under its name (each text is the assignment itself)
DIGIT_FIRST = {
    "password_digit": ("PASSWORD", "4Xelsh3NtOnD"),
    "api_key_digit": ("api_key", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"),
    "secret_key_digit": ("SECRET_KEY", "2b7c9d1e3f5a7b9c2d4e"),
    "github_token_digit": ("GITHUB_TOKEN", "0123456789abcdef0123456789abcdef01234567"),
}
#: the run's own secrets: no rule knows these shapes, only the run folder's files name them
KNOWN = {
    "run_api_key": "Kq7zW3pX9mLr2Tv8Yb",
    "extra_env_value": "nB4-qZ8-xW2-pL6",
    "admin_secret": "adm1n-S3cret-Planted-77",
}
SECRETS = {**RULE_SECRETS, **{k: v for k, (_, v) in DIGIT_FIRST.items()}, **KNOWN}
#: research data that must survive wherever it is shown
KEEP = {
    "git_sha": "3f786850e387550fdab836ed7e6dc881de23001b",
    "author": "Ada Lovelace",
    "commit": "9f86d081884c7d659a2feaa0c55ad015",
}


def text_of(kind: str) -> str:
    if kind in DIGIT_FIRST:
        name, value = DIGIT_FIRST[kind]
        return f"export {name}={value}"
    if kind in KNOWN:
        return f"the value {KNOWN[kind]} works here"
    return _text_with(kind, SECRETS[kind])


def texts() -> list[str]:
    """One text per kind (a PEM key's text spans lines)."""
    return [text_of(k) for k in SECRETS]


def leaks(blob: "str | bytes") -> list[str]:
    """The kinds whose value (each line of it, the first 60 characters) is in ``blob``; also as
    JSON escapes it. A PEM's BEGIN / END lines are no secret."""
    s = blob.decode("utf-8", "replace") if isinstance(blob, (bytes, bytearray)) else blob
    found = []
    for name, value in SECRETS.items():
        for piece in value.splitlines():
            probe = piece[:60]
            if "-----" in probe:
                continue
            if probe in s or json.dumps(probe)[1:-1] in s:
                found.append(name)
    return sorted(set(found))


def _rewrite_archive(path: Path, extra: dict[str, str]) -> None:
    buf = io.BytesIO()
    with tarfile.open(path) as src, tarfile.open(fileobj=buf, mode="w") as dst:
        for m in src.getmembers():
            dst.addfile(m, src.extractfile(m) if m.isreg() else None)
        for name, body in extra.items():
            data = body.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            dst.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue()))


def _log_records(last_line: str, lines: list[str]) -> str:
    """``lines`` as run_agent.log records (one each), stamped one second apart after ``last_line``'s."""
    from datetime import datetime, timedelta

    t = datetime.strptime(last_line[:19], "%Y-%m-%d %H:%M:%S")
    out = []
    for i, ln in enumerate(lines, 1):
        out.append(f"{(t + timedelta(seconds=i)).strftime('%Y-%m-%d %H:%M:%S')},000 - INFO - {ln}\n")
    return "".join(out)


def plant(root: Path, src: Path = RUN, task: str = "tiny_stats", rnd: str = "agent-4") -> Path:
    """A copy of the run ``src`` under ``root/logs/runs`` with every kind planted in every place
    (the round ``rnd``'s folder for a round's files); returns the task dir."""
    runs = root / "logs" / "runs"
    shutil.copytree(src, runs / src.name)
    td = runs / src.name / task
    everything = "\n".join(texts()) + "\n"
    # run_config.json: the run's own secrets, digit-first ones, and data that stays
    cfg = json.loads((td / "run_config.json").read_text())
    cfg.update(
        {
            "api_key": KNOWN["run_api_key"],
            "author": KEEP["author"],
            "commit": KEEP["commit"],
            "notes": everything,
            "extra_args": texts(),
            "extra_env": {"BENCH_SERVICE_TOKEN": KNOWN["extra_env_value"], **{n: v for n, v in DIGIT_FIRST.values()}},
        }
    )
    (td / "run_config.json").write_text(json.dumps(cfg, indent=2))
    (root / "logs" / ".judge-admin-secret").write_text(KNOWN["admin_secret"] + "\n")
    # the transcript: an assistant message and a tool result per kind, a git SHA beside them
    lines = []
    for i, text in enumerate(texts()):
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_secret_{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "text", "text": "said: " + text},
                        {"type": "tool_use", "id": f"tu_secret_{i}", "name": "Bash", "input": {"command": text}},
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
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"tu_secret_{i}", "content": "result:\n" + text}
                    ],
                },
            }
        )
    lines.append(
        {
            "type": "assistant",
            "message": {
                "id": "msg_keep",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": f"commit {KEEP['git_sha']}"}],
            },
        }
    )
    with open(td / "agent_output.txt", "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    # run_agent.log: one record a line, the PEM key's lines too (each its own record)
    log = (td / "run_agent.log").read_text()
    last = [ln for ln in log.splitlines() if ln[:4].isdigit()][-1]
    record_lines = [ln for t in texts() for ln in t.splitlines()]
    (td / "run_agent.log").write_text(log + _log_records(last, record_lines))
    # the round's archive, analysis.md, test output and a failed test's message
    sub = td / "submissions" / rnd
    _rewrite_archive(
        sub / "submission.tar.gz",
        {
            "secrets.env": everything,
            "deploy_key.pem": RULE_SECRETS["ssh_private_key"] + "\n",
            "NOTES.md": f"based on {KEEP['git_sha']}\n",
        },
    )
    (sub / "analysis.md").write_text(
        "Median fix and linear percentile.\n\n" + everything + f"\nbased on {KEEP['git_sha']}\n"
    )
    with open(sub / "test_output.txt", "a") as f:
        f.write(everything)
    rep = json.loads((sub / "report.json").read_text())
    failed = 0
    for arr in rep.values():
        if isinstance(arr, list):
            for d in arr:
                if isinstance(d, dict) and d.get("status") == "FAILED" and "message" in d:
                    d["message"] = "assertion failed:\n" + everything
                    failed += 1
    assert failed
    (sub / "report.json").write_text(json.dumps(rep, indent=2))
    # a second run whose started_at quotes a line of its own in the ingest's message (stderr)
    t2 = runs / "other-run" / "t2"
    t2.mkdir(parents=True)
    (t2 / "started_at").write_text("2026-12-01T21:14:48\n" + text_of("github_pat_classic") + "\n")
    (t2 / "run_agent.log").write_text(last + "\n")
    for place in (
        td / "agent_output.txt",
        td / "run_agent.log",
        sub / "analysis.md",
        sub / "test_output.txt",
        sub / "report.json",
        td / "run_config.json",
    ):
        assert leaks(place.read_text()) == sorted(SECRETS), place  # precondition: every kind planted there
    return td


def _planted(root: Path, tasks: Path, **kw):
    td = plant(root, **kw)
    db = root / "s.duckdb"
    env = {k: v for k, v in os.environ.items() if k != "SFORGE_ADMIN_SECRET"}
    r = subprocess.run(
        [*EDGETUI, "--db", str(db), "ingest", str(root / "logs" / "runs"), "--tasks-dir", str(tasks)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    return root, td, db, r


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return _planted(tmp_path_factory.mktemp("sinks"), GENUINE / "tasks")


@pytest.fixture(scope="module")
def planted_gw(tmp_path_factory):
    return _planted(tmp_path_factory.mktemp("sinks_gw"), GW_TASKS, src=GW_RUN, task="gw_signal_search", rnd="agent-85")


def _run(*args, db: Path) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [*EDGETUI, "--db", str(db), *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"}
    )
    assert r.returncode == 0, r.stderr
    return r


def test_database_holds_no_secret_and_keeps_research_data(planted):
    _, _, db, _ = planted
    conn = duckdb.connect(str(db), read_only=True)
    try:
        tables = [
            t
            for (t,) in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
            ).fetchall()
        ]
        parts = []
        for t in tables:
            cols = conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?", [t]
            ).fetchall()
            exprs = [f'decode("{c}")' if ty == "BLOB" else f'CAST("{c}" AS VARCHAR)' for c, ty in cols]
            parts.append(
                conn.execute(f"SELECT string_agg(concat_ws(' ', {', '.join(exprs)}), chr(10)) FROM \"{t}\"").fetchone()[
                    0
                ]
                or ""
            )
        cfg = json.loads(conn.execute("SELECT config FROM runs WHERE run_key = ?", [KEY]).fetchone()[0])
        msg = conn.execute("SELECT string_agg(message, ' ') FROM test_results WHERE run_key = ?", [KEY]).fetchone()[0]
    finally:
        conn.close()
    everything = "\n".join(parts)
    assert leaks(everything) == []
    assert leaks(db.read_bytes()) == []
    assert cfg["api_key"] == REDACTED and cfg["extra_env"]["PASSWORD"] == REDACTED
    assert cfg["author"] == KEEP["author"] and cfg["commit"] == KEEP["commit"]  # one policy: data stays
    assert msg and REDACTED in msg
    assert KEEP["git_sha"] in everything


def test_export_holds_no_secret(planted):
    root, _, db, _ = planted
    out = root / "export"
    _run("export", str(out), db=db)
    files = list(out.glob("*.parquet"))
    assert files
    for p in files:
        assert leaks(p.read_bytes()) == [], p.name
        conn = duckdb.connect()
        rows = conn.execute(f"SELECT * FROM read_parquet('{p}')").fetchall()
        conn.close()
        assert (
            leaks(json.dumps(rows, default=lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)))
            == []
        )


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_report_holds_no_secret(planted_gw, fmt):
    root, _, db, _ = planted_gw
    out = root / f"report.{fmt}"
    _run("report", GW_RUN.name, "--format", fmt, "-o", str(out), db=db)
    body = out.read_text()
    assert "secrets.env" in body  # the places are shown (the HTML shows no analysis.md)
    assert fmt == "html" or "Median fix and linear percentile" in body
    assert leaks(body) == []
    assert KEEP["git_sha"] in body


def test_why_view_data_and_text_hold_no_secret(planted):
    from edgetui.views.screens.moments import why_text
    from edgetui.analysis.why_new_best import why_diff, why_of

    _, _, db, _ = planted
    conn = open_db(db, read_only=True)
    try:
        w = why_of(conn, KEY, "agent-4")
        head = why_of(conn, KEY, "agent-4", with_diff=False)
        later = why_diff(conn, head)
    finally:
        conn.close()
    files = {f["path"]: f for f in w["diff"]["files"]}
    assert {"secrets.env", "deploy_key.pem"} <= set(files) and w["notes"]["analysis"].startswith("Median fix")
    for shown in (json.dumps(w), json.dumps(later), why_text(w).plain):
        assert leaks(shown) == []
    assert later["diff"] == w["diff"]
    # the key file's body lines are gone, the diff still shows the file's lines
    assert [ln for ln in files["deploy_key.pem"]["lines"] if ln.startswith("+") and not ln.startswith("+++")]
    assert KEEP["git_sha"] in w["notes"]["analysis"] and KEEP["git_sha"] in json.dumps(files["NOTES.md"])


@pytest.mark.asyncio
async def test_why_screen_in_the_replay_holds_no_secret(planted):
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.moments import WhyScreen

    from test_replay_app import loaded, wait_for

    _, _, db, _ = planted
    app = EdgeTUIApp(db, KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot)
        await pilot.press("G", "left_curly_bracket", "w")  # the last new best: agent-5
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        await pilot.press("left_square_bracket")  # agent-4, where the secrets are
        await wait_for(pilot, lambda: why.diff_shown is not None and why.diff_shown["round"] == "agent-4")
        body = why.body_text()
        assert "secrets.env" in body and "Median fix" in body
        assert leaks(body) == []


def test_pager_copy_of_every_run_file_holds_no_secret(planted):
    """The copy ``o`` hands to $PAGER, with the secrets the live core knows for the run."""
    from edgetui.live.supervisor import Supervisor
    from edgetui.views.screens.live_common import SupervisorActions

    root, td, _, _ = planted
    conn = open_db(root / "live.duckdb")
    sup = Supervisor(conn, [root / "logs" / "runs"], docker_client=None)
    try:
        actions = SupervisorActions(sup)
        sup.poll_once()
        known = actions.known_secrets(KEY)
        assert set(KNOWN.values()) <= known
        names = [
            "run_agent.log",
            "agent_output.txt",
            "run_config.json",
            "submissions/agent-4/analysis.md",
            "submissions/agent-4/test_output.txt",
            "submissions/agent-4/report.json",
        ]
        for name in names:
            path = actions.file_path(KEY, name)
            assert path is not None, name
            view = Path(redacted_copy(path, known))
            try:
                body = view.read_text()
            finally:
                shutil.rmtree(view.parent)
            assert leaks(body) == [], name
            assert REDACTED in body, name
    finally:
        sup.close()
        conn.close()


def test_on_alarm_json_holds_no_secret(planted):
    from edgetui.live.supervisor import Supervisor

    root, _, _, _ = planted
    sink = root / "alarm.json"
    conn = open_db(root / "alarm.duckdb")
    sup = Supervisor(conn, [root / "logs" / "runs"], docker_client=None, on_alarm_cmd=f"cat > {sink}")
    try:
        sup.poll_once()
        assert set(KNOWN.values()) <= set(sup.rec.secrets)  # precondition: the live core learned them
        sup.alarm_cmd.fire(
            {"rule": "infra_error", "run_key": KEY, "message": text_of("run_api_key"), "detail": {"lines": texts()}}
        )
        sup.alarm_cmd.wait()
    finally:
        sup.close()
        conn.close()
    body = sink.read_text()
    assert json.loads(body)["rule"] == "infra_error" and leaks(body) == [] and REDACTED in body


def test_stderr_holds_no_secret(planted):
    _, _, _, r = planted
    assert "started_at" in r.stderr  # the other run's bad file is said, with its line quoted
    assert leaks(r.stderr) == [] and REDACTED in r.stderr


def test_a_pem_key_across_live_log_lines_is_redacted(tmp_path):
    """The live tail reads a run_agent.log while a key is printed one record a line, in three
    pieces with a poll between them: the stream's state goes from BEGIN to END across the reads."""
    from edgetui.live.supervisor import Supervisor

    from test_live_core import fast_settings, log_line, make_run

    root = tmp_path / "runs"
    td = make_run(root)
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, settings=fast_settings())
    key_lines = RULE_SECRETS["ssh_private_key"].splitlines()
    body = key_lines[1:-1]
    assert len(body) >= 2
    try:
        sup.poll_once()
        now = time.time()
        pieces = [key_lines[:2], key_lines[2:-1], key_lines[-1:] + ["after the key: plain text"]]
        for i, piece in enumerate(pieces):
            with open(td / "run_agent.log", "a") as f:
                f.write("".join(log_line(now + i, "INFO", ln) for ln in piece))
            sup.poll_once()
        rows = conn.execute(
            "SELECT summary, data FROM events WHERE source = 'run_agent.log' ORDER BY \"offset\""
        ).fetchall()
    finally:
        sup.close()
        conn.close()
    blob = json.dumps(rows)
    assert "after the key: plain text" in blob
    for ln in body:
        assert ln[:40] not in blob, ln
    assert sum(REDACTED in s for s, _ in rows) >= len(body)


def test_credential_values_starting_with_a_digit_are_redacted_numbers_and_hashes_kept():
    for kind, (name, value) in DIGIT_FIRST.items():
        for text in (f"{name}={value}", f'"{name.lower()}": "{value}"', f"export {name}='{value}' && run"):
            assert value not in redact_text(text), (kind, text)
    for text in (
        "tokens=1234",
        "max_tokens=4096",
        "key_count=12",
        f"commit={KEEP['git_sha']}",
        f"key={KEEP['git_sha']}",
        "password_min_length=12",
        "secret_ratio=0.75",
        f"sha={KEEP['commit']}",
    ):
        assert redact_text(text) == text, text


def test_live_alarm_of_an_error_log_line_holds_no_secret(tmp_path):
    """An ERROR record of run_agent.log becomes the infra_error alarm's message: shown in the live
    screens from the supervisor's memory (never through the database), so it is redacted when read,
    the run's known secret (its run_config api_key) too."""
    from edgetui.live.supervisor import Supervisor

    from test_live_core import fast_settings, log_line, make_run

    root = tmp_path / "runs"
    td = make_run(root, config={"api_key": KNOWN["run_api_key"]})
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, settings=fast_settings())
    try:
        sup.poll_once()
        with open(td / "run_agent.log", "a") as f:
            f.write(
                log_line(
                    time.time(),
                    "ERROR",
                    f"request failed: {text_of('github_pat_classic')} with key {KNOWN['run_api_key']}",
                )
            )
        sup.poll_once()
        runs = sup.poll_once()
    finally:
        sup.close()
        conn.close()
    msgs = [a.message for r in runs for a in r.alarms if a.rule == "infra_error"]
    assert msgs and all("request failed" in m for m in msgs)
    assert leaks(" ".join(msgs)) == [] and REDACTED in msgs[0]
