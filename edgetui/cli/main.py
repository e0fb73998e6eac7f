"""``edgetui`` command line. Every command and option is described in docs/commands.md.

Every command takes ``--db PATH`` (default: :func:`edgetui.store.database.default_db_path`).
Errors are one line on stderr: an input problem ``edgetui: error: ...`` with exit status 2, an
internal error (a bug) ``edgetui: internal error (...): ...; details in <log file>`` with 70
(:mod:`edgetui.error_log`; docs/reliability-and-security.md, "Errors and exit status");
no traceback reaches the user unless ``EDGETUI_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

from edgetui import __version__
from edgetui.error_log import EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, log_to_file, report_internal_error
from edgetui.errors import UserError
from edgetui.cli.run_arguments import parse_at, resolve_run, write_op
from edgetui.cli.output import emit, print_table, query_read_only, for_terminal, visible  # noqa: F401  (cli_analysis and tests read them here)


def _add_db(p: argparse.ArgumentParser, top: bool = False) -> None:
    # sub-commands use SUPPRESS so `edgetui --db X cmd` and `edgetui cmd --db X` both work
    p.add_argument(
        "--db",
        type=Path,
        default=None if top else argparse.SUPPRESS,
        help="database file (default: user data dir, or $EDGETUI_DB)",
    )


def _add_live(p: argparse.ArgumentParser, top: bool = True) -> None:
    d = None if top else argparse.SUPPRESS
    p.add_argument(
        "--runs-dir",
        action="append",
        type=Path,
        default=d,
        metavar="DIR",
        help="runs root to watch (repeatable; default $SFORGE_LOG_DIR/runs or ./logs/runs if present)",
    )
    p.add_argument(
        "--judge-url", default=d, metavar="URL", help="poll this SForge judge's /history (never registers or submits)"
    )
    p.add_argument("--on-alarm", default=d, metavar="COMMAND", help="run COMMAND with each alarm as JSON on stdin")
    p.add_argument(
        "--poll",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="stat-poll the runs roots (network mounts) instead of file notifications",
    )
    p.add_argument(
        "--no-docker",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="do not watch the local Docker engine",
    )
    p.add_argument(
        "--k8s",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="watch SForge's pods on Kubernetes (SFORGE_K8S_KUBECONFIG / SFORGE_K8S_NAMESPACE; also "
        "when SFORGE_BACKEND=k8s; the hosts file's [clusters] add more)",
    )
    p.add_argument(
        "--tasks-dir",
        type=Path,
        default=d,
        metavar="DIR",
        help="SForge task JSONs (default $SFORGE_TASKS_DIR or ./tasks)",
    )
    p.add_argument(
        "--host",
        action="append",
        default=d,
        metavar="USER@HOST[:PORT]:/PATH",
        help="a remote runs root to supervise over SSH (repeatable; hosts.toml in the user config dir adds more)",
    )


def default_runs_dirs() -> list[Path]:
    """``$SFORGE_LOG_DIR/runs`` else ``./logs/runs`` (SForge's own default), when it exists."""
    base = Path(os.environ.get("SFORGE_LOG_DIR", "logs")).expanduser()
    return [base / "runs"] if (base / "runs").is_dir() else []


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line with a hint: a mistyped command names the command
    meant (``edgetui ingets`` -> did you mean ``ingest``?), and every error says where the usage is
    (``edgetui sql --help``) instead of printing it (the top level's usage is four lines of options)."""

    def error(self, message: str):
        import difflib

        hint = f"{self.prog} --help"
        m = re.search(r"(?:argument ([^:]+): )?invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'?([\w-]+)'?", m.group(3))
            near = difflib.get_close_matches(m.group(2), choices, n=1)
            meant = f"; did you mean {near[0]!r}?" if near else ""
            if m.group(1) in (None, "COMMAND"):  # the subcommand's choice
                message = f"unknown command {m.group(2)!r}{meant}"
                hint += " lists the commands"
            else:  # an option's (or another argument's) choice
                message = f"{m.group(1)}: invalid choice {m.group(2)!r} (choose from {', '.join(choices)}){meant}"
                hint += " shows the usage"
        else:
            hint += " shows the usage"
            message = re.sub(r"^argument (-[\w-]+)(?:/-[\w-]+)*: ", r"\1: ", message)  # (an option's bad value)
            m = re.match(r"unrecognized arguments: (-[\w-]+)", message)
            near = (
                difflib.get_close_matches(m.group(1), [o for a in self._actions for o in a.option_strings], n=1)
                if m
                else []
            )
            if near:
                message += f"; did you mean {near[0]!r}?"
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} ({hint})\n")


def _cmd(sub, name: str, summary: str, example: str, extra: str = "") -> argparse.ArgumentParser:
    return sub.add_parser(
        name,
        help=summary,
        description=summary + (f"\n\n{extra}" if extra else ""),
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _seconds(text: str) -> float:
    """A positive number of seconds (argparse type)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return v


def _add_sql_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sql-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="the SQL screen (F6) stops a query after this many seconds (default: no limit; F8 cancels; "
        "while another process holds the database: its 30 s limit, or this if shorter)",
    )


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="edgetui",
        description="Supervise and replay SForge / EdgeBench agent runs. Without a "
        "command: the app (the run picker; the live runs screen when a watched run is live).",
        epilog="examples:\n  edgetui                           the app (on a first start: the bundled samples)\n"
        "  edgetui ingest logs/runs          record every run under a runs root\n"
        "  edgetui watch --runs-dir logs/runs  supervise them live\n"
        '  edgetui sql "SELECT run_id, task_id, best_score, best_pass_rate FROM runs"',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"edgetui {__version__}")
    _add_db(ap, top=True)
    _add_live(ap)
    _add_sql_timeout(ap)
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    ap.set_defaults(commands=sub.choices)

    p = _cmd(
        sub,
        "watch",
        "supervise live runs: the runs screen (also the default when a run is live)",
        "edgetui watch --runs-dir logs/runs --judge-url http://127.0.0.1:8000",
    )
    _add_db(p)
    _add_live(p, top=False)
    _add_sql_timeout(p)

    p = _cmd(
        sub,
        "ingest",
        "record run directories, runs roots or transcript files",
        "edgetui ingest logs/runs ~/.claude/projects/x/session.jsonl",
        "Re-running is cheap and adds nothing already recorded; an interrupted ingest resumes where it stopped.",
    )
    _add_db(p)
    p.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="a task dir, a run dir, a runs root (logs/runs, or <ip>/<run_id>/<task>), a transcript file "
        "or a folder of transcripts",
    )
    p.add_argument(
        "--tasks-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="SForge task JSONs (default $SFORGE_TASKS_DIR or ./tasks)",
    )
    p.add_argument(
        "--host",
        action="append",
        default=None,
        metavar="NAME|USER@HOST[:PORT]:/PATH",
        help="host name for runs in flat layouts (default: local); or a remote runs root to record "
        "over SSH (repeatable), or the name of a host of hosts.toml",
    )
    p.add_argument("--sample", action="store_true", help="tag the runs as samples (left out of aggregates)")
    p.add_argument(
        "--prices", type=Path, default=None, metavar="FILE", help="price table JSON (USD per million tokens)"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--unforget", action="store_true", help="record runs forgotten with `edgetui forget` again")
    p.add_argument(
        "--full",
        action="store_true",
        help="re-read every run, also those whose files' size, mtime and inode are as recorded "
        "(a tree copied over recorded files with its mtimes kept)",
    )

    p = _cmd(sub, "samples", "record the bundled sample runs (tagged as samples)", "edgetui --db demo.duckdb samples")
    _add_db(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--unforget", action="store_true", help="record sample runs forgotten with `edgetui forget` again")
    p.add_argument("--full", action="store_true", help="re-read every sample run, also those unchanged since recorded")

    p = _cmd(
        sub,
        "runs",
        "table of recorded runs (fitted to the terminal; csv and json complete)",
        "edgetui runs --no-samples --format csv > runs.csv",
    )
    _add_db(p)
    p.add_argument("--no-samples", action="store_true", help="hide sample runs")
    p.add_argument("--tag", action="append", default=None, metavar="NAME", help="only runs with this tag (repeatable)")
    p.add_argument(
        "--by-run-id",
        action="store_true",
        help="one row per SForge run id (its tasks folded: how many, how many finished, their mean score)",
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table", help=FORMAT_HELP)
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")

    p = _cmd(
        sub,
        "sql",
        "run one read-only SQL query on the database",
        'edgetui sql "SELECT kind, count(*) FROM events GROUP BY ALL ORDER BY 2 DESC"',
    )
    _add_db(p)
    p.add_argument("query", metavar="QUERY", help="the SQL (DuckDB dialect; quote it for the shell)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table", help=FORMAT_HELP)
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stop the query after this many seconds (default: no limit; through the process holding "
        "the database: its 30 s limit, or this if shorter)",
    )

    p = _cmd(sub, "export", "export every table as Parquet into a directory", "edgetui export ./edgetui-export")
    _add_db(p)
    p.add_argument(
        "out", type=Path, metavar="DIR", help="directory to write (created if missing; refused if not empty)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into DIR even when it is not empty (files of the same name are replaced)",
    )

    p = _cmd(
        sub,
        "forget",
        "forget a recorded run (its files stay; a later scan does not bring it back)",
        "edgetui forget opus48-edge-3 --yes",
        "Everything recorded of the run goes; a tombstone keeps ingests and watched roots from recording it "
        "again until `edgetui ingest --unforget PATH`. Works while the app holds the database.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument("--host", default=None, help="only runs of this host")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    p.add_argument(
        "--team",
        action="store_true",
        help="also take it out of the team's record: every member's next `edgetui sync` forgets it (docs/team.md)",
    )

    p = _cmd(
        sub,
        "tag",
        "give a run a name (shown by `edgetui runs`, matched by its --tag filter)",
        "edgetui tag opus48-edge-3 baseline",
        "Works while the app holds the database.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument("name", metavar="NAME", help="the tag: letters, digits and _ . : + -")
    p.add_argument("--remove", action="store_true", help="take the tag away instead")
    p.add_argument("--host", default=None, help="only runs of this host")

    p = _cmd(
        sub,
        "moments",
        "detect and list a run's moments (new bests, change points, reframing moments)",
        "edgetui moments opus48-edge-3 --detector reframe",
        "The moments are rebuilt from the run's records first (the moments table; rebuilds keep each "
        "moment's identity: run, detector, version, round). Works while the app holds the database.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument(
        "--detector",
        choices=["all", "reframe", "gain", "changepoint"],
        default="all",
        help="which detector's moments (default: all)",
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table", help="output format (default: table)")
    p.add_argument("--host", default=None, help="only runs of this host")

    p = _cmd(
        sub,
        "annotate",
        "label and note an event or a moment of a run (or edit / delete an annotation)",
        "edgetui annotate opus48-edge-3 --round agent-85 --label reframe --text 'coherent network statistic'",
        "A moment's (or any graded round's) annotation attaches to its round's judge-result event. Labels: "
        "reframe, bug fix, tuning, reward hack?, noise, other, or your own. Works while the app holds the database.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", nargs="?", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument("--round", default=None, help="the moment's / graded round, e.g. agent-85")
    p.add_argument("--event", default=None, metavar="EVENT_ID", help="an event id (events.event_id)")
    p.add_argument("--label", default=None, help="e.g. reframe, 'bug fix', tuning, 'reward hack?'")
    p.add_argument("--text", default=None, help="a free-text note")
    p.add_argument("--edit", default=None, metavar="ANNOTATION_ID", help="change this annotation's label / text")
    p.add_argument("--delete", default=None, metavar="ANNOTATION_ID", help="delete this annotation")
    p.add_argument("--host", default=None, help="only runs of this host")

    p = _cmd(
        sub,
        "annotations",
        "list annotations (of one run, or all); --queue: the unlabelled moments",
        "edgetui annotations --queue",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", nargs="?", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument(
        "--queue",
        action="store_true",
        help="reframing moments across runs without a labelled annotation, one per (run, moment)",
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table", help="output format (default: table)")
    p.add_argument("--host", default=None, help="only runs of this host")

    p = _cmd(
        sub,
        "report",
        "a run's report: summary, the curve, new bests, the best submission's tests, moments with their why, "
        "annotations",
        "edgetui report opus48-edge-3 --format html -o report.html",
        "Markdown reads on its own (the chart as text); HTML is one self-contained file (no script, nothing "
        "fetched); PDF is that HTML printed by a headless Chromium (chromium-headless-shell, chromium or "
        "$EDGETUI_CHROMIUM); JSON carries a moments list (round, elapsed seconds) and the annotations, which "
        "`edgetui import` restores.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument(
        "--format",
        choices=["md", "json", "html", "pdf"],
        default=None,
        help="output format (default: from -o's extension, .html/.htm, .md, .json or .pdf, else md; "
        "pdf: the HTML printed by a headless Chromium, needs -o)",
    )
    p.add_argument("--output", "-o", type=Path, default=None, metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--no-diff", action="store_true", help="leave the submission diffs out")
    p.add_argument("--host", default=None, help="only runs of this host")

    p = _cmd(
        sub,
        "import",
        "restore annotations from a JSON report (idempotent; lists those not matched)",
        "edgetui import report.json",
        "Works while the app holds the database.",
    )
    _add_db(p)
    p.add_argument("file", type=Path, metavar="FILE", help="a report written by `edgetui report --format json`")

    p = _cmd(
        sub,
        "check",
        "check the database file fully (header, catalog, every block read; never writes)",
        "edgetui --db demo.duckdb check",
    )
    _add_db(p)

    p = _cmd(
        sub,
        "replay",
        "replay a recorded run",
        "edgetui replay opus48-edge --at 3h20m",
        "RUN is a task or run directory, a transcript file (recorded first if needed), a RUN_ID or "
        "RUN_ID/TASK_ID, or a unique prefix of a run id or a task name.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, transcript, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument(
        "--at",
        default=None,
        metavar="TIME",
        help="open at this elapsed time (3h20m, 2:15 = h:mm, 95m, seconds); past the end: the end",
    )
    p.add_argument("--host", default=None, help="only runs of this host")
    p.add_argument(
        "--tasks-dir", type=Path, default=None, metavar="DIR", help="SForge task JSONs for a run directory recorded now"
    )

    p = _cmd(
        sub,
        "serve",
        "the app in a browser: one app per tab, reading through this process",
        "edgetui serve opus48-edge        # then open the URL it prints",
        "Serves the app with textual-serve on 127.0.0.1 (no token: this machine only). --bind ADDR "
        "serves another address, and then every request needs the token printed at start (or read "
        "from --token-file). No TLS: beyond one machine, put an HTTPS proxy in front (--public-url). "
        "See docs/browser.md.",
    )
    _add_db(p)
    p.add_argument("run", metavar="RUN", nargs="?", default=None, help="open every tab on this run's replay")
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free one)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the token from this file's first line (also asks for it on 127.0.0.1)",
    )
    p.add_argument("--max-tabs", type=int, default=4, metavar="N", help="tabs open at once (default 4)")
    p.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="the URL browsers use when a proxy is in front (its origin is the one accepted)",
    )

    from edgetui.cli.analysis_commands import add_commands

    add_commands(sub, _cmd, _add_db)
    from edgetui.cli.team_commands import add_commands as add_team_commands

    add_team_commands(sub, _cmd, _add_db)
    return ap


FORMAT_HELP = (
    "output format (default: table); csv and json give every column complete, numbers as numbers "
    "and BLOBs (events.raw) as base64 text, where the table shows <N bytes>"
)


#: What a ctrl+c of ``edgetui ingest`` says (status 130): each run is recorded in transactions whose
#: cursors say where to go on from.
INTERRUPTED_INGEST = "edgetui: interrupted; what was recorded is kept: run the same ingest again to resume"


_interrupted_line = ["edgetui: interrupted"]  # (what a ctrl+c says, once the command is known)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser: its options in the hint and the suggestion
        (args.commands.get(args.cmd) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    log_to_file(logging.DEBUG if os.environ.get("EDGETUI_DEBUG") else logging.WARNING)  # (opened when written)
    _interrupted_line[0] = INTERRUPTED_INGEST if args.cmd == "ingest" else "edgetui: interrupted"
    from edgetui.store.database import default_db_path

    db = args.db or default_db_path()
    try:
        parent = Path(db).expanduser().parent
        if not parent.is_dir() and Path(db).expanduser() != default_db_path():
            # an --db path with a typo: no directory tree made for it (the default's is made on first use)
            raise FileNotFoundError(f"cannot open {db}: no directory {parent} (create it, or choose another --db)")
        if args.cmd is None:
            return cmd_app(db, args)
        name = f"cmd_{args.cmd.replace('-', '_')}"
        if name in globals():  # (the command modules beside this one load only for their commands)
            return globals()[name](db, args)
        from edgetui.cli import note_commands as cli_notes

        if hasattr(cli_notes, name):
            return getattr(cli_notes, name)(db, args)
        if name == "cmd_sync":
            from edgetui.cli.team_commands import cmd_sync

            return cmd_sync(db, args)
        from edgetui.cli import analysis_commands as cli_analysis

        return getattr(cli_analysis, name)(db, args)
    except KeyboardInterrupt:
        print(_interrupted_line[0], file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (| head): not an error
        return 0
    except Exception as e:  # one line, no traceback
        from edgetui.record.run_recording import is_interrupt

        if is_interrupt(e):  # ctrl+c inside a DuckDB statement (DuckDB raises its own exception)
            print(_interrupted_line[0], file=sys.stderr)
            return EXIT_INTERRUPTED
        if os.environ.get("EDGETUI_DEBUG"):
            raise
        if not is_input_problem(e):  # a bug of edgetui's: its traceback to the log file, one line here
            print(report_internal_error(e, f"edgetui {args.cmd or 'app'}"), file=sys.stderr)
            return EXIT_INTERNAL
        if isinstance(e, UserError):  # one line already: the file, the cause, what to do
            print(f"edgetui: error: {e}", file=sys.stderr)
            return e.exit_code
        text = str(e)
        if type(e).__module__.startswith(("duckdb", "_duckdb")) and "\nLINE " in text:
            text = text.split("\nLINE ", 1)[0]  # DuckDB's caret picture does not survive one line
        msg = " ".join(text.split()) or type(e).__name__
        print(f"edgetui: error: {visible(msg)}", file=sys.stderr)
        return EXIT_INPUT


def is_input_problem(e: BaseException) -> bool:
    """Whether ``e`` ending a command is the input's (one line, :data:`EXIT_INPUT`), not a bug of
    edgetui's: a :class:`UserError`; an OS error (a missing file, a permission); a bad value
    (ValueError); an unknown run (LookupError, not KeyError / IndexError, which are bugs); a
    RuntimeError raised with a message for the user (the holder's refusals; not its subclasses,
    RecursionError, NotImplementedError); a DuckDB error (the user's SQL, a database's state)."""
    if isinstance(e, (UserError, OSError, ValueError)):
        return True
    if type(e).__module__.startswith(("duckdb", "_duckdb")):  # (duckdb not imported for this: start-up time)
        return True
    if isinstance(e, LookupError):
        return not isinstance(e, (KeyError, IndexError))
    return type(e) is RuntimeError


# ---------------------------------------------------------------------------- commands


def _live_config(args, home: bool):
    from edgetui.views.app import LiveConfig

    from edgetui.hosts.config import parse_host_arg

    dirs = args.runs_dir or default_runs_dirs()
    for d in dirs:
        if not d.is_dir():
            raise FileNotFoundError(f"--runs-dir {d}: no such directory")
    from_file = _load_hosts_file()
    hosts = [parse_host_arg(v, from_file) for v in (getattr(args, "host", None) or [])]
    named = {h.name for h in hosts}
    hosts += [h for h in from_file if h.name not in named]
    from edgetui.hosts.cluster_config import sforge_cluster
    from edgetui.hosts.config import load_clusters

    clusters = load_clusters(_hosts_file())
    if getattr(args, "k8s", False) or os.environ.get("SFORGE_BACKEND") == "k8s":
        clusters.insert(0, sforge_cluster())
    pods = None
    if clusters:
        from edgetui.hosts.pod_watch import PodEngine

        def pods(wake, ssh_hosts):
            return PodEngine(clusters, on_change=wake, hosts=ssh_hosts)

    if not dirs and not hosts and not home:
        return None
    return LiveConfig(
        dirs,
        home=home or bool(args.runs_dir) or bool(getattr(args, "host", None)),
        judge_url=args.judge_url,
        on_alarm=args.on_alarm,
        poll=args.poll,
        docker=not args.no_docker,
        tasks_dir=getattr(args, "tasks_dir", None),
        hosts=hosts,
        pods=pods,
    )


def _load_hosts_file() -> list:
    """The hosts of the hosts file (:func:`_hosts_file`), its notes said on stderr."""
    from edgetui.hosts.config import load_hosts

    notes: list[str] = []
    hosts = load_hosts(_hosts_file(), notes)
    for n in notes:
        print(f"edgetui: {n}", file=sys.stderr)
    return hosts


def _hosts_file():
    """The hosts file: ``$EDGETUI_HOSTS_FILE``, else hosts.toml in the user config directory."""
    from edgetui.hosts.config import hosts_file

    env = os.environ.get("EDGETUI_HOSTS_FILE")
    return Path(env) if env else hosts_file()


def cmd_app(db: Path, args=None) -> int:
    from edgetui.views.app import run_app

    run_app(
        db,
        live=_live_config(args, home=False) if args is not None else None,
        sql_timeout=getattr(args, "sql_timeout", None),
    )
    return 0


def cmd_watch(db: Path, args) -> int:
    from edgetui.views.app import run_app

    run_app(db, live=_live_config(args, home=True), sql_timeout=args.sql_timeout)
    return 0


def _progress_ingest(
    db: Path,
    paths,
    *,
    tasks_dir=None,
    host="local",
    sample=False,
    prices=None,
    quiet=False,
    unforget=False,
    full=False,
    images=(),
):
    from edgetui.store.database import open_db
    from edgetui.store.one_row import one_row

    conn = open_db(db)

    def count() -> int:
        return one_row(conn.execute("SELECT count(*) FROM events"))[0]

    before = count()
    try:
        rep = _ingest_with_progress(conn, paths, tasks_dir, host, sample, prices, quiet, unforget, full, images)
        rep.new_events = max(0, count() - before)
        return rep
    finally:
        conn.close()


def _ingest_with_progress(conn, paths, tasks_dir, host, sample, prices, quiet, unforget=False, full=False, images=()):
    from edgetui.record.ingest import ingest_paths

    if quiet or not sys.stderr.isatty():
        return ingest_paths(
            conn,
            paths,
            tasks_dir=tasks_dir,
            host=host,
            is_sample=sample,
            prices=prices,
            unforget=unforget,
            full=full,
            images=images,
        )
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    with Progress(
        TextColumn("[bold]recording"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        transient=True,
    ) as prog:
        task = prog.add_task("ingest", total=None)

        def on_total(n: int) -> None:
            prog.update(task, total=n)

        def on_bytes(n: int) -> None:
            prog.advance(task, n)

        return ingest_paths(
            conn,
            paths,
            tasks_dir=tasks_dir,
            host=host,
            is_sample=sample,
            prices=prices,
            progress=on_bytes,
            on_total=on_total,
            unforget=unforget,
            full=full,
            images=images,
        )


def _print_report(rep) -> None:
    for m in rep.messages:
        print(f"edgetui: {visible(str(m))}", file=sys.stderr)
    if not rep.runs and rep.messages:  # every path refused or failed: its line says it, no "recorded 0 run(s)"
        return
    new = rep.new_events
    if new == 0 and rep.runs:
        same = f", {rep.unchanged} unchanged since recorded (not read; --full reads them)" if rep.unchanged else ""
        print(
            f"nothing new: {len(rep.runs)} run(s) already recorded{same} ({rep.events_offered} event(s) read, "
            f"{rep.bytes_read / 1e6:.1f} MB)"
        )
        return
    added = f", {new} new event(s)" if new is not None else ""
    print(f"recorded {len(rep.runs)} run(s){added}, {rep.events_offered} event(s) read, {rep.bytes_read / 1e6:.1f} MB")


def cmd_ingest(db: Path, args) -> int:
    from edgetui.parsers import spare_parsing_process as prewarm

    prewarm.start_for(args.paths or [])  # (a big transcript's parsing process starts with the imports below)
    try:
        return _cmd_ingest(db, args)
    finally:
        prewarm.stop()


def _cmd_ingest(db: Path, args) -> int:
    if args.tasks_dir is not None and not args.tasks_dir.is_dir():
        raise FileNotFoundError(f"--tasks-dir {args.tasks_dir}: no such directory")
    if args.prices is not None and not args.prices.is_file():
        raise FileNotFoundError(f"--prices {args.prices}: no such file")
    from edgetui.hosts.config import host_name_error, is_host_arg, parse_host_arg

    values = args.host or []
    from_file = _load_hosts_file() if values else []
    remote = [parse_host_arg(v, from_file) for v in values if is_host_arg(v)]
    names = [v for v in values if not is_host_arg(v)]
    if names and not args.paths:  # names of hosts.toml: record their roots
        known = {h.name: h for h in from_file}
        for n in names:
            if n not in known:
                raise ValueError(host_name_error(n, _hosts_file()))
            remote.append(known[n])
        names = []
    if len(names) > 1:
        raise ValueError(f"--host given {len(names)} names for local runs; give one")
    if not args.paths and not remote:
        raise ValueError("give a PATH to record, or --host USER@HOST[:PORT]:/PATH")
    from edgetui.record.ingest_report import IngestReport

    from edgetui.samples import sample_set_of

    rep = IngestReport()
    # a path inside the bundled samples is recorded as `edgetui samples` records it: a sample, with its tasks
    groups: dict[tuple, list[Path]] = {}
    for p in args.paths:
        home = sample_set_of(p)
        groups.setdefault((args.tasks_dir or home[1], True) if home else (args.tasks_dir, args.sample), []).append(p)
    for (tasks_dir, sample), paths in groups.items():
        rep.merge(
            _progress_ingest(
                db,
                paths,
                tasks_dir=tasks_dir,
                host=names[0] if names else "local",
                sample=sample,
                prices=args.prices,
                quiet=args.quiet,
                unforget=args.unforget,
                full=args.full,
            )
        )
    for h in remote:
        rep.merge(_ingest_remote(db, h, args))
    _print_report(rep)
    return 0 if rep.recorded_anything and not rep.failed else 1  # any path that failed: non-zero


def _ingest_remote(db: Path, cfg, args):
    """Record a remote host's runs roots: each root's image brought up to date over one SSH
    connection (:mod:`edgetui.hosts.mirror`), then ingested as a local root under the host's name."""
    from edgetui.hosts.mirror import Mirror
    from edgetui.record.ingest_report import IngestReport

    rep = IngestReport()
    host = cfg.ssh_host()
    try:
        st = host.wait_up(host.connect_timeout + 2)
        if st.kind not in ("up", "degraded"):
            rep.messages.append(f"{cfg.name}: {st.kind}: {st.message}")
            rep.failed.extend(f"{cfg.name}:{r}" for r in cfg.roots)
            return rep
        for root in cfg.roots:
            m = Mirror(host, root)
            try:
                s = m.sync()
            except OSError as e:
                rep.messages.append(f"{cfg.name}:{root}: {e.strerror or e}")
                rep.failed.append(f"{cfg.name}:{root}")
                continue
            rep.messages.extend(s.errors + s.skipped)
            if not args.quiet:
                print(
                    f"{cfg.name}:{root}: {s.files} file(s), {len(s.changed)} changed, "
                    f"{s.bytes_read / 1e6:.1f} MB read over SSH in {s.seconds:.1f} s",
                    file=sys.stderr,
                )
            got = _progress_ingest(
                db,
                [m.local_root],
                tasks_dir=args.tasks_dir,
                host=cfg.name,
                sample=args.sample,
                prices=args.prices,
                quiet=args.quiet,
                unforget=args.unforget,
                full=args.full,
                images=[m.local_root],  # an image: its runs signed without inodes
            )
            got.messages = [remote_names(x, m.local_root, f"{cfg.name}:{root}") for x in got.messages]
            rep.merge(got)
            if m.staged:  # a first sync staged in memory: the runs are recorded, now the image to disk
                try:
                    took = m.settle()
                except OSError as e:
                    rep.messages.append(
                        f"{m.local_root}: image not written to disk yet ({e.strerror or e}); the next sync writes it"
                    )
                else:
                    if not args.quiet and took is not None:
                        print(f"{cfg.name}:{root}: image written to {m.local_root} in {took:.1f} s", file=sys.stderr)
    finally:
        host.close()
    return rep


def remote_names(message: str, image_root: Path, remote_root: str) -> str:
    """``message`` with the host's image paths (``image_root/...``, the local cache the ingest
    read) named as the user knows them: ``HOST:/remote/dir/...``. A bad file of a remote run
    is reported where it lives, not where edgetui keeps its copy."""
    base = str(image_root).rstrip("/")
    out, i = [], 0
    while (j := message.find(base, i)) >= 0:
        end = j + len(base)
        if end < len(message) and message[end] not in "/ :,;)'\"":
            out.append(message[i:end])  # a longer name that only starts the same way
        else:
            out.append(message[i:j] + remote_root.rstrip("/"))
        i = end
    out.append(message[i:])
    return "".join(out)


def cmd_check(db: Path, args) -> int:
    """``edgetui check``: 0 when the file is sound, 1 with one line per problem; never writes."""
    from edgetui.store.database import check_database

    problems = check_database(db)
    for p in problems:
        print(f"edgetui: {visible(str(p))}", file=sys.stderr)
    if not problems:
        from edgetui.store.database import check_header

        if Path(db).exists() and check_header(Path(db)):  # torn, read whole with its WAL (check_database)
            print(
                f"edgetui: note: {db}: its last write was interrupted (a kill, a crash or a full disk); it reads "
                "whole with its WAL, which the next command that writes replays into it",
                file=sys.stderr,
            )
        print(f"{db}: sound (header, catalog and every table read)")
    return 1 if problems else 0


def cmd_samples(db: Path, args) -> int:
    from edgetui.record.ingest_report import IngestReport
    from edgetui.samples import sample_sets

    rep = IngestReport()
    for runs, tasks in sample_sets():
        rep.merge(
            _progress_ingest(
                db, [runs], tasks_dir=tasks, sample=True, quiet=args.quiet, unforget=args.unforget, full=args.full
            )
        )
    _print_report(rep)
    return 0 if rep.recorded_anything else 1


def cmd_sql(db: Path, args) -> int:
    if not args.query.strip():
        raise ValueError('empty query; e.g. edgetui sql "SELECT run_id, task_id, status FROM runs"')
    from edgetui.store.holder_socket import check_read_only

    check_read_only(args.query)  # the same answer whether the file is free or held by the app
    emit(query_read_only(db, args.query, args.snapshot, timeout_s=args.timeout), args.format, durations=False)
    return 0


#: ``best`` in the table: filled in by :func:`edgetui.quantities.fmt_best` (the task's own quantity as
#: text, ``67.25`` or ``95%``, as the screens show it) from the columns of :data:`RUNS_TABLE_ONLY`
RUNS_BEST_TEXT = "NULL AS best"
#: read for the table's ``best`` and ``subs`` cells, not shown themselves
RUNS_TABLE_ONLY = ", score_task AS score_task_, game_sessions AS game_sessions_"
#: ``best`` in csv / json: a number (the score, or the pass rate 0–1) and ``best_of`` saying which
RUNS_BEST_NUMBER = (
    "CASE WHEN score_task THEN best_score ELSE best_pass_rate END AS best, "
    "CASE WHEN score_task THEN 'score' ELSE 'pass_rate' END AS best_of"
)

#: DuckDB's buffer pool while `edgetui runs` reads (docs/performance.md)
RUNS_MEMORY_LIMIT = "32MB"

RUNS_SQL = """
SELECT run_id, task_id, status, format,
       {best},
       concat_ws(' ', CASE WHEN infra_error THEN 'infra' END, CASE WHEN is_sample THEN 'sample' END,
                 CASE WHEN best_invalid THEN 'best-invalid' END,
                 CASE WHEN policy_assumed AND coalesce(layout, '') <> 'transcript' THEN 'policy-assumed' END,
                 CASE WHEN n_parse_errors > 0 THEN n_parse_errors || '-bad-records' END,
                 CASE WHEN n_messages = 0 AND coalesce(n_repeated, 0) = 0 AND agent_format IS NOT NULL
                      THEN 'no-turns' END,
                 CASE WHEN n_repeated > 0 THEN n_repeated || '-repeated' END,
                 {transcript_flags},
                 CASE WHEN status IN ('running', 'grading') AND timeout_s > 0 AND started_at IS NOT NULL
                      AND epoch(current_timestamp) - started_at > timeout_s THEN 'over-budget' END) AS flags,
       round((coalesce(ended_at, last_event_at, started_at) - started_at) / 3600.0, {digits}) AS elapsed_h,
       round(nullif(greatest(coalesce(TRY_CAST(final->>'$.runtime_seconds' AS DOUBLE), 0), 0), 0) / 3600.0, {digits})
         AS sforge_runtime_h,
       round(timeout_s / 3600.0, {digits}) AS budget_h,
       agent_submissions AS agent_subs, auto_submissions AS auto_subs,
       coalesce(model, '') AS model, coalesce(agent, '') AS agent, host, best_round, n_events AS events,
       coalesce(input_tokens, 0) + coalesce(output_tokens, 0) + coalesce(cache_read_tokens, 0)
         + coalesce(cache_write_tokens, 0) AS tokens,
       round(cost_usd, 2) AS cost_usd, round(stated_cost_usd, 2) AS stated_usd,
       coalesce((SELECT string_agg(tag, ' ' ORDER BY tag) FROM run_tags g WHERE g.run_key = runs.run_key), '') AS tags,
       best_score, best_pass_rate, started_at, status_reason, repeated_from{detail}
FROM runs {where} ORDER BY started_at DESC NULLS LAST, run_id, task_id
"""
#: ``runs --format json`` / ``csv`` only (too wide for the table): SForge's trajectory metrics
#: (replay/trajectory_metrics.py) and the run's images (docs/sforge-formats.md, "Task variants")
RUNS_DETAIL = ", best_invalid, trajectory_metrics, work_image, judge_image"


def cmd_runs(db: Path, args) -> int:
    conds, params = [], []
    if args.no_samples:
        conds.append("NOT coalesce(is_sample, FALSE)")
    for tag in args.tag or []:
        conds.append("run_key IN (SELECT run_key FROM run_tags WHERE tag = ?)")
        params.append(tag)
    where = ("WHERE " + " AND ".join(conds)) if conds else ""
    if args.by_run_id:
        return runs_by_run_id(db, args, where, params)
    from edgetui.store.queries import TRANSCRIPT_FLAGS_SUBQUERY

    best = RUNS_BEST_TEXT if args.format == "table" else RUNS_BEST_NUMBER
    sql = RUNS_SQL.format(
        where=where,
        best=best,
        transcript_flags=TRANSCRIPT_FLAGS_SUBQUERY.format(run_key="runs.run_key"),
        detail=RUNS_TABLE_ONLY if args.format == "table" else RUNS_DETAIL,
        # hours to 2 places in csv / json; the table shows h:mm:ss (edgetui.cli.output.DURATION_COLUMNS)
        digits=9 if args.format == "table" else 2,
    )
    # (a bounded buffer pool: the transcript flags read a little of many blocks; 107 against 237 MB
    # at the peak on bench_runs_cli.py's 750 runs, and faster)
    res = query_read_only(db, sql, args.snapshot, params=params or None, memory_limit=RUNS_MEMORY_LIMIT)
    if args.format == "table":
        res = runs_table_cells(res)
    if args.format == "json" and "trajectory_metrics" in res.columns:  # (an object, not its JSON text)
        i = res.columns.index("trajectory_metrics")
        res.rows = [(*r[:i], json.loads(r[i]) if isinstance(r[i], str) else r[i], *r[i + 1 :]) for r in res.rows]
    emit(res, args.format)
    return 0


#: the columns :func:`edgetui.store.run_groups.group_by_run_id` reads
RUN_ID_GROUP_SQL = """
SELECT run_key, host, run_id, task_id, status, best_score_0_100, best_pass_rate, started_at, model, agent
FROM runs {where} ORDER BY started_at DESC NULLS LAST, run_id, task_id
"""


def runs_by_run_id(db: Path, args, where: str, params: list) -> int:
    """``edgetui runs --by-run-id``: one row per (host, SForge run id), its tasks folded
    (:func:`edgetui.store.run_groups.group_by_run_id`, the grouping the picker and the runs screen show)."""
    from edgetui.store.holder_socket import QueryResult
    from edgetui.store.run_groups import group_by_run_id

    res = query_read_only(db, RUN_ID_GROUP_SQL.format(where=where), args.snapshot, params=params or None)
    groups = group_by_run_id(dict(zip(res.columns, r)) for r in res.rows)
    table = args.format == "table"
    # ("done": the ended tasks, finished or aborted, the word the picker and the runs screen use;
    # the mean is of each task's best on EdgeBench's 0–100 scale, not a raw score: its name says so)
    cols = ["run_id", "host", "tasks", "done", "running", "mean_0_100", "models", "started_at"]
    if not table:
        cols.append("task_ids")
    rows = []
    for g in groups:
        mean = g.mean_score
        if table and mean is not None:
            mean = round(mean, 1)
        row = [g.run_id, g.host, g.n_tasks, g.n_finished, g.n_running, mean, " ".join(g.models), g.started_at]
        if not table:
            row.append(" ".join(g.tasks))
        rows.append(tuple(row))
    emit(QueryResult(cols, rows), args.format)
    if table and rows:
        print("(mean_0_100: the tasks' best on EdgeBench's 0–100 scale: scores normalised, pass rates × 100)")
    return 0


def runs_table_cells(res):
    """The table's ``best`` (:func:`~edgetui.quantities.fmt_best`) and ``subs`` (``agent/auto`` or
    ``6 games``: :func:`~edgetui.quantities.fmt_subs`, in place of the two counts csv / json give),
    as the picker and the runs screen show them."""
    from edgetui.quantities import fmt_best, fmt_subs

    cols = list(res.columns)
    out_cols = [c for c in cols if c not in ("auto_subs", "score_task_", "game_sessions_")]
    out_cols[out_cols.index("agent_subs")] = "subs"
    rows = []
    for r in res.rows:
        d = dict(zip(cols, r))
        d["best"] = fmt_best(d["best_score"], d["best_pass_rate"], d["score_task_"])
        d["subs"] = fmt_subs(d["agent_subs"], d["auto_subs"], d["game_sessions_"])
        rows.append(tuple(d[c] for c in out_cols))
    res.columns, res.rows = out_cols, rows
    return res


def bring_back(conn, key: str) -> str:
    """The command that records forgotten run ``key`` again: a sample run's ``edgetui samples
    --unforget``; another's ``edgetui ingest --unforget`` with its directory (when recorded) or PATH."""
    row = conn.execute("SELECT coalesce(is_sample, FALSE), run_dir, host FROM runs WHERE run_key = ?", [key]).fetchone()
    if row and row[0]:
        return "`edgetui samples --unforget`"
    path = row[1] if row and row[1] and (row[2] or "local") == "local" else "PATH"
    return f"`edgetui ingest --unforget {visible(str(path))}`"


def cmd_forget(db: Path, args) -> int:
    """``edgetui forget RUN``: asks first (``--yes`` skips it; needed without a terminal)."""
    if not db.exists():
        raise FileNotFoundError(f"no database at {db}")

    how: list[str] = []  # (the command that brings it back, read before it is forgotten)

    def confirm(conn, key: str) -> None:
        how.append(bring_back(conn, key))
        if args.yes:
            return
        if not sys.stdin.isatty():
            raise RuntimeError(f"forgetting {key} needs --yes when stdin is not a terminal")
        row = conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()
        n = row[0] if row else 0
        print(f"forget {visible(key)} ({n} events)? Its files stay; {how[0]} brings it back.")
        answer = input("[y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise KeyboardInterrupt

    try:
        key, n = write_op(db, args.run, args.host, lambda conn, k: {"op": "forget", "run_key": k}, confirm)
    except KeyboardInterrupt:
        print("nothing forgotten")
        return 1
    print(f"forgot {visible(key)} ({n} events); its files are untouched; {how[0]} brings it back")
    if args.team:
        from edgetui.record import team_record

        rows = team_record.forget_in_team(team_record.load_config(), key)
        print(f"took it out of the team record ({rows} rows); the members' next sync forgets it")
    return 0


def cmd_tag(db: Path, args) -> int:
    from edgetui.record.forget_and_tag import check_tag

    if not db.exists():
        raise FileNotFoundError(f"no database at {db}")
    check_tag(args.name)
    op = "untag" if args.remove else "tag"
    key, changed = write_op(db, args.run, args.host, lambda conn, k: {"op": op, "run_key": k, "tag": args.name})
    if args.remove:
        print(f"{visible(key)}: tag {args.name!r} " + ("removed" if changed else "was not there"))
    else:
        print(f"{visible(key)}: tagged {args.name!r}" + ("" if changed else " (already)"))
    return 0


def cmd_replay(db: Path, args) -> int:
    from edgetui.views.app import run_app
    from edgetui.store.database import open_db

    p = Path(args.run)
    if p.exists():
        _progress_ingest(db, [p], tasks_dir=args.tasks_dir, host=args.host or "local", quiet=True)
    at = parse_at(args.at)
    conn = open_db(db, read_only=True)
    try:
        try:
            key = resolve_run(conn, args.run, args.host)
        except LookupError as e:
            if (
                str(e).startswith("no recorded run")
                and not p.exists()
                and (os.sep in args.run or p.suffix in (".jsonl", ".json", ".txt", ".log"))
            ):
                raise FileNotFoundError(
                    f"{args.run}: no such file, and no recorded run matches it; see `edgetui runs`"
                ) from None
            raise
    finally:
        conn.close()
    run_app(db, key, start_at=at)
    return 0


def cmd_serve(db: Path, args) -> int:
    from edgetui.cli.serve import serve

    if args.run and Path(args.run).exists():  # a run folder or transcript: recorded first, as `replay` does
        _progress_ingest(db, [Path(args.run)], tasks_dir=None, host="local", quiet=True)
    return serve(db, args)


def run() -> None:
    """The ``edgetui`` program (the console script and ``python -m edgetui.cli.main``): :func:`main`,
    then SIGINT ignored: the work is done and its exit status known, and a ctrl+c now (the
    interpreter's shutdown, where Python's handler is gone) would end the process by the signal,
    status -2 and no message. A ctrl+c before :func:`main` takes over (its imports) says one line too.

    An interrupted command (status 130) ends by :func:`os._exit` once its streams and log are
    flushed: in CPython 3.11 a ``KeyboardInterrupt`` that passes through ``exec`` of a string (as
    :mod:`dataclasses` builds a class's methods, so a ctrl+c during an import) sets the interpreter's
    "unhandled KeyboardInterrupt" flag for good, even when caught; under ``python -m`` the
    interpreter's exit then kills the process with SIGINT (status -2) whatever ``sys.exit`` said
    (3 of 80 interrupted ingests here). By then the command has stopped its helper processes and
    closed or committed what it wrote."""
    import signal

    rc = None
    try:
        rc = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:  # (main's own handler passed: its imports, or its work done and said)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if rc is None:
            print(_interrupted_line[0], file=sys.stderr)
            rc = EXIT_INTERRUPTED
    if rc == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a reader gone or a stream closed: nothing more can be said
                pass
        logging.shutdown()
        os._exit(rc)
    sys.exit(rc)


if __name__ == "__main__":  # pragma: no cover
    run()
