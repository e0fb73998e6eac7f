"""A team's shared record: every member's runs in one PostgreSQL schema, each local DuckDB a cache of it.

``edgetui sync --init`` creates the schema ``edgetui_team`` (a table per synced table of the local
database, the same columns, plus who recorded each run) and its schema version. ``edgetui sync``
pushes what this machine recorded, then pulls what the others recorded; ``edgetui sync --rebuild``
makes the local database again from the team record. How rows travel (ADBC, Arrow) is
:mod:`edgetui.store.team_transport`'s business; this module says which rows, keyed how.

**Identity.** A run key's host part is ``local`` on every machine; in the team record a local run's
host is ``local@<machine>`` (:func:`team_host`), so two machines never collide. Rows are keyed by
what identifies them already (run key; event id, which is derived from run key, source, generation,
byte offset and sub-index; round; test index...), and written with ``INSERT ... ON CONFLICT``: a
push repeated, interrupted or raced by another machine adds nothing twice.

**Batches and resuming.** A push goes run by run in batches, each batch one server transaction (its
runs' rows of every table, then the runs rows themselves). A run's signature (its runs row, which the
recorder rewrites after every ingest, and its moments) is kept locally once its batch committed
(``team_sync.pushed``): a push killed anywhere resumes with the first batch not committed, and a run
unchanged since its last push costs nothing.

**Pulling in commit order.** Each pushed run gets a number from a server sequence (``push_seq``),
taken under a transaction-level advisory lock held until commit, so numbers become visible in commit
order: a member who pulled up to N has seen every run numbered up to N (``meta.team_pulled_seq``).

**Annotations** are the team's: a version per annotation from a server sequence (the commit order,
never a machine's clock); a push replaces the team's row, the replaced one going to
``annotation_history``; a pull takes every annotation whose version is newer than the one known
here. Tags are the team's too: a union, less the tags removed (``run_tag_removals``, a tombstone with
the removal's time: a tag given before it is removed everywhere, one given after it stays).

**What leaves the machine.** Event text, data and raw lines, submissions' and test results' messages
and annotations pass through :mod:`edgetui.redact` again before they are sent; raw files (transcripts,
submission archives) never leave: a run's rows name its host, path and sizes only.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import re
import socket
import time
import getpass
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, TypeVar

import duckdb
import platformdirs
import pyarrow as pa
import tomllib

from edgetui.hosts.config import load_hosts
from edgetui.parsers.arrow_batches import Scrubber, scrub_table
from edgetui.record.forget_and_tag import UNTAG_PREFIX, forget_run
from edgetui.redact import items_that_may_hold, redact_bytes, redact_text
from edgetui.store.migrate_rescrub import scrub_json_text
from edgetui.store.schema import SCHEMA_VERSION
from edgetui.store.team_transport import TeamError, TeamTransport, TeamUnreachable

T = TypeVar("T")

__all__ = [
    "TEAM_SCHEMA",
    "TEAM_VERSION",
    "TeamConfig",
    "SyncReport",
    "load_config",
    "init_team",
    "sync",
    "team_host",
]

TEAM_SCHEMA = "edgetui_team"
#: version of the team record's own layout (tables beyond the local ones: history, sequences); the
#: local database's schema version is recorded beside it: both must match this edgetui's to sync
TEAM_VERSION = 1

#: per-run tables and the columns that identify a row (a run's rows of all of them move together)
PER_RUN: dict[str, tuple[str, ...]] = {
    "events": ("run_key", "event_id"),
    "submissions": ("run_key", "round"),
    "test_results": ("run_key", "round", "idx"),
    "source_cursors": ("run_key", "source"),
    "record_keys": ("run_key", "rkey", "event_id"),
    "moments": ("run_key", "detector", "version", "round"),
}
#: the team's tables shared whole (small): key columns
SHARED: dict[str, tuple[str, ...]] = {
    "tasks": ("task_id",),
    "fits": ("fit_id",),
    "run_tags": ("run_key", "tag"),
}
#: text columns redacted again before they leave the machine: (table, column) -> kind
REDACT: dict[tuple[str, str], str] = {
    ("events", "summary"): "text",
    ("events", "data"): "json",
    ("events", "raw"): "bytes",
    ("submissions", "summary"): "text",
    ("submissions", "error"): "text",
    ("test_results", "message"): "text",
    ("annotations", "text"): "text",
    ("runs", "config"): "json",
    ("runs", "final"): "json",
}
#: columns holding run keys (mapped between ``local/...`` and ``local@machine/...``)
KEY_COLS = {"run_key", "repeated_from"}

_PG_TYPES = {
    "VARCHAR": "text",
    "DOUBLE": "double precision",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "JSON": "text",
    "BLOB": "bytea",
}
#: runs' extra columns in the team record: who recorded the run, and its place in commit order
RUN_EXTRA = ("recorded_by", "person", "push_seq", "pushed_at")
_LOCK = 4141  # the advisory lock of push_seq / annotation versions (held to commit: numbers in commit order)
#: runs per push batch (one server transaction); EDGETUI_TEAM_BATCH_RUNS changes it (smaller: a push
#: interrupted loses less; the tests use 1 to have many transactions to interrupt)
BATCH_RUNS = 200
BATCH_EVENTS = 100_000


# ---------------------------------------------------------------------------- configuration


@dataclass
class TeamConfig:
    """Where the team record is, who pushes, and ``hosts``: the hosts file's names (this member's
    aliases, the host part of their run keys) -> the team's name of each, ``user@address:port``."""

    url: str
    machine: str
    person: str
    hosts: dict[str, str] = field(default_factory=dict)
    #: seconds between the live watcher's syncs (``push_interval_s``, ``EDGETUI_TEAM_PUSH_S``)
    push_interval_s: float = 60.0

    @property
    def host(self) -> str:
        return team_host(self.machine)

    @property
    def names(self) -> dict[str, str]:
        """Host part here -> host part in the team record (``local`` and each SSH host's alias)."""
        return {**self.hosts, "local": self.host}

    def to_team(self, key: str) -> str:
        h, sep, rest = key.partition("/")
        return self.names.get(h, h) + sep + rest if sep else key

    def to_local(self, key: str) -> str:
        h, sep, rest = key.partition("/")
        back = {t: l for l, t in self.names.items()}
        return back.get(h, h) + sep + rest if sep else key


def config_path() -> Path:
    return Path(platformdirs.user_config_dir("edgetui")) / "team.toml"


_MACHINE_OK = re.compile(r"[^A-Za-z0-9_.:-]+")


def team_host(machine: str) -> str:
    """The host part of this machine's local runs in the team record: ``local@<machine>``."""
    return "local@" + (_MACHINE_OK.sub("-", machine).strip("-") or "unnamed")


def load_config(path: Optional[Path] = None) -> TeamConfig:
    """The team record's connection string (``EDGETUI_TEAM_URL``, else ``url`` of the config file
    ``team.toml``), this machine's name (``EDGETUI_MACHINE`` / ``machine``, else the host name) and
    the member's (``EDGETUI_PERSON`` / ``person``, else the login name)."""
    path = path or config_path()
    conf: dict = {}
    if path.is_file():
        try:
            conf = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise TeamError(f"{path}: not a readable TOML file ({' '.join(str(e).split())})") from None
        unknown = sorted(set(conf) - {"url", "machine", "person", "push_interval_s"})
        if unknown:
            raise TeamError(f"{path}: unknown key {unknown[0]!r} (known: url, machine, person, push_interval_s)")
    url = os.environ.get("EDGETUI_TEAM_URL") or conf.get("url")
    if not url or not isinstance(url, str):
        raise TeamError(
            f"no team record configured: set EDGETUI_TEAM_URL or url = '...' in {path} "
            "(a libpq connection string, e.g. postgresql://db.example.org/edgetui)"
        )
    machine = os.environ.get("EDGETUI_MACHINE") or conf.get("machine") or socket.gethostname()
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): the uid stands for it
        login = f"uid{os.getuid()}"
    person = os.environ.get("EDGETUI_PERSON") or conf.get("person") or login
    every = os.environ.get("EDGETUI_TEAM_PUSH_S") or conf.get("push_interval_s", 60.0)
    try:
        interval = float(every)
    except (TypeError, ValueError):
        interval = -1.0
    if not interval > 0:
        raise TeamError(
            f"push_interval_s (EDGETUI_TEAM_PUSH_S or {path}): {every!r} is not a positive number of seconds"
        )
    return TeamConfig(
        url=url, machine=str(machine), person=str(person), hosts=ssh_host_names(), push_interval_s=interval
    )


def configured(path: Optional[Path] = None) -> bool:
    """Whether a team record is configured at all (``EDGETUI_TEAM_URL``, or a ``team.toml``)."""
    return bool(os.environ.get("EDGETUI_TEAM_URL")) or (path or config_path()).is_file()


def ssh_host_names() -> dict[str, str]:
    """The hosts file's host names -> ``user@address:port`` (the team's name of a host: two members'
    aliases of one machine are one host there). A host given by an ssh_config alias without a user
    keeps its alias's address; a hosts file that does not load: no names mapped (sync says nothing
    of it: ``edgetui watch`` and ``ingest --host`` report its problems)."""
    env = os.environ.get("EDGETUI_HOSTS_FILE")  # (as the host commands read it)
    try:
        hosts = load_hosts(Path(env) if env else None)
    except (ValueError, OSError):  # a broken hosts file is the host commands' to report; sync maps no names
        return {}
    out = {}
    for h in hosts:
        t = h.target
        addr = f"[{t.host}]" if ":" in t.host else t.host
        out[h.name] = (f"{t.user}@" if t.user else "") + f"{addr}:{t.port or 22}"
    return out


# ---------------------------------------------------------------------------- schema


def _local_columns(duck: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [
        (str(n), str(t))
        for n, t in duck.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
            "AND table_schema = 'main' AND table_catalog = current_database() ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ddl(duck: duckdb.DuckDBPyConnection) -> list[str]:
    s = TEAM_SCHEMA
    out = [f"CREATE SCHEMA IF NOT EXISTS {s}"]
    out.append(f"CREATE TABLE IF NOT EXISTS {s}.schema_version (part text PRIMARY KEY, version integer NOT NULL)")
    out.append(f"CREATE SEQUENCE IF NOT EXISTS {s}.push_seq")
    out.append(f"CREATE SEQUENCE IF NOT EXISTS {s}.annotation_version")

    def cols(table: str) -> str:
        return ", ".join(f"{_q(c)} {_PG_TYPES.get(t, 'text')}" for c, t in _local_columns(duck, table))

    out.append(
        f"CREATE TABLE IF NOT EXISTS {s}.runs ({cols('runs')}, recorded_by text, person text, "
        "push_seq bigint, pushed_at double precision, signature text, PRIMARY KEY (run_key))"
    )
    out.append(f"CREATE INDEX IF NOT EXISTS runs_push_seq ON {s}.runs (push_seq)")
    for table, key in {**PER_RUN, **SHARED}.items():
        keys = ", ".join(_q(k) for k in key)
        out.append(f"CREATE TABLE IF NOT EXISTS {s}.{table} ({cols(table)}, UNIQUE NULLS NOT DISTINCT ({keys}))")
        if table in PER_RUN:
            out.append(f"CREATE INDEX IF NOT EXISTS {table}_run ON {s}.{table} (run_key)")
    out.append(
        f"CREATE TABLE IF NOT EXISTS {s}.forgotten (run_key text PRIMARY KEY, forgotten_at double precision, "
        "recorded_by text, person text, push_seq bigint)"
    )
    out.append(_TAG_REMOVALS_DDL)
    out.append(
        f"CREATE TABLE IF NOT EXISTS {s}.annotations ({cols('annotations')}, version bigint NOT NULL, "
        "recorded_by text, person text, deleted boolean NOT NULL DEFAULT false, PRIMARY KEY (annotation_id))"
    )
    out.append(
        f"CREATE TABLE IF NOT EXISTS {s}.annotation_history ({cols('annotations')}, version bigint NOT NULL, "
        "recorded_by text, person text, deleted boolean, replaced_at double precision)"
    )
    return out


#: tags removed (tombstones): a tag given before its removal is gone everywhere, one given after stays.
#: Made by a push too when missing (a team record from before it: same version, one table more)
_TAG_REMOVALS_DDL = (
    f"CREATE TABLE IF NOT EXISTS {TEAM_SCHEMA}.run_tag_removals (run_key text NOT NULL, tag text NOT NULL, "
    "removed_at double precision, recorded_by text, person text, PRIMARY KEY (run_key, tag))"
)


def init_team(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig) -> str:
    """Create the team record's schema (idempotent); one line saying what was done."""
    pg = TeamTransport(cfg.url)
    try:
        found = _team_versions(pg)
        if found:
            _check_versions(found)
            return (
                f"the team record exists (schema {TEAM_SCHEMA}, version {TEAM_VERSION}/{SCHEMA_VERSION}): nothing to do"
            )
        for stmt in _ddl(duck):
            pg.execute(stmt)
        pg.execute(
            f"INSERT INTO {TEAM_SCHEMA}.schema_version VALUES ('team', $1), ('database', $2) ON CONFLICT DO NOTHING",
            [TEAM_VERSION, SCHEMA_VERSION],
        )
        pg.commit()
        return f"created the team record: schema {TEAM_SCHEMA}, version {TEAM_VERSION}/{SCHEMA_VERSION}"
    except BaseException:
        pg.rollback()
        raise
    finally:
        pg.close()


def _team_versions(pg: TeamTransport) -> dict[str, int]:
    has = pg.execute("SELECT to_regclass($1) IS NOT NULL", [f"{TEAM_SCHEMA}.schema_version"])
    if not has or not has[0][0]:
        return {}
    return {str(p): int(v) for p, v in pg.execute(f"SELECT part, version FROM {TEAM_SCHEMA}.schema_version")}


def _check_versions(found: dict[str, int]) -> None:
    mine = {"team": TEAM_VERSION, "database": SCHEMA_VERSION}
    if not found:
        raise TeamError(f"no team record at this server (schema {TEAM_SCHEMA}): create it with `edgetui sync --init`")
    for part in ("team", "database"):
        theirs = found.get(part)
        if theirs != mine[part]:
            older = theirs is not None and theirs > mine[part]
            raise TeamError(
                f"the team record's {part} schema is version {theirs}, this edgetui's is {mine[part]}: "
                + ("upgrade edgetui to sync" if older else "the team record was made by an older edgetui; ")
                + ("" if older else "upgrade it with the team's newest edgetui")
            )


# ---------------------------------------------------------------------------- key mapping


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _to_team(col: str, names: dict[str, str], reverse: bool = False) -> str:
    """SQL (DuckDB) giving column ``col`` with its run keys' host parts as the team names them
    (``names``: here -> team; ``reverse``: the other way)."""
    pairs = [(t, lo) for lo, t in names.items()] if reverse else list(names.items())
    c = _q(col)
    if col == "repeated_from":  # run keys separated by spaces
        expr = c
        for a, b in pairs:
            expr = f"regexp_replace({expr}, {_lit('(^| )' + re.escape(a) + '/')}, {_lit(chr(92) + '1' + b + '/')}, 'g')"
        return f"{expr} AS {c}"
    if col == "host":
        whens = " ".join(f"WHEN host = {_lit(a)} THEN {_lit(b)}" for a, b in pairs)
        return f"CASE {whens} ELSE host END AS host"
    whens = " ".join(
        f"WHEN starts_with({c}, {_lit(a + '/')}) THEN {_lit(b + '/')} || substr({c}, {len(a) + 2})" for a, b in pairs
    )
    return f"CASE {whens} ELSE {c} END AS {c}"


def _from_team(col: str, names: dict[str, str]) -> str:
    return _to_team(col, names, reverse=True)


def _select_to_team(table: str, cols: list[str], names: dict[str, str]) -> str:
    parts = [_to_team(c, names) if c in KEY_COLS or (table == "runs" and c == "host") else _q(c) for c in cols]
    return ", ".join(parts)


def _redact(table: str, rows: pa.Table) -> pa.Table:
    """``rows`` with the text columns of :data:`REDACT` run through edgetui.redact (only the values the
    prefilter flags are touched). Events go through the ingest's own scrubbing of Arrow tables (one RE2
    scan of each column's value buffer, no Python strings unless a row matches)."""
    if table == "events":
        return scrub_table(rows, Scrubber())
    for (t, col), kind in REDACT.items():
        if t != table or col not in rows.column_names:
            continue
        values = rows.column(col).to_pylist()
        if kind == "bytes":
            hits = items_that_may_hold(values, "bytes")
        else:
            hits = items_that_may_hold(values, "text")
        if not hits:
            continue
        for i in hits:
            v = values[i]
            values[i] = (
                redact_bytes(v) if kind == "bytes" else (scrub_json_text(v) if kind == "json" else redact_text(v))
            )
        idx = rows.column_names.index(col)
        rows = rows.set_column(idx, rows.schema.field(idx), pa.array(values, type=rows.schema.field(idx).type))
    return rows


# ---------------------------------------------------------------------------- push


@dataclass
class SyncReport:
    pushed_runs: int = 0
    pushed_rows: int = 0
    unchanged_runs: int = 0
    pulled_runs: int = 0
    pulled_rows: int = 0
    annotations_pushed: int = 0
    annotations_pulled: int = 0
    skipped_events: int = 0
    forgotten_runs: int = 0
    push_refused: str = ""
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        out = (
            f"pushed {self.pushed_runs} run(s) ({self.pushed_rows} rows; {self.unchanged_runs} unchanged), "
            f"pulled {self.pulled_runs} run(s) ({self.pulled_rows} rows), annotations "
            f"{self.annotations_pushed} pushed / {self.annotations_pulled} pulled"
        )
        if self.forgotten_runs:
            out += f"; {self.forgotten_runs} run(s) forgotten by the team"
        if self.skipped_events:
            out += f"; {self.skipped_events} pulled event(s) share an id with a local run's and were left out"
        return out


def _signatures(duck: duckdb.DuckDBPyConnection) -> dict[str, str]:
    rows = duck.execute(
        "SELECT r.run_key, md5(CAST(r AS VARCHAR)) || ':' || coalesce(m.n, '') FROM runs r "
        "LEFT JOIN (SELECT run_key, count(*) || '/' || coalesce(max(built_at), 0) AS n FROM moments GROUP BY ALL) m "
        "USING (run_key)"
    ).fetchall()
    return {str(k): str(s) for k, s in rows}


def _writable(pg: TeamTransport) -> Optional[str]:
    row = pg.execute(f"SELECT current_user, has_table_privilege('{TEAM_SCHEMA}.runs', 'INSERT')")
    if row and not row[0][1]:
        return (
            f"push refused: role {row[0][0]!r} may read the team record but not write it "
            "(pulled only; ask the team's admin for a role with INSERT and UPDATE on schema edgetui_team)"
        )
    return None


def _upsert_sql(table: str, stage: str, cols: list[str], key: tuple[str, ...], extra: str = "") -> str:
    s = TEAM_SCHEMA
    col_list = ", ".join(_q(c) for c in cols)
    keys = ", ".join(_q(k) for k in key)
    sets = ", ".join(f"{_q(c)} = EXCLUDED.{_q(c)}" for c in cols if c not in key)
    cmp_cols = [c for c in cols if c not in key]
    if not cmp_cols:
        return f"INSERT INTO {s}.{table} ({col_list}) SELECT {col_list} FROM {stage} ORDER BY {keys} ON CONFLICT DO NOTHING"
    changed = (
        "("
        + ", ".join(f"{table}.{_q(c)}" for c in cmp_cols)
        + ") IS DISTINCT FROM ("
        + ", ".join(f"EXCLUDED.{_q(c)}" for c in cmp_cols)
        + ")"
    )
    return (
        f"INSERT INTO {s}.{table} AS {table} ({col_list}) SELECT {col_list} FROM {stage} ORDER BY {keys} "
        f"ON CONFLICT ({keys}) DO UPDATE SET {sets} WHERE {changed}"
    )


def _read_batch(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, keys: list[str]) -> dict[str, pa.Table]:
    """The rows of the runs ``keys`` (local keys) of every per-run table and ``runs``, as the team writes
    them (keys mapped, text redacted). ``duck`` is a cursor of its own: this runs in a worker thread
    while the previous batch is sent."""
    duck.execute("CREATE OR REPLACE TEMP TABLE _team_batch (run_key VARCHAR)")
    duck.executemany("INSERT INTO _team_batch VALUES (?)", [[k] for k in keys])
    out: dict[str, pa.Table] = {}
    for table in (*PER_RUN, "runs"):
        cols = [c for c, _ in _local_columns(duck, table)]
        distinct = "DISTINCT " if table == "record_keys" else ""  # no key locally: the same row twice is one row
        rows = duck.sql(
            f"SELECT {distinct}{_select_to_team(table, cols, cfg.names)} FROM {table} "
            "WHERE run_key IN (SELECT run_key FROM _team_batch)"
        ).to_arrow_table()
        out[table] = _redact(table, rows)
    return out


def _send_batch(
    pg: TeamTransport, cfg: TeamConfig, keys: list[str], tables: dict[str, pa.Table], sigs: dict[str, str]
) -> int:
    """One server transaction: every table's rows of the runs ``keys``, then their runs rows."""
    team_keys = [cfg.to_team(k) for k in keys]
    n = 0
    # runs the team record has no rows of yet (a first push): their rows copied straight in; a push
    # racing this one with the same runs fails one of them with a unique violation, tried again below
    pg.execute(f"DELETE FROM {TEAM_SCHEMA}.forgotten WHERE run_key = ANY($1)", [team_keys])  # recorded again
    known = pg.execute(f"SELECT count(*) FROM {TEAM_SCHEMA}.runs WHERE run_key = ANY($1)", [team_keys])
    fresh = not known or not known[0][0]
    for table, key in PER_RUN.items():
        rows = tables[table]
        cols = rows.column_names
        if fresh:
            if rows.num_rows:
                pg.append(TEAM_SCHEMA, table, rows)
            n += rows.num_rows
            continue
        stage = pg.stage(rows)
        match = " AND ".join(f"s.{_q(k)} IS NOT DISTINCT FROM t.{_q(k)}" for k in key)
        pg.execute(
            f"DELETE FROM {TEAM_SCHEMA}.{table} t WHERE t.run_key = ANY($1) "
            f"AND NOT EXISTS (SELECT 1 FROM {stage} s WHERE {match})",
            [team_keys],
        )
        pg.execute(_upsert_sql(table, stage, cols, key))
        pg.execute(f"DROP TABLE {stage}")
        n += rows.num_rows
    rows = tables["runs"]
    cols = rows.column_names
    stage = pg.stage(rows)
    # the sequence under the lock, held to commit: push numbers become visible in commit order
    pg.execute("SELECT pg_advisory_xact_lock($1)", [_LOCK])
    col_list = ", ".join(_q(c) for c in cols)
    sets = ", ".join(f"{_q(c)} = EXCLUDED.{_q(c)}" for c in [*cols[1:], *RUN_EXTRA])
    pg.execute(
        f"INSERT INTO {TEAM_SCHEMA}.runs ({col_list}, recorded_by, person, push_seq, pushed_at) "
        f"SELECT {col_list}, $1, $2, nextval('{TEAM_SCHEMA}.push_seq'), extract(epoch from now()) "
        f"FROM (SELECT * FROM {stage} ORDER BY run_key) s ON CONFLICT (run_key) DO UPDATE SET {sets}",
        [cfg.machine, cfg.person],
    )
    pg.execute(
        f"UPDATE {TEAM_SCHEMA}.runs r SET signature = x.sig FROM unnest($1::text[], $2::text[]) AS x(k, sig) "
        "WHERE r.run_key = x.k",
        [team_keys, [sigs[k] for k in keys]],
    )
    pg.execute(f"DROP TABLE {stage}")
    return n + rows.num_rows


def _batches(duck: duckdb.DuckDBPyConnection, keys: list[str]) -> list[list[str]]:
    counts = dict(
        duck.execute(
            "SELECT run_key, count(*) FROM events WHERE run_key IN (SELECT unnest(?)) GROUP BY ALL", [keys]
        ).fetchall()
    )
    out: list[list[str]] = []
    cur: list[str] = []
    size = 0
    per_batch = max(1, int(os.environ.get("EDGETUI_TEAM_BATCH_RUNS") or BATCH_RUNS))
    for k in keys:
        c = int(counts.get(k, 0))
        if cur and (len(cur) >= per_batch or size + c > BATCH_EVENTS):
            out.append(cur)
            cur, size = [], 0
        cur.append(k)
        size += c
    if cur:
        out.append(cur)
    return out


def _retrying(cfg: TeamConfig, pg_box: list, fn: Callable[[TeamTransport], T], wait_s: float = 60.0) -> T:
    """``fn(transport)`` in one server transaction, committed; on a lost connection (the server restarted)
    or a deadlock, rolled back and tried again on a new connection until ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    delay = 0.5
    while True:
        pg: TeamTransport = pg_box[0]
        try:
            out = fn(pg)
            pg.commit()
            return out
        except TeamError as e:
            pg.rollback()
            text = str(e)
            # a lost connection, a deadlock, or a unique violation of a first push raced by another
            # (the next try sees the rows and upserts): tried again
            transient = isinstance(e, TeamUnreachable) or any(
                w in text for w in ("40P01", "deadlock", "23505", "duplicate key")
            )
            if not transient or time.monotonic() > deadline:
                raise
            pg.close()
            time.sleep(delay)
            pg_box[0] = _connect(cfg, max(0.0, deadline - time.monotonic()))


def _connect(cfg: TeamConfig, wait_s: float = 60.0) -> TeamTransport:
    """A connection to the team record, tried again while the server is unreachable (restarting), up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    delay = 0.2
    while True:
        try:
            return TeamTransport(cfg.url)
        except TeamUnreachable:
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def push(
    duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pg_box: list, report: SyncReport, read_only: bool = False
) -> None:
    """Push the runs changed since they were pushed (and tags, fits, tasks, annotations). ``read_only``:
    ``duck`` is a copy of a database another process holds (the app): runs are pushed, what was
    pushed is not recorded here (the server's signatures say it next time), annotations wait."""
    sigs = _signatures(duck)
    pushed = dict(duck.execute("SELECT run_key, pushed FROM team_sync").fetchall())
    # this machine's own runs and the hosts' runs it recorded (not runs pulled from others, unless changed here)
    maybe = sorted(k for k, s in sigs.items() if pushed.get(k) != s)
    # ... less those the server has as they are here (a push killed after its commit, a push from a copy)
    there: dict[str, str] = {}
    if maybe:
        team_keys = [cfg.to_team(k) for k in maybe]
        got = _retrying(
            cfg,
            pg_box,
            lambda pg: pg.execute(
                f"SELECT run_key, signature FROM {TEAM_SCHEMA}.runs WHERE run_key = ANY($1)", [team_keys]
            ),
        )
        there = {str(k): str(v) for k, v in got}
    todo = [k for k in maybe if there.get(cfg.to_team(k)) != sigs[k]]
    if not read_only and len(todo) < len(maybe):
        _mark_pushed(duck, cfg, [k for k in maybe if there.get(cfg.to_team(k)) == sigs[k]], sigs)
    report.unchanged_runs = len(sigs) - len(todo)
    batches = _batches(duck, todo)
    # batch i+1 read and redacted (DuckDB, this process) while batch i is written (the server): a pipeline
    reader = duck.cursor()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(_read_batch, reader, cfg, batches[0]) if batches else None
        for i, batch in enumerate(batches):
            assert ahead is not None
            tables = ahead.result()
            ahead = pool.submit(_read_batch, reader, cfg, batches[i + 1]) if i + 1 < len(batches) else None
            n = _retrying(cfg, pg_box, functools.partial(_send_batch, cfg=cfg, keys=batch, tables=tables, sigs=sigs))
            if not read_only:
                _mark_pushed(duck, cfg, batch, sigs)
            report.pushed_runs += len(batch)
            report.pushed_rows += n
    reader.close()
    _push_shared(duck, cfg, pg_box, read_only)
    if not read_only:  # (an annotation pushed without its version recorded would be pushed again, and win)
        report.annotations_pushed = _push_annotations(duck, cfg, pg_box)


def _mark_pushed(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, batch: list[str], sigs: dict[str, str]) -> None:
    """The runs of ``batch`` recorded as pushed with their signatures (after their batch committed)."""
    duck.execute("BEGIN TRANSACTION")
    duck.executemany(
        "INSERT INTO team_sync (run_key, machine, person, pushed) VALUES (?, ?, ?, ?) ON CONFLICT (run_key) "
        "DO UPDATE SET machine = EXCLUDED.machine, person = EXCLUDED.person, pushed = EXCLUDED.pushed",
        [[k, cfg.machine, cfg.person, sigs[k]] for k in batch],
    )
    duck.execute("COMMIT")


def _push_shared(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pg_box: list, read_only: bool = False) -> None:
    found = _local_removals(duck, cfg)
    removals = [(key, tag, at) for key, tag, at, _, _ in found]
    pushed = [(k, v) for _, _, _, k, v in found]

    def run(pg: TeamTransport) -> None:
        has = pg.execute("SELECT to_regclass($1) IS NOT NULL", [f"{TEAM_SCHEMA}.run_tag_removals"])[0][0]
        if removals and not has:  # (a team record from before the table; nothing to make while no tag is removed)
            pg.execute(_TAG_REMOVALS_DDL)
            has = True
        if removals:
            s = TEAM_SCHEMA
            for run_key, tag, at in removals:
                pg.execute(
                    f"INSERT INTO {s}.run_tag_removals VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_key, tag) DO UPDATE "
                    "SET removed_at = EXCLUDED.removed_at, recorded_by = EXCLUDED.recorded_by, person = EXCLUDED.person "
                    f"WHERE {s}.run_tag_removals.removed_at < EXCLUDED.removed_at",
                    [run_key, tag, at, cfg.machine, cfg.person],
                )
                pg.execute(
                    f"DELETE FROM {s}.run_tags WHERE run_key = $1 AND tag = $2 AND coalesce(created_at, 0) <= $3",
                    [run_key, tag, at],
                )
        for table, key in SHARED.items():
            cols = [c for c, _ in _local_columns(duck, table)]
            rows = duck.sql(f"SELECT {_select_to_team(table, cols, cfg.names)} FROM {table}").to_arrow_table()
            if rows.num_rows == 0:
                continue
            stage = pg.stage(rows)
            if table == "run_tags":  # a union (the first tagging's time stays), less the tags removed since
                keys = ", ".join(_q(k) for k in key)
                pg.execute(
                    f"INSERT INTO {TEAM_SCHEMA}.run_tags ({', '.join(map(_q, cols))}) SELECT {', '.join(map(_q, cols))} "
                    f"FROM {stage} t "
                    + (
                        f"WHERE NOT EXISTS (SELECT 1 FROM {TEAM_SCHEMA}.run_tag_removals r WHERE r.run_key = t.run_key "
                        "AND r.tag = t.tag AND r.removed_at >= coalesce(t.created_at, 0)) "
                        if has
                        else ""
                    )
                    + f"ORDER BY {keys} ON CONFLICT DO NOTHING"
                )
            else:
                pg.execute(_upsert_sql(table, stage, cols, key))
            pg.execute(f"DROP TABLE {stage}")

    _retrying(cfg, pg_box, run)
    if removals and not read_only:  # pushed: the team record has them now (a removal made since stays)
        duck.executemany("DELETE FROM meta WHERE key = ? AND value = ?", [[k, v] for k, v in pushed])


def _local_removals(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig) -> list[tuple[str, str, float, str, str]]:
    """Tags removed here since the last push (``edgetui tag --remove``): (team run key, tag, when, meta key, value)."""
    out = []
    for k, v in duck.execute("SELECT key, value FROM meta WHERE starts_with(key, ?)", [UNTAG_PREFIX]).fetchall():
        _, key, tag = str(k).split("\t", 2)
        try:
            out.append((cfg.to_team(key), tag, float(v), str(k), str(v)))
        except (TypeError, ValueError):  # a hand-edited value: that removal is not pushed
            continue
    return out


def _annotation_sigs(duck: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return {
        str(k): str(s)
        for k, s in duck.execute("SELECT annotation_id, md5(CAST(a AS VARCHAR)) FROM annotations a").fetchall()
    }


def _push_annotations(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pg_box: list) -> int:
    sigs = _annotation_sigs(duck)
    synced = dict(duck.execute("SELECT annotation_id, synced FROM team_annotations").fetchall())
    todo = sorted(a for a, s in sigs.items() if synced.get(a) != s)
    # synced once and gone here since: deleted on this machine (DELETED: a deletion already known)
    gone = sorted(a for a, s in synced.items() if a not in sigs and s != DELETED)
    if gone:
        _push_deletions(cfg, pg_box, duck, gone)
    if not todo:
        return len(gone)
    cols = [c for c, _ in _local_columns(duck, "annotations")]
    duck.execute("CREATE OR REPLACE TEMP TABLE _team_ann (annotation_id VARCHAR)")
    duck.executemany("INSERT INTO _team_ann VALUES (?)", [[a] for a in todo])
    rows = duck.sql(
        f"SELECT {_select_to_team('annotations', cols, cfg.names)} FROM annotations "
        "WHERE annotation_id IN (SELECT annotation_id FROM _team_ann)"
    ).to_arrow_table()
    rows = _redact("annotations", rows)
    s = TEAM_SCHEMA
    col_list = ", ".join(_q(c) for c in cols)

    def run(pg: TeamTransport) -> list[tuple]:
        stage = pg.stage(rows)
        pg.execute("SELECT pg_advisory_xact_lock($1)", [_LOCK])
        # the row replaced goes to the history (the loser of two edits is kept there)
        pg.execute(
            f"INSERT INTO {s}.annotation_history SELECT a.*, extract(epoch from now()) FROM {s}.annotations a "
            f"WHERE a.annotation_id IN (SELECT annotation_id FROM {stage})"
        )
        sets = ", ".join(
            f"{_q(c)} = EXCLUDED.{_q(c)}" for c in [*cols[1:], "version", "recorded_by", "person", "deleted"]
        )
        got = pg.execute(
            f"INSERT INTO {s}.annotations ({col_list}, version, recorded_by, person) "
            f"SELECT {col_list}, nextval('{s}.annotation_version'), $1, $2 FROM (SELECT * FROM {stage} ORDER BY annotation_id) x "
            f"ON CONFLICT (annotation_id) DO UPDATE SET {sets} RETURNING annotation_id, version",
            [cfg.machine, cfg.person],
        )
        pg.execute(f"DROP TABLE {stage}")
        return got

    got = _retrying(cfg, pg_box, run)
    duck.execute("BEGIN TRANSACTION")
    duck.executemany(
        "INSERT OR REPLACE INTO team_annotations VALUES (?, ?, ?)",
        [[a, v, sigs[a]] for a, v in got],
    )
    duck.execute("COMMIT")
    return len(todo) + len(gone)


#: ``team_annotations.synced`` of an annotation deleted (here, or by the team and pulled)
DELETED = "deleted"


def _push_deletions(cfg: TeamConfig, pg_box: list, duck: duckdb.DuckDBPyConnection, ids: list[str]) -> None:
    """Annotations deleted on this machine: deleted in the team record too (a new version, so a later
    edit elsewhere wins over it, and an earlier one loses; the row as it was goes to the history)."""
    s = TEAM_SCHEMA

    def run(pg: TeamTransport) -> list[tuple]:
        pg.execute("SELECT pg_advisory_xact_lock($1)", [_LOCK])
        pg.execute(
            f"INSERT INTO {s}.annotation_history SELECT a.*, extract(epoch from now()) FROM {s}.annotations a "
            "WHERE a.annotation_id = ANY($1) AND NOT a.deleted",
            [ids],
        )
        return pg.execute(
            f"UPDATE {s}.annotations SET deleted = true, version = nextval('{s}.annotation_version'), "
            "recorded_by = $2, person = $3 WHERE annotation_id = ANY($1) AND NOT deleted RETURNING annotation_id, version",
            [ids, cfg.machine, cfg.person],
        )

    got = dict(_retrying(cfg, pg_box, run))
    duck.executemany(
        "INSERT OR REPLACE INTO team_annotations VALUES (?, ?, ?)", [[a, got.get(a), DELETED] for a in ids]
    )


# ---------------------------------------------------------------------------- pull


def _meta_int(duck: duckdb.DuckDBPyConnection, key: str) -> int:
    row = duck.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    try:
        return int(row[0][0]) if row else 0
    except (TypeError, ValueError):  # a hand-edited value: pull everything again (idempotent)
        return 0


def _insert_local(
    duck: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, names: dict[str, str], ignore: bool
) -> int:
    """Insert ``rows`` (team keys) into the local ``table``, keys mapped back; the rows inserted."""
    cols = [c for c, _ in _local_columns(duck, table)]
    sel = ", ".join(_from_team(c, names) if c in KEY_COLS or (table == "runs" and c == "host") else _q(c) for c in cols)
    duck.register("_team_rows", rows)
    try:
        before = duck.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        verb = "INSERT OR IGNORE" if ignore else "INSERT OR REPLACE" if table in ("tasks", "fits") else "INSERT"
        duck.execute(f"{verb} INTO {table} ({', '.join(map(_q, cols))}) SELECT {sel} FROM _team_rows")
        after = duck.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    finally:
        duck.unregister("_team_rows")
    return int(after - before)


def _pull_runs(
    duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pg_box: list, report: SyncReport, everything: bool
) -> None:
    s = TEAM_SCHEMA
    since = 0 if everything else _meta_int(duck, "team_pulled_seq")

    def listing(pg: TeamTransport) -> list[tuple]:
        return pg.execute(
            f"SELECT run_key, recorded_by, person, push_seq FROM {s}.runs WHERE push_seq > $1 ORDER BY push_seq",
            [since],
        )

    def forgotten(pg: TeamTransport) -> list[tuple]:
        return pg.execute(f"SELECT run_key, push_seq FROM {s}.forgotten WHERE push_seq > $1", [since])

    gone = _retrying(cfg, pg_box, forgotten)
    if gone and not everything:
        for k, _ in gone:
            lk = cfg.to_local(str(k))
            if duck.execute("SELECT count(*) FROM runs WHERE run_key = ?", [lk]).fetchall()[0][0]:
                forget_run(duck, lk)
                report.forgotten_runs += 1
            duck.execute("DELETE FROM team_sync WHERE run_key = ?", [lk])
    runs = _retrying(cfg, pg_box, listing)
    top = max([since, *(int(r[3]) for r in runs), *(int(g[1]) for g in gone)])
    # not our own pushes (they are here already), unless the local database is being made again
    wanted = [r for r in runs if everything or r[1] != cfg.machine]
    cols = {table: [c for c, _ in _local_columns(duck, table)] for table in ("runs", *PER_RUN)}

    def fetch(team_keys: list[str]) -> dict[str, pa.Table]:
        def run(pg: TeamTransport) -> dict[str, pa.Table]:
            return {
                table: pg.fetch_arrow(
                    f"SELECT {', '.join(map(_q, cs))} FROM {s}.{table} WHERE run_key = ANY($1)", [team_keys]
                )
                for table, cs in cols.items()
            }

        return _retrying(cfg, pg_box, run)

    batches = [wanted[i : i + BATCH_RUNS] for i in range(0, len(wanted), BATCH_RUNS)]
    # batch i+1 read from the server (in a worker thread) while batch i is written here: a pipeline
    pool = concurrent.futures.ThreadPoolExecutor(1)
    ahead = pool.submit(fetch, [str(r[0]) for r in batches[0]]) if batches else None
    for i, batch in enumerate(batches):
        team_keys = [str(r[0]) for r in batch]
        assert ahead is not None
        got = ahead.result()
        ahead = pool.submit(fetch, [str(r[0]) for r in batches[i + 1]]) if i + 1 < len(batches) else None
        local_keys = [cfg.to_local(k) for k in team_keys]
        try:
            _write_pulled(duck, cfg.names, batch, local_keys, got, everything, report, ignore=False)
        except duckdb.ConstraintException:  # an event id of another run here: the batch again, such rows left out
            _write_pulled(duck, cfg.names, batch, local_keys, got, everything, report, ignore=True)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        report.pulled_runs += len(batch)
    pool.shutdown(wait=True)
    duck.execute("INSERT OR REPLACE INTO meta VALUES ('team_pulled_seq', ?)", [str(top)])


def _write_pulled(
    duck: duckdb.DuckDBPyConnection,
    names: dict[str, str],
    batch: list,
    local_keys: list[str],
    got: dict[str, pa.Table],
    everything: bool,
    report: SyncReport,
    ignore: bool,
) -> None:
    """One DuckDB transaction: the pulled rows of a batch of runs in place of what was here of them."""
    pulled = 0
    skipped = 0
    duck.execute("BEGIN TRANSACTION")
    try:
        duck.execute("CREATE OR REPLACE TEMP TABLE _team_batch (run_key VARCHAR)")
        duck.executemany("INSERT INTO _team_batch VALUES (?)", [[k] for k in local_keys])
        for table in ("runs", *PER_RUN):
            if not everything:  # (a rebuild fills a new, empty database)
                duck.execute(f"DELETE FROM {table} WHERE run_key IN (SELECT run_key FROM _team_batch)")
            rows = got[table]
            n = _insert_local(duck, table, rows, names, ignore=ignore and table == "events")
            if table == "events":
                skipped += rows.num_rows - n
            pulled += n
        sigs = _signatures(duck)
        duck.executemany(
            "INSERT OR REPLACE INTO team_sync VALUES (?, ?, ?, ?, ?)",
            [[lk, r[1], r[2], sigs.get(lk), r[3]] for lk, r in zip(local_keys, batch)],
        )
        duck.execute("COMMIT")
    except BaseException:
        duck.execute("ROLLBACK")
        raise
    report.pulled_rows += pulled
    report.skipped_events += skipped


def _pull_shared(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pg_box: list, report: SyncReport) -> None:
    s = TEAM_SCHEMA

    def fetch(pg: TeamTransport) -> dict[str, pa.Table]:
        out = {}
        for table in (*SHARED, "annotations"):
            cols = [c for c, _ in _local_columns(duck, table)]
            extra = ", version, deleted" if table == "annotations" else ""
            out[table] = pg.fetch_arrow(f"SELECT {', '.join(map(_q, cols))}{extra} FROM {s}.{table}")
        has = pg.execute("SELECT to_regclass($1) IS NOT NULL", [f"{s}.run_tag_removals"])[0][0]
        out["removals"] = pa.Table.from_pylist(
            [
                {"run_key": str(k), "tag": str(t), "removed_at": float(a)}
                for k, t, a in (pg.execute(f"SELECT run_key, tag, removed_at FROM {s}.run_tag_removals") if has else [])
            ],
            schema=pa.schema([("run_key", pa.string()), ("tag", pa.string()), ("removed_at", pa.float64())]),
        )
        return out

    got = _retrying(cfg, pg_box, fetch)
    duck.execute("BEGIN TRANSACTION")
    try:
        for table in SHARED:
            _insert_local(duck, table, got[table], cfg.names, ignore=table == "run_tags")
        # tags removed by a member: gone here too, unless given here again since
        duck.register("_team_removals", got["removals"])
        try:
            duck.execute(
                f"DELETE FROM run_tags t USING (SELECT {_from_team('run_key', cfg.names)}, tag, removed_at "
                "FROM _team_removals) r WHERE t.run_key = r.run_key AND t.tag = r.tag "
                "AND coalesce(t.created_at, 0) <= r.removed_at"
            )
        finally:
            duck.unregister("_team_removals")
        ann: pa.Table = got["annotations"]
        known = dict(duck.execute("SELECT annotation_id, version FROM team_annotations").fetchall())
        versions = dict(zip(ann.column("annotation_id").to_pylist(), ann.column("version").to_pylist()))
        newer = [a for a, v in versions.items() if known.get(a) is None or int(v) > int(known[a])]
        if newer:
            deleted = {
                a for a, d in zip(ann.column("annotation_id").to_pylist(), ann.column("deleted").to_pylist()) if d
            }
            wanted = set(newer) - deleted
            keep = pa.array([a in wanted for a in ann.column("annotation_id").to_pylist()])
            rows = ann.filter(keep).drop_columns(["version", "deleted"])
            duck.execute("CREATE OR REPLACE TEMP TABLE _team_ann (annotation_id VARCHAR)")
            duck.executemany("INSERT INTO _team_ann VALUES (?)", [[a] for a in newer])
            duck.execute("DELETE FROM annotations WHERE annotation_id IN (SELECT annotation_id FROM _team_ann)")
            _insert_local(duck, "annotations", rows, cfg.names, ignore=False)
            sigs = _annotation_sigs(duck)
            duck.executemany(
                "INSERT OR REPLACE INTO team_annotations VALUES (?, ?, ?)",
                [[a, versions[a], DELETED if a in deleted else sigs.get(a)] for a in newer],
            )
        report.annotations_pulled = len(newer)
        duck.execute("COMMIT")
    except BaseException:
        duck.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------------- the commands


def _connect_checked(cfg: TeamConfig) -> list:
    pg_box = [_connect(cfg, 0.0)]  # a first connection refused is said at once (a wrong address, no server)

    def check(pg: TeamTransport) -> None:
        _check_versions(_team_versions(pg))

    try:
        _retrying(cfg, pg_box, check)
    except BaseException:
        pg_box[0].close()
        raise
    return pg_box


def sync(
    duck: duckdb.DuckDBPyConnection, cfg: TeamConfig, pull_only: bool = False, from_copy: bool = False
) -> SyncReport:
    """Push this machine's new or changed runs, tags, fits and annotations, then pull the others'.
    ``from_copy``: ``duck`` is a read-only copy of a database another process holds: push runs only."""
    report = SyncReport()
    pg_box = _connect_checked(cfg)
    try:
        refused = _retrying(cfg, pg_box, _writable)
        if refused:
            report.push_refused = refused
        elif not pull_only:
            push(duck, cfg, pg_box, report, read_only=from_copy)
        if not from_copy:
            _pull_runs(duck, cfg, pg_box, report, everything=False)
            _pull_shared(duck, cfg, pg_box, report)
    finally:
        pg_box[0].close()
    return report


def forget_in_team(cfg: TeamConfig, run_key: str) -> int:
    """Take the run ``run_key`` (a local key) out of the team record; the members' next sync forgets
    it too. Returns the rows removed. Refused in one line for a read-only role."""
    pg_box = _connect_checked(cfg)
    team_key = cfg.to_team(run_key)
    s = TEAM_SCHEMA

    def run(pg: TeamTransport) -> int:
        refused = _writable(pg)
        if refused:
            raise TeamError(refused.replace("push refused", "forget --team refused").split(" (pulled only")[0])
        n = 0
        for table in (*PER_RUN, "run_tags", "annotations", "runs"):
            got = pg.execute(
                f"WITH d AS (DELETE FROM {s}.{table} WHERE run_key = $1 RETURNING 1) SELECT count(*) FROM d", [team_key]
            )
            n += int(got[0][0]) if got else 0
        pg.execute("SELECT pg_advisory_xact_lock($1)", [_LOCK])
        pg.execute(
            f"INSERT INTO {s}.forgotten VALUES ($1, extract(epoch from now()), $2, $3, nextval('{s}.push_seq')) "
            "ON CONFLICT (run_key) DO UPDATE SET forgotten_at = EXCLUDED.forgotten_at, recorded_by = EXCLUDED.recorded_by, "
            "person = EXCLUDED.person, push_seq = EXCLUDED.push_seq",
            [team_key, cfg.machine, cfg.person],
        )
        return n

    try:
        return _retrying(cfg, pg_box, run)
    finally:
        pg_box[0].close()


def rebuild(duck: duckdb.DuckDBPyConnection, cfg: TeamConfig) -> SyncReport:
    """Fill the (new, empty) database ``duck`` from the team record: every member's runs, this machine's
    under ``local`` again."""
    report = SyncReport()
    pg_box = _connect_checked(cfg)
    try:
        _pull_runs(duck, cfg, pg_box, report, everything=True)
        _pull_shared(duck, cfg, pg_box, report)
    finally:
        pg_box[0].close()
    return report
