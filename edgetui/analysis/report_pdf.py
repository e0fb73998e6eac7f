"""A report's HTML printed to PDF by a headless Chromium (``edgetui report --format pdf``).

The browser is the system's: ``$EDGETUI_CHROMIUM`` when set, else the first of
``chromium-headless-shell``, ``chromium``, ``chromium-browser``, ``google-chrome`` and
``google-chrome-stable`` on ``PATH`` (Debian's ``chromium-headless-shell`` is what the tests
install, tests/prereqs.py). It loads the self-contained HTML from a private temporary folder by
its ``file://`` URL in a fresh profile with background networking off (the page's content policy
refuses any request anyway) and prints it with Chromium's own ``--print-to-pdf``, without the
browser's header and footer; the page's print CSS keeps charts and table rows whole
(:mod:`edgetui.analysis.report`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

__all__ = ["BROWSERS", "NoBrowser", "find_browser", "print_pdf"]

#: the browsers looked for on PATH, in this order
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class NoBrowser(RuntimeError):
    """No headless Chromium to print with (its message says what to install)."""


def find_browser() -> Path:
    """The Chromium to print with; raises :class:`NoBrowser` naming what was looked for."""
    env = os.environ.get("EDGETUI_CHROMIUM")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise NoBrowser(f"EDGETUI_CHROMIUM={env}: no such executable")
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise NoBrowser(
        "no headless Chromium found to print the PDF (looked for "
        + ", ".join(BROWSERS)
        + " on PATH, and $EDGETUI_CHROMIUM): install one (Debian/Ubuntu: sudo apt-get install "
        "chromium-headless-shell) or write --format html and print it from a browser"
    )


def print_pdf(html_text: str, out: Path, browser: Optional[Path] = None, timeout_s: float = 120.0) -> Path:
    """Print ``html_text`` to the PDF file ``out`` with ``browser`` (default :func:`find_browser`).
    Raises :class:`NoBrowser`, or ``RuntimeError`` with the browser's last words when it fails."""
    browser = browser or find_browser()
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix="edgetui-pdf-") as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html_text, encoding="utf-8")
        pdf = Path(tmp) / "report.pdf"
        cmd = [
            str(browser),
            "--headless",
            "--disable-gpu",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            "--disable-background-networking",
            "--no-first-run",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            page.as_uri(),
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{browser} did not print the report within {timeout_s:g} s") from None
        if r.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
            last = " ".join((r.stderr or "").split())[-300:]
            raise RuntimeError(f"{browser} could not print the report (exit {r.returncode}): {last}")
        shutil.move(str(pdf), str(out))
    return out
