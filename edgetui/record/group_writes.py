"""The offline ingest's writes of a group of new runs held to the group's end (:class:`GroupWrites`),
and the per-run steps they share with the one-by-one path: a run's model / agent from its events
(:func:`fill_model_agent`, also used by the live side) and the no-turns note (:func:`say_no_turns`).
Core: no Textual imports."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from edgetui.record.derived_rows import FinalizeJob, finalize_runs
from edgetui.records import RunInfo
from edgetui.record.recorder import Recorder

from edgetui.store.sql_in_list import in_list
from edgetui.record.ingest_report import IngestReport


def fill_model_agent(rec: Recorder, key: str, info: RunInfo, model: bool = True) -> None:
    """The run's ``model`` (without ``model=False``) and ``agent`` when its info names none: the first
    event naming a model, the agent of its transcript's format."""
    if model and info.model is None:
        row = rec.conn.execute(
            "SELECT model FROM events WHERE run_key = ? AND model IS NOT NULL AND model NOT LIKE '<%' "
            'ORDER BY "offset" LIMIT 1',
            [key],
        ).fetchall()
        if row:
            info.model = row[0][0]
            rec.update_run(key, model=row[0][0])
    if info.agent is None and info.agent_format:
        agent = {
            "claude_stream": "claude-code",
            "claude_session": "claude-code",
            "codex_text": "codex",
            "codex_json": "codex",
            "codex_rollout": "codex",
            "opencode": "opencode",
        }.get(info.agent_format)
        if agent:
            info.agent = agent
            rec.update_run(key, agent=agent)


def say_no_turns(rec: Recorder, key: str, where: Path, report: IngestReport) -> None:
    """A transcript that gave no agent or user message, thinking or tool call says so (and is flagged
    ``no-turns``)."""
    held = rec.held_run(key)  # (a new run's row waits for the commit: its columns as they will be written)
    row = (
        [(held.get("n_messages"), held.get("agent_format"), held.get("n_repeated") or 0)]
        if held is not None
        else rec.conn.execute(
            "SELECT n_messages, agent_format, coalesce(n_repeated, 0) FROM runs WHERE run_key = ?", [key]
        ).fetchall()
    )
    if row and row[0][0] == 0 and row[0][1] and not row[0][2]:  # (all repeated from an earlier file: turns)
        report.messages.append(
            f"{where}: no agent or user message, thinking or tool call recognised (0 turns); flagged no-turns"
        )


class GroupWrites:
    """The writes of several new runs recorded in one transaction, held until all of them are read
    and then made with a fixed number of statements (each costs ~1-6 ms in a first ingest, ~15 a
    run before): their events (line sources held by ``Recorder.hold`` and whole-file events) in one
    INSERT per ``ignore`` flag, the model of the runs whose info names none in one read, their
    :func:`edgetui.record.derived_rows.finalize_runs`, then each run's no-turns note at the place of
    ``report.messages`` it would have had. The same rows as recording the runs one by one."""

    def __init__(self) -> None:
        #: (events Arrow table, ignore) to insert; (run key, info) of the runs whose model is looked up
        self.tables: list[tuple[object, bool]] = []
        self.models: list[tuple[str, RunInfo]] = []
        self.jobs: list[FinalizeJob] = []
        self.no_turns: list[tuple[int, str, Path, "IngestReport"]] = []  # (index in report.messages, …)

    def add(
        self,
        rec: Recorder,
        key: str,
        info: RunInfo,
        job: FinalizeJob,
        transcript: Optional[Path],
        report: "IngestReport",
    ) -> None:
        """Hold ``key``'s finalize (its events are in :attr:`tables` already)."""
        if info.model is None:
            self.models.append((key, info))
        fill_model_agent(rec, key, info, model=False)  # (its agent: no statement)
        self.jobs.append(job)
        if transcript is not None:
            self.no_turns.append((len(report.messages), key, transcript, report))

    def write(self, rec: Recorder) -> None:
        """Make the held writes (inside the caller's transaction, before its commit)."""
        # lazy: pyarrow is not loaded by listing commands; it loads on first use
        import pyarrow as pa

        for ignore in (False, True):
            ts = [t for t, ig in self.tables if ig is ignore]
            if ts:
                rec.insert_table(pa.concat_tables(ts), ignore=ignore, fresh=True)
        if self.models:
            keys = [k for k, _ in self.models]
            found = dict(
                rec.conn.execute(
                    'SELECT run_key, arg_min(model, "offset") FROM events '
                    f"WHERE {in_list('run_key', keys)} AND model IS NOT NULL AND model NOT LIKE '<%' GROUP BY run_key",
                    keys,
                ).fetchall()
            )
            for key, info in self.models:
                if found.get(key) is not None:
                    info.model = found[key]
                    rec.update_run(key, model=found[key])
        finalize_runs(rec, self.jobs)
        for i, key, transcript, report in reversed(self.no_turns):
            notes = IngestReport()
            say_no_turns(rec, key, transcript, notes)
            report.messages[i:i] = notes.messages
        self.tables, self.models, self.jobs, self.no_turns = [], [], [], []
