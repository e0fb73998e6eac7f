"""Which SQL another edgetui process may run through the holder: reads of the database only.

The check works on DuckDB's own parse of the request, never on its text:

* every statement (``duckdb.extract_statements``) is a SELECT (DESCRIBE, SHOW, SUMMARIZE, FROM,
  VALUES, TABLE, WITH … SELECT are SELECTs to DuckDB) or an EXPLAIN without ANALYZE of one.
  EXPLAIN's inner statement is found with DuckDB's tokenizer (comments are tokens of their own)
  and checked like any statement, so ``EXPLAIN (ANALYZE) COPY …`` or ``EXPLAIN COPY …`` is
  refused whatever comments or case it is written with;
* the syntax tree of each SELECT (the json extension's ``json_serialize_sql``, a parse without
  binding: nothing is opened or loaded by the check) is walked in full, subqueries, CTEs and
  lambdas included, and every node must be on an allow-list:

  - table functions: only :data:`TABLE_FUNCTIONS` (generators and the catalog's metadata).
    ``read_text``, ``read_csv``, ``glob``, ``parquet_metadata``, ``sniff_csv``, ``query``,
    ``checkpoint``, ``enable_logging`` and every other one are refused;
  - a table named by a string or a quoted name (``FROM 'runs.csv'``, ``FROM "x.parquet"``,
    ``DESCRIBE 'f'``): refused; a table name is a plain identifier (letters, digits, ``_``).
    DuckDB reads a file for a name it cannot find in the catalog only when the name has a
    dot or a slash; a qualified name (``x.csv`` is schema ``x``, table ``csv``) is joined
    by DuckDB into a file name when no such table exists, so the holder also requires each
    qualified name to be a table or view of its catalog (``qualified_tables`` below);
  - scalar, aggregate and window functions: the built-in ones DuckDB marks free of side
    effects (``duckdb_functions().has_side_effects``), listed from a fresh in-memory DuckDB
    of this process (so an extension loaded later adds nothing), minus
    :data:`REFUSED_FUNCTIONS`; of those DuckDB marks with side effects only
    :data:`HARMLESS_SIDE_EFFECTS` (random numbers, ids, the current query) are allowed;
  - types (casts): DuckDB's built-in types only (an unknown type name makes DuckDB try to
    load an extension);
  - expression and table-reference kinds: the ones listed here; a kind this module does not
    know (a newer DuckDB) is refused rather than trusted.

Why an allow-list on the parse and not DuckDB's ``enable_external_access = false`` (measured
on DuckDB 2.0.1): that setting is for the whole instance and cannot be turned back on; with it
the holder's own ``ATTACH`` (the ingest's shards, ``rescrub``) and ``EXPORT DATABASE`` fail with
"file system operations are disabled", though Arrow inserts (``register``, ``from_arrow``) still
work. A second, read-only DuckDB instance of the same file in the holder's process is refused by
DuckDB ("Can't open a connection to same database file with a different configuration").
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Optional

import duckdb

from edgetui.store.one_row import one_row

from edgetui.errors import QueryRefused

#: table functions a request may use: they compute from their arguments or read the catalog
TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "repeat",
        "json_each",
        "json_tree",
        "duckdb_columns",
        "duckdb_constraints",
        "duckdb_databases",
        "duckdb_dependencies",
        "duckdb_functions",
        "duckdb_indexes",
        "duckdb_keywords",
        "duckdb_schemas",
        "duckdb_sequences",
        "duckdb_settings",
        "duckdb_tables",
        "duckdb_types",
        "duckdb_views",
        "pragma_table_info",
        "pragma_show",
        "pragma_version",
        "pragma_database_size",
        "pragma_storage_info",
        "pragma_collations",
        "pragma_platform",
        "pg_timezone_names",
        "icu_calendar_names",
    }
)

#: built-in functions refused although DuckDB does not mark all of them as having side effects:
#: they change state (sequences, the random seed, the log), wait, or bind a query given as text
#: (``json_serialize_plan`` binds it, and binding ``FROM 'a.csv'`` reads the file)
REFUSED_FUNCTIONS = frozenset(
    {
        "nextval",
        "setval",
        "setseed",
        "write_log",
        "sleep_ms",
        "pg_sleep",
        "json_serialize_plan",
    }
)

#: functions DuckDB marks as having side effects that read nothing and change nothing
HARMLESS_SIDE_EFFECTS = frozenset(
    {
        "random",
        "uuid",
        "uuidv4",
        "uuidv7",
        "gen_random_uuid",
        "currval",
        "error",
        "stats",
        "vector_type",
        "current_query",
        "current_query_id",
        "current_connection_id",
        "current_transaction_id",
    }
)

#: scalar-context names the parser produces that ``duckdb_functions()`` lists as table functions
SCALAR_SPECIALS = frozenset({"unnest", "unlist"})

#: expression kinds (``class``) a read-only query may contain
EXPRESSION_CLASSES = frozenset(
    {
        "BETWEEN",
        "CASE",
        "CAST",
        "COLLATE",
        "COLUMN_REF",
        "COMPARISON",
        "CONJUNCTION",
        "CONSTANT",
        "FUNCTION",
        "LAMBDA",
        "LAMBDA_REF",
        "OPERATOR",
        "PARAMETER",
        "POSITIONAL_REFERENCE",
        "STAR",
        "SUBQUERY",
        "TYPE",
        "WINDOW",
    }
)

#: table references (``type`` of a ``from_table``, a join's sides…)
TABLE_REFS = frozenset(
    {"BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EXPRESSION_LIST", "EMPTY", "PIVOT", "SHOW_REF"}
)

#: the other node kinds of a SELECT's tree (query nodes, result modifiers, sort orders)
QUERY_NODES = frozenset(
    {
        "SELECT_NODE",
        "SET_OPERATION_NODE",
        "RECURSIVE_CTE_NODE",
        "CTE_NODE",
        "ORDER_MODIFIER",
        "LIMIT_MODIFIER",
        "LIMIT_PERCENT_MODIFIER",
        "DISTINCT_MODIFIER",
        "ORDER_DEFAULT",
        "ASCENDING",
        "DESCENDING",
    }
)

#: schemas or catalogs a function name may be qualified with
FUNCTION_QUALIFIERS = frozenset({"", "main", "system", "pg_catalog"})

#: at most this many bytes of SQL text per request (DuckDB's ``json_serialize_sql`` of a
#: pathological 64 KiB request, 32,000 select items, takes ~0.6 s and ~130 MB for a moment; an
#: ``IN (?, ?, …)`` list of 20,000 run keys fits)
MAX_SQL_BYTES = 64 << 10

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_lock = threading.Lock()
_parser: Optional[duckdb.DuckDBPyConnection] = None
_functions: frozenset[str] = frozenset()
_types: frozenset[str] = frozenset()


Refused = QueryRefused  # the name this module's callers use


def _allowed() -> duckdb.DuckDBPyConnection:
    """This process's private in-memory DuckDB that parses requests, and the built-in names."""
    global _parser, _functions, _types
    if _parser is None:
        conn = duckdb.connect(":memory:", config={"threads": 1})
        rows = conn.execute(
            "SELECT lower(function_name), bool_or(coalesce(has_side_effects, false)) FROM duckdb_functions() "
            "WHERE function_type IN ('scalar', 'aggregate', 'window', 'macro') AND internal GROUP BY ALL"
        ).fetchall()
        _functions = (
            frozenset(n for n, side in rows if not side or n in HARMLESS_SIDE_EFFECTS) - REFUSED_FUNCTIONS
            | SCALAR_SPECIALS
        )
        _types = frozenset(n.lower() for (n,) in conn.execute("SELECT type_name FROM duckdb_types()").fetchall())
        _parser = conn
    return _parser


def _refuse(what: str) -> Refused:
    return Refused(
        f"refused: {what}; `edgetui sql` reads only this database's tables (no file, device, "
        "network or extension; no statement that changes anything)"
    )


def _statement_error(e: Exception) -> ValueError:
    """DuckDB's own words, without its caret picture (it needs its lines)."""
    return ValueError(" ".join(str(e).split("\nLINE ", 1)[0].split()))


def _explain_inner(query: str) -> str:
    """The statement an ``EXPLAIN`` explains (its text), refusing ``ANALYZE`` however written.

    DuckDB's tokenizer gives byte offsets; comments are tokens of their own and skipped."""
    raw = query.encode()
    toks = duckdb.tokenize(query)
    ends = [p for p, _ in toks[1:]] + [len(raw)]
    # a word runs to the next token (a comment is a token of its own); quotes do not hide a keyword
    words = [
        raw[p:e].decode(errors="replace").strip().strip('"').lower()
        for (p, kind), e in zip(toks, ends)
        if kind != duckdb.token_type.comment
    ]
    starts = [p for p, kind in toks if kind != duckdb.token_type.comment]
    if not words or words[0] != "explain":
        raise _refuse("an EXPLAIN statement that could not be read")
    i = 1
    if i < len(words) and words[i] == "(":
        depth = 0
        while i < len(words):
            depth += words[i] == "("
            depth -= words[i] == ")"
            if words[i] in ("analyze", "analyse"):
                raise _refuse("EXPLAIN ANALYZE (it runs its statement)")
            i += 1
            if depth == 0:
                break
    if i < len(words) and words[i] in ("analyze", "analyse"):
        raise _refuse("EXPLAIN ANALYZE (it runs its statement)")
    if i >= len(words):
        raise _refuse("an EXPLAIN without a statement")
    return raw[starts[i] :].decode()


def _kind(st) -> str:
    """``a SELECT`` / ``an INSERT``: the statement's type with its article."""
    name = str(st.type).rsplit(".", 1)[-1]
    return ("an " if name[:1] in "AEIOU" else "a ") + name


def _check_statement(st, qualified: list) -> None:
    kind = st.type
    if kind == duckdb.StatementType.EXPLAIN:
        inner = duckdb.extract_statements(_explain_inner(st.query))
        if len(inner) != 1:
            raise _refuse("an EXPLAIN of several statements")
        if inner[0].type != duckdb.StatementType.SELECT:
            raise _refuse(f"EXPLAIN of {_kind(inner[0])} statement")
        _check_statement(inner[0], qualified)
        return
    if kind != duckdb.StatementType.SELECT:
        raise Refused(
            f"refused: {_kind(st)} statement; `edgetui sql` answers only read-only statements (SELECT, "
            "DESCRIBE, SHOW, SUMMARIZE, EXPLAIN without ANALYZE); runs are forgotten or tagged with "
            "`edgetui forget` / `edgetui tag`"
        )
    with _lock:
        text = one_row(
            _allowed().execute(
                "SELECT json_serialize_sql(?, skip_null := true, skip_empty := true, skip_default := true)", [st.query]
            )
        )[0]
    try:
        tree = json.loads(text)
    except RecursionError:  # (Python's JSON reader nests as deep as the query, ~500 levels at most)
        raise Refused("refused: a query nested too deeply to be checked (about 500 levels)") from None
    if tree.get("error"):
        raise _refuse(f"a statement that could not be checked ({tree.get('error_message', 'no parse')})")
    _walk(tree.get("statements", []), qualified)


def _table_name(cat: str, schema: str, name: str, qualified: list) -> None:
    parts = [p for p in (cat, schema, name) if p]
    if not parts or not all(_PLAIN.match(p) for p in parts):
        shown = ".".join(parts) or "(empty)"
        raise _refuse(
            f"the table name {json.dumps(shown)} (a file or a path: only tables of the database, "
            "named without quotes, are read)"
        )
    if len(parts) > 1:
        qualified.append(tuple(p.lower() for p in parts))


def _function_name(node: dict, allowed: frozenset[str], what: str) -> str:
    name = str(node.get("function_name", "")).lower()
    for q in (node.get("catalog", ""), node.get("schema", "")):
        if str(q).lower() not in FUNCTION_QUALIFIERS:
            raise _refuse(f"the {what} {q}.{name}")
    if name not in allowed:
        raise _refuse(f"the {what} {name}()")
    return name


def _walk(root: Any, qualified: list) -> None:
    """Check every node of a serialized parse tree (iteratively: trees can be deep)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        cls = node.get("class")
        kind = node.get("type")
        if cls is not None:
            if cls not in EXPRESSION_CLASSES:
                raise _refuse(f"a {str(cls).lower()} expression")
            if cls in ("FUNCTION", "WINDOW"):
                _function_name(node, _functions, "function")
            elif cls == "TYPE":
                tname = str(node.get("type_name", "")).lower()
                if node.get("catalog") or node.get("schema") or tname not in _types:
                    raise _refuse(f"the type {node.get('type_name')} (not one of DuckDB's built-in types)")
        elif isinstance(kind, str) and kind in TABLE_REFS:
            if kind == "BASE_TABLE":
                _table_name(
                    node.get("catalog_name", ""), node.get("schema_name", ""), node.get("table_name", ""), qualified
                )
            elif kind == "TABLE_FUNCTION":
                fn = node.get("function") or {}
                _function_name(fn, TABLE_FUNCTIONS, "table function")
                node = {k: v for k, v in node.items() if k != "function"}
                stack.append(fn.get("arguments", []))
                for k in ("filter", "order_bys", "children"):
                    stack.append(fn.get(k))
            elif kind == "SHOW_REF":
                show = node.get("show_type", "")
                if node.get("table_name") and show not in ("SHOW_SPECIAL",):
                    _table_name(
                        node.get("catalog_name", ""), node.get("schema_name", ""), node["table_name"], qualified
                    )
        elif isinstance(kind, str) and kind not in QUERY_NODES:
            raise _refuse(f"a {kind.lower()} in the query (a kind of node this check does not know)")
        stack.extend(v for k, v in node.items() if isinstance(v, (dict, list)) and k != "type")


def check_read_only(sql: str, conn: Optional[duckdb.DuckDBPyConnection] = None) -> None:
    """Raise ``ValueError`` (one line; :class:`Refused` starting with ``refused:``) unless every
    statement of ``sql`` only reads the database (see the module docstring).

    With ``conn`` (the holder's cursor) a qualified table name must also be a table or view of
    its catalog: DuckDB reads a file for an unknown one (``x.csv`` is read as the file)."""
    if len(sql.encode(errors="replace")) > MAX_SQL_BYTES:
        raise Refused(f"refused: a query over {MAX_SQL_BYTES >> 10} KiB of SQL text")
    try:
        stmts = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise _statement_error(e) from None
    if not stmts:
        raise ValueError("empty request")
    qualified: list[tuple[str, ...]] = []
    try:
        for st in stmts:
            _check_statement(st, qualified)
    except duckdb.Error as e:  # an EXPLAIN's inner text that does not parse
        raise _statement_error(e) from None
    if conn is not None and qualified:
        _check_catalog(conn, qualified)


def _check_catalog(conn: duckdb.DuckDBPyConnection, qualified: list[tuple[str, ...]]) -> None:
    known = {
        tuple(str(x).lower() for x in r)
        for r in conn.execute(
            "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
            "UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views()"
        ).fetchall()
    }
    for parts in qualified:
        if len(parts) == 3:
            ok = parts in known
        else:  # schema.table (any attached catalog) or catalog.table (its main schema)
            a, b = parts
            ok = any(s == a and t == b for _, s, t in known) or (a, "main", b) in known
        if not ok:
            raise _refuse(
                f"the table name {json.dumps('.'.join(parts))} (not a table of this database; "
                "DuckDB would read it as a file)"
            )
