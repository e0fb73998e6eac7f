"""`edgetui report RUN --format html` in a real headless browser: it renders, and it asks the
network for nothing.

The browser is Debian's ``chromium-headless-shell`` (found or installed when the session
starts, see prereqs.py). Each load writes Chromium's own network log (``--log-net-log``):
every request the network stack saw, whatever asked for it (the page, a CSS rule, an SVG
reference, a prefetch), with its URL. "No network request" means no http(s), ws(s) or ftp
URL in that log's events. A variant of the report with an external image (and its content
policy removed) proves the check sees a request when there is one; the same image with the
policy kept proves the policy is what stops it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edgetui.cli.main import main
from prereqs import need

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800"
TASKS = ROOT / "sample_runs" / "tasks"
RUN_ID = "opus48-edge-3-20260312005800"
#: schemes that leave the machine (file: and data: do not)
NETWORK_URL = re.compile(r"\b(?:https?|wss?|ftp)://[^\s\"'<>]+", re.IGNORECASE)
#: the report's content policy, as report.to_html writes it
CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')
EXTERNAL_IMG = '<img src="http://127.0.0.1:9/x.png" alt="">'


def network_urls(net_log: Path) -> list[str]:
    """The network URLs in a Chromium net log's events (its ``constants`` are not requests).

    Raises ``AssertionError`` when the log is not a finished net log (Chromium writes the
    closing brackets on a clean exit) or holds no event at all (nothing was logged, so
    nothing could be caught).
    """
    log = json.loads(net_log.read_text())
    events = log.get("events")
    assert isinstance(events, list) and events, f"{net_log}: a net log without events"
    found: list[str] = []

    def walk(v) -> None:
        if isinstance(v, str):
            found.extend(NETWORK_URL.findall(v))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(events)
    return sorted(set(found))


def load(html: Path, tmp: Path) -> tuple[str, list[str]]:
    """Load ``html`` by its file:// URL in headless Chromium: (the DOM after load, network URLs)."""
    chromium = need("chromium-headless-shell")  # skips with the install line (fails under CI=true)
    net_log = tmp / f"{html.stem}.netlog.json"
    profile = tmp / f"{html.stem}.profile"  # a profile of its own: no state shared with other runs
    cmd = [
        str(chromium),
        "--headless",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--disable-background-networking",  # the log then holds what the page asked for
        "--no-first-run",
        f"--log-net-log={net_log}",
        "--net-log-capture-mode=Default",
        "--dump-dom",
        html.resolve().as_uri(),
    ]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"chromium exited {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout, network_urls(net_log)


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    shutil.copytree(RUN, tmp / "runs" / RUN.name)
    db = tmp / "a.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(tmp / "runs")]) == 0
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
    out = tmp / "report.html"
    assert main(["--db", str(db), "report", "opus48", "--format", "html", "-o", str(out)]) == 0
    return out


def test_the_html_report_renders_in_headless_chromium_without_a_network_request(report_html, tmp_path):
    dom, urls = load(report_html, tmp_path)
    # rendered: the browser's DOM (not the file's text) has the run, the chart and its moments
    assert f"Run report: {RUN_ID}" in dom
    assert "<svg" in dom and "<polyline" in dom and dom.count("✦") >= 3
    assert "agent-85" in dom and "coherent statistic" in dom
    assert urls == []


def test_the_check_sees_an_external_image_and_the_content_policy_stops_it(report_html, tmp_path):
    text = report_html.read_text()
    assert len(CSP.findall(text)) == 1
    leaky = tmp_path / "leaky.html"
    leaky.write_text(CSP.sub("", text).replace("</h1>", "</h1>" + EXTERNAL_IMG, 1))
    dom, urls = load(leaky, tmp_path)
    assert f"Run report: {RUN_ID}" in dom and "127.0.0.1:9/x.png" in dom
    assert "http://127.0.0.1:9/x.png" in urls  # the check catches a request
    guarded = tmp_path / "guarded.html"
    guarded.write_text(text.replace("</h1>", "</h1>" + EXTERNAL_IMG, 1))
    dom, urls = load(guarded, tmp_path)
    assert "127.0.0.1:9/x.png" in dom and urls == []  # default-src 'none' refuses it before the network
