"""``edgetui serve`` in a real browser, and its access checks against the real server.

The server is the real command (``python -m edgetui.cli.main serve``) in a child process, bound
beyond 127.0.0.1 (on 127.0.0.2, another loopback address, so it asks for the token) on a port the
OS gives; its tabs are real app processes started by textual-serve that read through the server's
holder socket. The browser is Debian's ``chromium-headless-shell`` (found or installed when the
session starts, tests/prereqs.py) driven by Playwright's Python package with ``executable_path``
set to it: Playwright's own browsers are never downloaded. The terminal is drawn by xterm.js on a
canvas: the test clicks into it, presses keys, compares screenshots, and reads what the app did
(an annotation written as a typed request, the report downloaded) from the database.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import aiohttp
import pytest

from conftest import copy_samples_db
from edgetui.store.holder_socket import ask_holder
from prereqs import need

RUN_ID = "opus48-edge-3-20260312005800"
#: a bound on each wait for something that happens by itself (a tab drawn, a process ended); a
#: wait that runs out fails the test with what was awaited, it measures nothing
WAIT_S = 45.0


def chromium_binary() -> Path:
    """The headless shell's binary: Debian's ``chromium-headless-shell`` is a shell script that runs
    it (without exec), and Playwright talks to the browser over pipes it hands to its child."""
    found = need("chromium-headless-shell")  # skips with the install line (fails under CI=true)
    head = found.read_bytes()[:4096]
    if head.startswith(b"#!"):
        m = re.search(rb"(/\S*chromium-headless-shell)\b", head.split(b"\n", 1)[1])
        if m and Path(m.group(1).decode()).is_file():
            return Path(m.group(1).decode())
    return found


def tab_processes(db: Path) -> list[int]:
    """The PIDs of the browser tabs' app processes of the server of ``db`` (their command names it)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        if b"edgetui.cli.browser_tab" in argv and str(db).encode() in argv:
            out.append(int(d.name))
    return out


def wait_for(what: str, check, timeout: float = WAIT_S, page=None):
    """``check()`` once it is true; ``page``: wait through Playwright (its events, such as a
    download, are taken only while it is called)."""
    deadline = time.monotonic() + timeout
    while True:
        v = check()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {timeout:.0f} s: {what}")
        if page is not None:
            page.wait_for_timeout(200)
        else:
            time.sleep(0.2)


class Served:
    def __init__(self, db: Path, proc: subprocess.Popen, url: str) -> None:
        self.db = db
        self.proc = proc
        self.url = url
        self.base = url.split("/?", 1)[0]
        self.token = url.split("token=", 1)[1]
        self.origin = self.base
        self.said = ""


def start_server(db: Path, *extra: str) -> Iterator[Served]:
    """``edgetui serve`` of ``db`` in a child process, until the caller is done (then ctrl+c, and no
    tab process may be left)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "serve", *extra]
        + ["--bind", "127.0.0.2", "--port", "0", "--max-tabs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("  each tab opens"):
                break
        m = re.search(r"edgetui serve: open (http://127\.0\.0\.2:\d+/\?token=\S+)", "".join(lines))
        assert m, f"the server said: {''.join(lines)!r}"
        # the rest of what it says (the tabs' errors), read so that its pipe never fills
        drain = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
        drain.start()
        served = Served(db, proc, m.group(1))
        served.said = "".join(lines)
        yield served
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError("edgetui serve did not end on ctrl+c") from None
    assert proc.returncode == 0, "".join(lines)
    assert tab_processes(db) == [], "a tab's app process outlived the server"


@pytest.fixture
def served(samples_template, tmp_path) -> Iterator[Served]:
    yield from start_server(copy_samples_db(samples_template, tmp_path / "served.duckdb"), RUN_ID)


def holder_rows(db: Path, sql: str) -> list[tuple]:
    return ask_holder(db, sql).rows


# ---------------------------------------------------------------------------- without a browser


def test_the_real_server_refuses_requests_without_the_token_and_foreign_origins(served: Served):
    async def go() -> None:
        async with aiohttp.ClientSession() as s:
            for path in ("/", "/static/js/textual.js", "/download/anything"):
                async with s.get(served.base + path) as r:
                    assert r.status == 401, path
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:  # the right Origin, no token
                await s.ws_connect(served.base + "/ws", origin=served.origin)
            assert e.value.status == 401
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:  # the token, another Origin
                await s.ws_connect(f"{served.base}/ws?token={served.token}", origin="http://evil.example")
            assert e.value.status == 403
            async with s.get(served.url) as r:
                assert r.status == 200 and "data-session-websocket-url" in await r.text()
                port = served.base.rsplit(":", 1)[1]
                assert r.cookies[f"edgetui_token_{port}"].value == served.token  # (one per server of a host)
                assert "fonts.googleapis.com" not in await r.text()
        assert tab_processes(served.db) == []  # nothing started for any refused request

    asyncio.run(go())


@pytest.mark.slow
def test_tabs_are_capped_and_a_closed_tab_ends_its_process(served: Served):
    async def go() -> None:
        ws_url = f"{served.base}/ws?token={served.token}&width=100&height=30"
        async with aiohttp.ClientSession() as s:
            tabs = [await s.ws_connect(ws_url, origin=served.origin) for _ in range(2)]
            for ws in tabs:  # each tab's app draws (bytes of its screen), so its process runs
                msg = await ws.receive(timeout=WAIT_S)
                assert msg.type == aiohttp.WSMsgType.BINARY and msg.data
            assert len(tab_processes(served.db)) == 2
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:  # --max-tabs 2
                await s.ws_connect(ws_url, origin=served.origin)
            assert e.value.status == 503
            async with s.get(served.url) as r:
                assert r.status == 503 and "--max-tabs 2" in await r.text()
            await tabs[0].close()
            await asyncio.to_thread(wait_for, "one tab's process ended", lambda: len(tab_processes(served.db)) == 1)
            again = await s.ws_connect(ws_url, origin=served.origin)  # a place is free again
            await again.close()
            await tabs[1].close()
            await asyncio.to_thread(wait_for, "every tab's process ended", lambda: tab_processes(served.db) == [])
            # the server stopped while a tab is open: the tab is closed and its process ends with it
            last = await s.ws_connect(ws_url, origin=served.origin)
            assert (await last.receive(timeout=WAIT_S)).type == aiohttp.WSMsgType.BINARY
            served.proc.send_signal(signal.SIGINT)
            while (await last.receive(timeout=WAIT_S)).type == aiohttp.WSMsgType.BINARY:
                pass  # (the app's last frames, then the close)
            assert await asyncio.to_thread(served.proc.wait, 30) == 0
        assert tab_processes(served.db) == []

    asyncio.run(go())


def test_a_database_another_process_holds_is_served_through_that_process(samples_template, tmp_path):
    """The app (here: a holder in this process) holds the file: ``edgetui serve`` does not open it,
    says whose it is, and its tabs read through that holder."""
    from edgetui.record.forget_and_tag import holder_server
    from edgetui.store.database import open_db

    db = copy_samples_db(samples_template, tmp_path / "held.duckdb")
    conn = open_db(db)
    holder = holder_server(conn, db)
    try:
        for served in start_server(db, RUN_ID):
            assert f"(PID {os.getpid()}), which holds it" in served.said, served.said
            assert "held by this process" not in served.said

            async def go(served: Served) -> None:
                async with aiohttp.ClientSession() as s:
                    ws = await s.ws_connect(f"{served.base}/ws?token={served.token}", origin=served.origin)
                    drawn = b""
                    while RUN_ID.encode() not in drawn:  # the replay's header, read through the holder
                        msg = await ws.receive(timeout=WAIT_S)
                        assert msg.type == aiohttp.WSMsgType.BINARY, (msg, drawn[-2000:])
                        drawn += msg.data
                    await ws.close()

            asyncio.run(go(served))
    finally:
        holder.close()
        conn.close()


# ---------------------------------------------------------------------------- in the browser


def settled(page, timeout: float = WAIT_S, still_s: float = 2.0) -> bytes:
    """A screenshot once the page stops changing: the same for ``still_s`` seconds (a replay loads in
    steps: the header, the events, the chart, its moments; a loaded machine pauses between them)."""
    prev = page.screenshot()
    same_since = time.monotonic()
    deadline = same_since + timeout
    while time.monotonic() < deadline:
        page.wait_for_timeout(250)
        shot = page.screenshot()
        if shot != prev:
            prev, same_since = shot, time.monotonic()
        elif time.monotonic() - same_since >= still_s:
            return shot
    raise AssertionError(f"the page kept changing for {timeout:.0f} s")


WS_JS = """(url) => new Promise((done) => {
    const ws = new WebSocket(url);
    ws.onopen = () => { ws.close(); done("open"); };
    ws.onclose = (e) => done("refused " + e.code);
})"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_browser_replays_a_run_annotates_it_and_downloads_its_report(served: Served, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium_binary()), args=["--no-sandbox"])
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
            downloads: list = []
            ctx.on("page", lambda p: p.on("download", lambda d: downloads.append(d)))  # (the report opens in a new tab)
            page = ctx.new_page()
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))

            assert page.goto(served.base + "/").status == 401  # no token: no page
            assert page.goto(served.url).status == 200
            page.wait_for_selector("body.-first-byte", timeout=WAIT_S * 1000)  # the app's first bytes drew
            wait_for("the tab's app process", lambda: len(tab_processes(served.db)) == 1)
            opened = settled(page)
            page.screenshot(path=str(tmp_path / "replay-opened.png"))

            page.mouse.click(640, 600)  # into the terminal's canvas (the event list)
            page.keyboard.press("]")
            page.keyboard.press("]")  # the second graded submission
            stepped = settled(page)
            page.screenshot(path=str(tmp_path / "replay-stepped.png"))
            assert stepped != opened, "the screen did not change with the steps"

            page.keyboard.press("L")
            # the prompt opens (keys typed before it has the focus go to the replay; its cursor blinks,
            # so the page never settles): drawn, then a moment for the focus
            wait_for("the annotation prompt", lambda: page.screenshot() != stepped, page=page)
            page.wait_for_timeout(1000)
            page.keyboard.type("reframe: seen in the browser")
            page.keyboard.press("Enter")
            rows = wait_for(
                "the tab's annotation, written by the server",
                page=page,
                check=lambda: holder_rows(
                    served.db,
                    "SELECT a.label, a.text, e.kind, e.summary FROM annotations a JOIN events e USING (event_id)",
                ),
            )
            assert len(rows) == 1
            label, text, kind, summary = rows[0]
            assert (label, text) == ("reframe", "seen in the browser")
            assert summary.startswith("agent-2 graded"), (kind, summary)

            page.keyboard.press("R")
            wait_for("the report's download", lambda: downloads, page=page)
            report = Path(downloads[0].path()).read_text(encoding="utf-8")
            assert report.startswith("<!DOCTYPE html>") and RUN_ID in report
            assert downloads[0].suggested_filename == f"{RUN_ID}-gw_signal_search.report.html"

            # the page asked no other host for anything (textual-serve's Google Fonts link is left out)
            assert requested and [u for u in requested if not u.startswith(served.base + "/")] == []

            # a page of another site cannot open a tab, even knowing the token: its Origin is refused
            ws_url = served.base.replace("http:", "ws:") + f"/ws?token={served.token}"
            evil = ctx.new_page()
            evil.route("http://evil.test/", lambda r: r.fulfill(status=200, content_type="text/html", body="<p>x"))
            evil.goto("http://evil.test/")
            assert evil.evaluate(WS_JS, ws_url).startswith("refused")
            assert page.evaluate(WS_JS, ws_url) == "open"  # the same from the served page: accepted
        finally:
            browser.close()
    wait_for("the tabs' processes ended with the browser", lambda: tab_processes(served.db) == [])
