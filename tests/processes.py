"""Helpers for tests that start edgetui in a child process and signal it."""

from __future__ import annotations

import signal


def sigint_as_a_terminal_sends_it() -> None:
    """In the child before exec: SIGINT back to its default. A test suite started in the background
    by a shell without job control inherits SIGINT ignored, and an ignored signal stays ignored
    across exec: the ingest would never see the ctrl+c this test sends (Python installs its
    KeyboardInterrupt handler only when SIGINT is not ignored at start)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
