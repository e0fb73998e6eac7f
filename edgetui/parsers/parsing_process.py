"""The ingest's parsing process: lines -> typed events -> Arrow IPC batches.

Kept free of DuckDB (and of the recorder) so the second process stays small;
also holds the unterminated-last-line handling shared with the single-process
path in :mod:`edgetui.record.ingest`.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from edgetui.events import Event
from edgetui.parsers.base import (
    iter_lines,
    line_events,
    open_regular,
    parse_error,
)  # line_events: the long-line rule, shared with the live tailer

from edgetui.garbage_collector import fewer_collections
from edgetui.parsers.base import MAX_LINE_BYTES, RAW_KEEP
from edgetui.parsers.base import Line
from edgetui.parsers.helper_process import Sender, ignore_ctrl_c
from edgetui.parsers.detect import parser_for
from edgetui.parsers.arrow_batches import build_table

import signal


def err_line(path: Path, e: Event) -> str:
    """``<full path> @ byte <offset>: <reason>`` (a reason past 200 characters cut at a word)."""
    data = e.data or {}
    reason = " ".join(str(data.get("reason") or e.summary).split())
    if len(reason) > 200:
        reason = reason[:200].rsplit(" ", 1)[0] + " …"
    if data.get("unterminated_last_line"):
        reason += "; the file's last line has no newline (cut short?)"
    return f"{path} @ byte {e.offset}: {reason}"


#: ``sub`` offset of parse errors from a file's unterminated last line: such a line may still be
#: growing (a live or copied-while-running file), so the cursor stays before it and these rows are
#: replaced when the file is read again.
TAIL_SUB = 1 << 20


def tail_events(fp, last_end: int, make_parser, source: str, gen: str, state) -> tuple[list[Event], bool]:
    """Events of the bytes after the last newline (an unterminated last line), parsed by a copy of the
    parser (built from ``state``) so the main parser and its cursor stay before that line.
    Returns (events, has_tail)."""

    fp.seek(last_end)
    data = fp.read(MAX_LINE_BYTES + 1)
    if not data:
        return [], False
    tail_parser = make_parser(source, gen, state)
    if len(data) > MAX_LINE_BYTES:
        evs = [
            parse_error(
                source, gen, last_end, data[:RAW_KEEP], f"unterminated last line longer than {MAX_LINE_BYTES >> 20} MiB"
            )
        ]
    else:
        body = data[:-1] if data.endswith(b"\r") else data
        evs = line_events(tail_parser, Line(last_end, body, last_end + len(data)), source, gen)
    evs += tail_parser.finish()
    for e in evs:
        if e.kind == "parse_error":
            e.sub += TAIL_SUB
            e.data = {**(e.data or {}), "unterminated_last_line": True}
    return evs, True


def die_with_parent(parent_pid: int) -> None:
    """Make this process end when its parent does (Linux ``PR_SET_PDEATHSIG`` = SIGKILL), so a
    ``kill -9`` of ``edgetui ingest`` leaves no parsing process (nor, through it, multiprocessing's
    resource tracker) behind. Where prctl is unavailable, a thread polls the parent instead."""

    try:
        # lazy: a libc call made through ctypes only on this path (Linux), not at import
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl failed")
    except (OSError, AttributeError):

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="edgetui-parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the prctl took effect
        os._exit(1)


def serve_parse(conn, *job) -> None:
    """The parsing process's target: :func:`child_parse` of ``job`` with its messages sent on the
    pipe ``conn`` (:class:`edgetui.parsers.helper_process.Sender`)."""

    ignore_ctrl_c()
    sender = Sender(conn)
    try:
        child_parse(sender, *job)
    finally:
        sender.close()


def child_parse(
    q,
    path: str,
    start: int,
    fmt: str,
    source: str,
    gen: str,
    state,
    run_key: str,
    batch_events: int,
    batch_bytes: int,
    parent_pid: int = 0,
) -> None:
    """Parsing process: lines -> events -> Arrow IPC bytes, one message per batch, in file order.
    The batches are **not scrubbed** (:func:`edgetui.parsers.arrow_batches.build_table`): the receiving process
    scrubs each one (:func:`edgetui.parsers.arrow_batches.scrub_table`) before anything is written, on the other
    core while this one parses on."""
    # lazy: pyarrow is not loaded by listing commands; it loads on first use
    import pyarrow as pa

    if parent_pid:
        die_with_parent(parent_pid)

    try:
        parser = parser_for(fmt, source, gen, state)
        batch: list[Event] = []
        n_err, first_err = 0, None
        last_end = batch_start = start

        def send(events, done: bool, state=None) -> None:
            tbl = build_table(run_key, events)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, tbl.schema) as w:
                w.write_table(tbl)
            ro = parser.resume_offset()
            cur = dict(
                offset=ro if ro is not None else last_end,
                state=state if state is not None else parser.state(),
                done=done,
            )
            q.put(("batch", sink.getvalue().to_pybytes(), len(events), cur, last_end, n_err, first_err))

        with open_regular(path) as fp, fewer_collections():
            for line in iter_lines(fp, start, final=False):
                evs = line_events(parser, line, source, gen)
                for e in evs:
                    if e.kind == "parse_error":
                        n_err += 1
                        if first_err is None:
                            first_err = err_line(Path(path), e)
                batch.extend(evs)
                last_end = line.end
                if len(batch) >= batch_events or last_end - batch_start >= batch_bytes:
                    send(batch, False)
                    batch, batch_start = [], last_end
            tail, has_tail = tail_events(
                fp, last_end, lambda s_, g_, st_: parser_for(fmt, s_, g_, st_), source, gen, parser.state()
            )
        if not has_tail:
            tail = parser.finish()
        for e in tail:
            if e.kind == "parse_error":
                n_err += 1
                first_err = first_err or err_line(Path(path), e)
        cur_state = parser.state()
        batch.extend(tail)
        send(batch, not has_tail, state=cur_state)
        q.put(("done",))
    except BaseException as e:  # noqa: BLE001 - reported by the parent as a one-line message
        q.put(("error", " ".join(str(e).split()) or type(e).__name__))
