"""A parsing process started before it is needed (core, no Textual imports; this module imports
nothing heavy, so the CLI can start it before its own imports).

A transcript over ``edgetui.record.ingest.MP_MIN_BYTES`` is parsed in a second process
(:func:`edgetui.parsers.parsing_process.child_parse`), whose start costs ~0.4 s of imports (pydantic,
pyarrow, the parsers) on the ingest's critical path. ``edgetui ingest BIG_FILE`` starts it
(:func:`start`) while its own imports and the database's opening go on; the ingest then takes it
(:func:`take`) instead of starting one. Not taken, it is stopped (:func:`stop`, or with this
process: ``PR_SET_PDEATHSIG``, daemon process)."""

from __future__ import annotations

import os
from typing import Optional

import stat
from edgetui.error_log import note_swallowed
from edgetui.parsers.parsing_process import die_with_parent, serve_parse
from edgetui.parsers.helper_process import ignore_ctrl_c
from edgetui.parsers.arrow_batches import build_table  # noqa: F401  (imported ahead, as child_parse will)
from edgetui.parsers.detect import parser_for  # noqa: F401 - imported ahead (warming the child), as child_parse will
from edgetui.parsers.helper_process import start_process

import multiprocessing as mp

_ready: Optional[tuple] = None  # (process, pipe)

#: files with more than this left to read are parsed in a second process (edgetui.record.ingest.ingest_lines)
MP_MIN_BYTES = 32 * 1024 * 1024


def start_for(paths) -> None:
    """:func:`start` when one of ``paths`` is a regular file over :data:`MP_MIN_BYTES` (a big
    transcript given on its own)."""

    for p in paths:
        try:
            st = os.stat(p)
        except (OSError, ValueError):  # gone, or not a path: no reason to start
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > MP_MIN_BYTES:
            start()
            return


def _wait(conn, parent_pid: int) -> None:
    """The process: imports what parsing needs, then parses the one job it is given on the pipe
    ``conn`` (None, or the pipe closed: ends), its batches sent back on it."""

    die_with_parent(parent_pid)

    ignore_ctrl_c()

    try:
        job = conn.recv()
    except EOFError:  # the parent closed the pipe: nothing to parse
        return
    if job is not None:
        serve_parse(conn, *job)


def start() -> None:
    """Start the process now (once; nothing when one waits already)."""
    global _ready
    if _ready is not None or os.environ.get("EDGETUI_NO_MP"):
        return

    conn, child_end = mp.Pipe()
    try:
        proc = start_process(_wait, (child_end, os.getpid()), "edgetui-parse")
    except OSError:
        conn.close()
        return
    finally:
        child_end.close()
    _ready = (proc, conn)


def take():
    """``(process, pipe)`` of the waiting process, or None; the caller sends one job
    (:func:`edgetui.parsers.parsing_process.child_parse`'s arguments after its queue) on the pipe and reads
    the batches from it."""
    global _ready
    got, _ready = _ready, None
    if got is not None and not got[0].is_alive():
        return None
    return got


def stop() -> None:
    """End the waiting process, if any."""
    got = take()
    if got is not None:
        proc, conn = got
        try:
            conn.send(None)
            proc.join(timeout=2)
        except Exception:  # noqa: BLE001 - (closed: it is killed instead)
            note_swallowed("closed: it is killed instead")
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=2)
        conn.close()
