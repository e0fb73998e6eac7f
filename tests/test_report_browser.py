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

from edgetui.analysis.report import build_report, to_html, to_markdown
from edgetui.analysis.report_pdf import print_pdf
from edgetui.cli.main import main
from edgetui.store.database import open_db
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
def report_db(tmp_path_factory) -> Path:
    """The 12-hour sample recorded, with an annotation on its agent-85 moment."""
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
    return db


@pytest.fixture(scope="module")
def report_html(report_db) -> Path:
    out = report_db.parent / "report.html"
    assert main(["--db", str(report_db), "report", "opus48", "--format", "html", "-o", str(out)]) == 0
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


# ---------------------------------------------------------------------------- what the report says


def _report(db: Path) -> dict:
    conn = open_db(db, read_only=True)
    try:
        return build_report(conn, f"local/{RUN_ID}/gw_signal_search")
    finally:
        conn.close()


def test_the_report_carries_what_a_colleague_needs_in_html_and_markdown(report_db):
    rep = _report(report_db)
    run = rep["run"]
    assert run["tokens"]["total"] > 80_000_000 and run["cost_usd"] > 40 and run["timeout_s"] == 12 * 3600
    assert 12 * 3600 < run["duration_s"] < 12.1 * 3600
    assert [b["round"] for b in rep["new_bests"]][:2] == ["agent-1", "agent-11"] and len(rep["new_bests"]) == 27
    assert rep["new_bests"][1]["gain"] == pytest.approx(43.14 - 42.8)
    assert rep["best_tests"]["round"] == "agent-213"
    assert [(t["name"], t["status"]) for t in rep["best_tests"]["tests"]][:2] == [
        ("detection", "PASSED"),
        ("localisation", "FAILED"),
    ]
    (ann,) = rep["annotations"]
    assert ann["elapsed_s"] == pytest.approx(next(b["elapsed_s"] for b in rep["new_bests"] if b["round"] == "agent-85"))
    html_text, md = to_html(rep), to_markdown(rep)
    for text in (html_text, md):  # the same content, as a page and as text
        assert "81.3M" in text and "$46.55" in text and "12:01:52 / 12:00:00 (100 % of the budget)" in text
        assert "agent-11" in text and "+0.34" in text and "recovered 358/400 injections" in text
        assert "FAILED" in text and "coherent statistic" in text and "4:29:47" in text
        assert "✦" in text and "◆" in text
    # the chart: value and time ticks, axis titles, a legend, the budget; diffs coloured
    for label in ("0:00", "3:00", "6:00", "9:00", "12:00", "elapsed (h:mm)", "best so far", "reframing moment"):
        assert f">{label}<" in html_text or f">{label} <" in html_text or label in html_text.split("<svg", 1)[1]
    assert ">budget<" in html_text and "stroke-dasharray" in html_text and ">60<" in html_text
    assert '<span class="a">+' in html_text and '<span class="d">-' in html_text
    assert "tr.pass" in html_text and '<tr class="fail">' in html_text
    chart = md.split("```")[1]
    assert "3:00" in chart and "12:00" in chart and "elapsed (h:mm)" in chart
    assert "| agent-85 | 4:29:47 | 57.48 | +5.74 |" in md and "| detection | PASSED | 89.4 | 0.4 |" in md


def test_run_content_is_escaped_in_every_report_format(tmp_path):
    from hostile_run import MARK, PAYLOAD, build

    runs = tmp_path / "runs"
    run = build(runs, "hostile-run", "judge_demo_sum")
    rep_file = run / "judge_demo_sum" / "submissions" / "agent-5" / "report.json"
    d = json.loads(rep_file.read_text())
    evil = f"<script>alert(1)</script>{MARK}{PAYLOAD}|`*x*`"
    for key in ("test_details", "details"):
        d[key][0]["name"] = "case_01" + evil
        d[key][0]["message"] = "msg" + evil
    rep_file.write_text(json.dumps(d, ensure_ascii=False))
    db = tmp_path / "h.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(ROOT / "sample_runs" / "tasks"), str(runs)]) == 0
    for fmt in ("html", "md"):
        out = tmp_path / f"r.{fmt}"
        assert main(["--db", str(db), "report", "hostile-run", "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert "msg&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>" not in text
        controls = [ch for ch in text if (ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0]
        bidi = [ch for ch in text if 0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069]
        assert controls == [] and bidi == [], (fmt, controls[:5], bidi[:5])
        assert "\\x1b]52;c;" in text  # shown, as typed
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    row = next(ln for ln in md.splitlines() if ln.startswith("| case_01"))
    assert row.count(" | ") == 4 and "\\|\\`\\*x\\*\\`" in row  # the run's | ` * cannot make cells or markup


# ---------------------------------------------------------------------------- PDF


def _pages(pdf: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(pdf) as doc:
        return [p.extract_text() or "" for p in doc.pages]


def _whole(pages: list[str], rep: dict) -> list[str]:
    """What is cut at a page's edge: the chart (its legend at the top and its axis title at the bottom
    on different pages), a row of the new bests or tests table (its cells not on one line of one page)."""
    cut = []
    legend = [i for i, t in enumerate(pages) if "reframing moment agent submission auto-eval" in t]
    axis = [i for i, t in enumerate(pages) if "elapsed (h:mm)" in t]
    if len(legend) != 1 or legend != axis:
        cut.append(f"chart: legend on pages {legend}, axis on pages {axis}")
    lines = {ln for t in pages for ln in t.splitlines()}
    for b in rep["new_bests"]:
        head = f"{b['round']} {_el(b['elapsed_s'])} {b['value']:.4g}"
        if not any(ln.startswith(head) for ln in lines):
            cut.append(f"new best row {b['round']}")
    for t in rep["best_tests"]["tests"]:
        head = f"{t['name']} {t['status']} {t['score']:.4g} {t['weight']:.4g}"
        at = [i for i, pg in enumerate(pages) if any(ln.startswith(head) for ln in pg.splitlines())]
        last = (t["message"] or "").split()[-1:]  # a wrapped message's last word: on the row's page
        if len(at) != 1 or (last and last[0] not in pages[at[0]]):
            cut.append(f"test row {t['name']}")
    return cut


def _el(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_the_pdf_report_cuts_no_chart_or_table_row_at_a_page_edge(report_db, tmp_path):
    chromium = need("chromium-headless-shell")  # skips with the install line (fails under CI=true)
    out = tmp_path / "r.pdf"
    assert main(["--db", str(report_db), "report", "opus48", "--format", "pdf", "-o", str(out)]) == 0
    pages = _pages(out)
    rep = _report(report_db)
    assert len(pages) >= 4 and f"Run report: {RUN_ID}" in pages[0] and _whole(pages, rep) == []
    # the same page moved down by a spacer in steps shorter than the chart (~330 px of a ~1,000 px page),
    # with 30 tests of five-line messages: at some step the chart and some rows fall across a page's edge
    # unless the print CSS moves them whole (Chromium never splits the inline SVG; it does split a row)
    rep["best_tests"]["tests"] = [
        {
            "name": f"case_{k:02d}",
            "status": "FAILED" if k % 3 else "PASSED",
            "score": float(k),
            "weight": 1.0,
            "message": " ".join(f"word{i}" for i in range(70)) + f" end{k:02d}",
        }
        for k in range(30)
    ]
    html_text = to_html(rep)
    unguarded = html_text.replace("break-inside:avoid;page-break-inside:avoid", "")
    assert unguarded != html_text

    def cuts(text: str, spacer: int) -> list[str]:
        pdf = tmp_path / f"s{spacer}.pdf"
        print_pdf(text.replace("<body>", f'<body><div style="height:{spacer}px"></div>', 1), pdf, chromium)
        return _whole(_pages(pdf), rep)

    for spacer in (0, 250, 500, 750):
        assert cuts(html_text, spacer) == [], spacer
    # without the print rules some row is cut (the check sees a cut when there is one)
    assert any(c.startswith("test row") for sp in (0, 250, 500) for c in cuts(unguarded, sp))


def test_pdf_without_a_browser_says_what_to_install(report_db, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("EDGETUI_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    out = tmp_path / "r.pdf"
    assert main(["--db", str(report_db), "report", "opus48", "--format", "pdf", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no headless Chromium found" in err and "apt-get install chromium-headless-shell" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    monkeypatch.setenv("EDGETUI_CHROMIUM", str(tmp_path / "nope"))
    assert main(["--db", str(report_db), "report", "opus48", "--format", "pdf", "-o", str(out)]) == 2
    assert "EDGETUI_CHROMIUM=" in capsys.readouterr().err
    assert main(["--db", str(report_db), "report", "opus48", "--format", "pdf"]) == 2
    assert "--format pdf needs -o" in capsys.readouterr().err
