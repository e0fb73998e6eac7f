"""``edgetui sync``: the team's shared record in PostgreSQL (edgetui/record/team_record.py, docs/team.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["add_commands", "cmd_sync"]


def add_commands(sub, cmd, add_db) -> None:
    p = cmd(
        sub,
        "sync",
        "push this machine's runs to the team's PostgreSQL record and pull the others' (docs/team.md)",
        "EDGETUI_TEAM_URL='postgresql://db.example.org/edgetui' edgetui sync",
        "The connection string comes from $EDGETUI_TEAM_URL or url = '...' in the config file team.toml "
        "(libpq syntax: ~/.pgpass and sslmode are honoured); it is never printed. Repeating a sync, or one "
        "interrupted, adds nothing twice: it resumes where it stopped.",
    )
    add_db(p)
    p.add_argument("--init", action="store_true", help="create the team record (schema edgetui_team) first")
    p.add_argument("--pull", action="store_true", help="only pull (push nothing)")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="make the local database again from the team record (its tombstones and prices kept)",
    )


def cmd_sync(db: Path, args) -> int:
    from edgetui.record import team_record
    from edgetui.store.database import open_db

    cfg = team_record.load_config()
    db = Path(db).expanduser()
    if args.rebuild:
        return _rebuild(db, cfg)
    from edgetui.errors import DatabaseBusy
    from edgetui.store.database import snapshot_copy

    from_copy = False
    try:
        conn = open_db(db)
    except DatabaseBusy:
        if args.pull or args.init:
            raise
        conn = snapshot_copy(db)  # the app holds it: push from a copy of it, pull another time
        from_copy = True
    try:
        if args.init:
            print(team_record.init_team(conn, cfg))
        report = team_record.sync(conn, cfg, pull_only=args.pull, from_copy=from_copy)
    finally:
        conn.close()
    print(report.line())
    if from_copy:
        print(
            f"{db} is held by another process (the app): pushed from a copy of it; "
            "nothing pulled (sync again when it is free)",
            file=sys.stderr,
        )
    if report.push_refused:
        print(report.push_refused, file=sys.stderr)
        return 1
    return 0


def _rebuild(db: Path, cfg) -> int:
    from edgetui.record import team_record
    from edgetui.store.database import open_db

    if db.exists():  # refused early when another process holds it; its local-only tables are carried over
        open_db(db).close()
    new = db.with_name(db.name + ".rebuild")
    for p in (new, Path(str(new) + ".wal")):
        if p.exists():
            p.unlink()
    conn = open_db(new)
    try:
        report = team_record.rebuild(conn, cfg)
        if db.exists():
            conn.execute("ATTACH ? AS edgetui_old (READ_ONLY)", [str(db)])
            conn.execute("INSERT OR IGNORE INTO tombstones SELECT * FROM edgetui_old.tombstones")
            conn.execute("INSERT OR REPLACE INTO prices SELECT * FROM edgetui_old.prices")
            conn.execute("DETACH edgetui_old")
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    os.replace(new, db)
    wal = Path(str(db) + ".wal")
    if wal.exists():  # the old file's log: the new file is complete without it
        wal.unlink()
    print(f"rebuilt {db} from the team record: " + report.line())
    return 0
