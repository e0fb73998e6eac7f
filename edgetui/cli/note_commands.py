"""Commands on moments and annotations: ``moments``, ``annotate``, ``annotations``, ``report``,
``import``, ``export`` (``main`` in :mod:`edgetui.cli.main` finds them here as ``cmd_<name>``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from edgetui.quantities import plural
from edgetui.cli.run_arguments import resolve_run, write_op
from edgetui.cli.output import emit, for_terminal, visible
from edgetui.errors import UserError


MOMENT_COLUMNS = (
    "detector",
    "round",
    "elapsed_h",
    "before",
    "after",
    "gain",
    "noise",
    "lead_min",
    "confidence",
    "components",
    "provisional",
)


def _moment_row(m: dict, fmt: str) -> tuple:
    def r(v, n=4):
        return None if v is None else round(v, n)

    comps = m.get("components") or {}
    if fmt == "table":
        comps = ", ".join(f"{k} {a:g}→{b:g}" for k, (a, b) in list(comps.items())[:3])
    return (
        m["detector"],
        m["round"],
        # (a table shows it as h:mm:ss, edgetui.cli.output.DURATION_COLUMNS: to the second there)
        r(m["elapsed_s"] / 3600.0 if m.get("elapsed_s") is not None else None, 2 if fmt != "table" else 9),
        r(m["score_before"]),
        r(m["score_after"]),
        r(m["gain"]),
        r(m["noise"]),
        r(m["lead_time_s"] / 60.0 if m.get("lead_time_s") is not None else None, 1),
        r(m["confidence"], 3),
        comps if fmt != "csv" else json.dumps(comps),
        bool(m.get("provisional")),
    )


def cmd_moments(db: Path, args) -> int:
    """``edgetui moments RUN``: rebuild the run's moments, list them (table / csv / json)."""
    if not db.exists():
        raise FileNotFoundError(f"no database at {db}")
    key, rows = write_op(db, args.run, args.host, lambda conn, k: {"op": "moments", "run_key": k})
    if args.detector != "all":
        rows = [m for m in rows if m["detector"] == args.detector]
    if args.format == "json":
        print(json.dumps({"run_key": key, "moments": rows}, indent=1))
        return 0
    from edgetui.store.holder_socket import QueryResult

    emit(QueryResult(list(MOMENT_COLUMNS), [_moment_row(m, args.format) for m in rows]), args.format)
    return 0


def _typed(db: Path, req: dict) -> Any:
    """Carry out one typed request on the file, or through the process holding it."""
    from edgetui.store.database import DatabaseBusy, busy_because, open_db
    from edgetui.store.holder_socket import ask_holder_op
    from edgetui.record.forget_and_tag import apply_request

    try:
        conn = open_db(db)
    except DatabaseBusy as busy:
        try:
            return ask_holder_op(db, req)
        except ConnectionError as why:
            raise busy_because(busy, why) from None
    try:
        reply = apply_request(conn, req)
    finally:
        conn.close()
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["ok"]


def cmd_annotate(db: Path, args) -> int:
    if not db.exists():
        raise FileNotFoundError(f"no database at {db}")
    if args.delete:
        ok = _typed(db, {"op": "annotation_delete", "annotation_id": args.delete})
        print(f"annotation {args.delete} " + ("deleted" if ok else "was not there"))
        return 0 if ok else 1
    if args.edit:
        if args.label is None and args.text is None:
            raise ValueError("--edit needs --label or --text")
        ok = _typed(db, {"op": "annotation_edit", "annotation_id": args.edit, "label": args.label, "text": args.text})
        print(f"annotation {args.edit} " + ("changed" if ok else "not found"))
        return 0 if ok else 1
    if not args.run:
        raise ValueError("annotate needs RUN (or --edit / --delete ANNOTATION_ID)")
    if not (args.round or args.event):
        raise ValueError("annotate needs --round ROUND or --event EVENT_ID")
    key, aid = write_op(
        db,
        args.run,
        args.host,
        lambda conn, k: {
            "op": "annotate",
            "run_key": k,
            "round": args.round,
            "event_id": args.event,
            "label": args.label,
            "text": args.text or "",
        },
    )
    already = " (already)" if aid["already"] else ""  # (the same label and text there: stored once)
    print(visible(f"{key}: annotation {aid['annotation_id']} on {args.round or args.event}{already}"))
    return 0


def _read_conn(db: Path):
    """A read-only connection, or a snapshot copy when another process holds the file."""
    from edgetui.store.database import DatabaseBusy, open_db, snapshot_copy

    if not db.exists():
        raise FileNotFoundError(f"no database at {db}")
    try:
        return open_db(db, read_only=True)
    except DatabaseBusy:
        return snapshot_copy(db)


def cmd_annotations(db: Path, args) -> int:
    from edgetui.record.annotations import list_annotations, moment_queue
    from edgetui.store.holder_socket import QueryResult

    conn = _read_conn(db)
    try:
        if args.queue:
            rows = moment_queue(conn)
        else:
            key = resolve_run(conn, args.run, args.host) if args.run else None
            rows = list_annotations(conn, key)
    finally:
        conn.close()
    if args.format == "json":
        print(json.dumps(rows, indent=1, default=str))
        return 0
    cols = list(rows[0]) if rows else (["run_key", "round"] if args.queue else ["annotation_id", "run_key", "label"])
    emit(QueryResult(cols, [tuple(r.get(c) for c in cols) for r in rows]), args.format)
    return 0


#: ``report -o FILE``'s format when --format is not given: by FILE's extension
REPORT_FORMAT_BY_SUFFIX = {".html": "html", ".htm": "html", ".md": "md", ".json": "json", ".pdf": "pdf"}


def report_format(given: str | None, output: Path | None) -> str:
    """``edgetui report``'s format: ``--format``, else the one ``-o``'s extension names, else md.
    A --format the extension contradicts (``--format md -o r.html``) is refused."""
    by_suffix = REPORT_FORMAT_BY_SUFFIX.get(output.suffix.lower()) if output is not None else None
    if given is None:
        return by_suffix or "md"
    if output is not None and by_suffix is not None and by_suffix != given:
        raise UserError(
            f"--format {given} contradicts -o {visible(str(output))} (a .{output.suffix[1:]} file); "
            f"drop --format, or name the file .{given}"
        )
    return given


def cmd_report(db: Path, args) -> int:
    from edgetui.analysis.report import build_report, to_html, to_json, to_markdown

    args.format = report_format(args.format, args.output)
    if args.output is not None:
        where = args.output.expanduser().parent
        if not where.is_dir():  # said before the report is built, in words rather than an errno
            raise UserError(f"cannot write {visible(str(args.output))}: no such directory")
    conn = _read_conn(db)
    try:
        key = resolve_run(conn, args.run, args.host)
        rep = build_report(conn, key, with_diff=not args.no_diff)
    finally:
        conn.close()
    if args.format == "pdf":
        from edgetui.analysis.report_pdf import NoBrowser, print_pdf

        if args.output is None:
            raise ValueError("--format pdf needs -o FILE.pdf (a PDF is not written to a terminal)")
        try:
            print_pdf(to_html(rep), args.output)
        except NoBrowser as e:
            raise LookupError(str(e)) from None
        print(
            f"wrote {args.output} ({plural(len(rep['moments']), 'moment')}, {plural(len(rep['annotations']), 'annotation')})"
        )
        return 0
    text = {"md": to_markdown, "json": to_json, "html": to_html}[args.format](rep)
    if args.output is None:
        sys.stdout.write(for_terminal(text))  # (escaped on a terminal; a pipe or file gets the bytes)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as e:
            raise UserError(f"cannot write {visible(str(args.output))}: {e.strerror or e}") from None
        print(
            f"wrote {args.output} ({plural(len(rep['moments']), 'moment')}, {plural(len(rep['annotations']), 'annotation')})"
        )
    return 0


def cmd_import(db: Path, args) -> int:
    try:
        data = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{args.file}: cannot read ({e})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{args.file}: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    items = data.get("annotations") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError(f"{args.file}: not an edgetui JSON report (no annotations list)")
    res = _typed(db, {"op": "annotations_import", "annotations": items})
    print(
        f"{args.file}: {plural(res['added'], 'annotation')} restored, {len(items) - res['added'] - len(res['unmatched'])} "
        f"already there, {len(res['unmatched'])} not matched"
    )
    for u in res["unmatched"]:
        print(
            visible(
                f"  not matched: {u.get('annotation_id')} ({u.get('run_key')} {u.get('round') or u.get('event_id')}): "
                f"{u['reason']}"
            )
        )
    return 1 if res["unmatched"] else 0


def cmd_export(db: Path, args) -> int:
    from edgetui.store.database import open_db

    out = args.out
    if out.exists() and not out.is_dir():
        raise UserError(f"cannot export to {visible(str(out))}: it is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise UserError(
            f"not exporting to {visible(str(out))}: the directory is not empty (its files would be replaced); "
            "choose an empty or new directory, or add --force"
        )
    conn = open_db(db, read_only=True)
    try:
        out.mkdir(parents=True, exist_ok=True)
        quoted = str(out).replace("'", "''")  # an SQL string literal: a quote in the path stays a quote
        conn.execute(f"EXPORT DATABASE '{quoted}' (FORMAT parquet)")
    finally:
        conn.close()
    print(f"exported to {args.out}")
    return 0
