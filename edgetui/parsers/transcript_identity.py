"""The identity of a bare transcript: its run's task id, from its content, not its file name (no Textual)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from edgetui.parsers.base import file_generation, open_regular


def transcript_task_id(path: Path) -> str:
    """``transcript-<8 hex>``: the identity of a bare transcript's content (the sha1 of its first line,
    i.e. its generation, with its session id when the first records name one). Two different files
    of the same name are two runs; the same file moved or copied is the same run."""
    gen = file_generation(path) or ""
    session = ""
    try:
        with open_regular(path) as f:
            head = f.read(65536)
        m = re.search(rb'"(?:session_id|sessionId)"\s*:\s*"([^"]{1,200})"', head)
        session = m.group(1).decode("utf-8", "replace") if m else ""
    except OSError:  # unreadable: the identity of its generation alone
        pass
    return "transcript-" + hashlib.sha1(f"{gen}\x1f{session}".encode()).hexdigest()[:8]
