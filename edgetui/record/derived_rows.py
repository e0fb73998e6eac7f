"""A run's derived rows after its files are recorded: submissions with best-so-far, time
alignment, the run's aggregate columns and status (``finalize_run``), shared by the offline
ingest (:mod:`edgetui.record.ingest`) and the live supervisor. Core: no Textual imports."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Optional, cast

from edgetui.store import repeated_records as repeats
from edgetui.record.time_alignment import AlignJob, align_runs
from edgetui.store.sql_in_list import in_list
from edgetui.records import RunInfo, SubmissionRecord, TaskInfo
from edgetui.record.recorder import Recorder
from edgetui.record.user_settings import load_settings

from edgetui.replay.selection import best_as_known, best_so_far, entry_from_submission, is_score_task, select_best
from edgetui.record.time_alignment import write_times
import re
import math
from edgetui.record.rollbacks import mark_rolled_back
from edgetui.replay.invalid_rounds import is_invalid
from edgetui.replay.trajectory_metrics import entries_of_rounds, trajectory_metrics


def _sub_row(s: SubmissionRecord) -> dict:
    # (the tests as TestResult objects, not dumped: ~600,000 dicts a 750-run root; the recorder reads either)
    d = s.model_dump(exclude={"tests", "seen_at"})
    d["tests"] = list(s.tests)
    return d


_UNKNOWN = object()  # finalize_run's log_end when the caller does not know it


@dataclass
class FinalizeJob:
    """One run for :func:`finalize_runs`: the arguments of :func:`finalize_run` (same names,
    same meaning). ``fresh``: the run had no ``runs`` row before this ingest of it (nothing of it
    to look up or delete); None: ``rec.fresh_run == run_key`` when the batch runs."""

    run_key: str
    info: RunInfo
    task: TaskInfo
    subs: list[SubmissionRecord]
    transcript_source: Optional[str]
    fallback_end: Optional[float] = None
    live_end: Optional[float] = None
    align: bool = True
    aggregates: bool = True
    judge_best: Optional[str] = None
    log_end: object = _UNKNOWN
    submissions_kept: bool = False
    fresh: Optional[bool] = None


def infer_policy(entries: list, final_best_round: str, selection: str, direction: str) -> tuple[str, str]:
    """Without the task JSON: the (selection policy, score direction) under which SForge's own
    selection (replay/selection.py, SForge selection.py semantics) picks the ``best_round`` that
    the run's final_result.json names, so the header, the chart, the ★ and the runs table tell one
    best-so-far. The assumed defaults first; unchanged when no policy reproduces it."""

    order = [(selection, direction)] + [
        (p, d)
        for p in ("pass_rate_first", "score_first", "valid_then_score")
        for d in ("maximize", "minimize")
        if (p, d) != (selection, direction)
    ]
    for p, d in order:
        steps = best_so_far(entries, d, p)
        if steps and steps[-1].best_round == final_best_round:
            return p, d
    return selection, direction


def finalize_run(
    rec: Recorder,
    run_key: str,
    info: RunInfo,
    task: TaskInfo,
    subs: list[SubmissionRecord],
    transcript_source: Optional[str],
    fallback_end: Optional[float] = None,
    live_end: Optional[float] = None,
    align: bool = True,
    aggregates: bool = True,
    judge_best: Optional[str] = None,
    log_end: object = _UNKNOWN,
    submissions_kept: bool = False,
) -> None:
    """Submissions + best-so-far, time alignment and the run's aggregate columns (``fallback_end`` /
    ``live_end``: see :func:`edgetui.record.time_alignment.align_run`). ``align=False`` skips the time alignment (a
    live run already aligned whose new events all carry a time: re-aligning would change nothing).
    ``aggregates=False`` writes the submissions and the run's best-so-far / submission counts only:
    the exact per-message usage, the event counts, tokens, cost and the recorded status stay as the
    last full call left them (the live supervisor after a new graded submission, when its live
    figures are current and the full recomputation runs on its own schedule). ``judge_best``: the
    best round the judge's own /history names (``--judge-url``, SForge selection.py semantics
    under the task's real policy), used like final_result.json's ``best_round`` to check an
    assumed policy while the run goes on (final_result.json wins once written). ``log_end``: the
    latest ``t`` of the run's ``run_agent.log`` events (epoch UTC, or None without any), when the
    caller knows it (else it is looked up). ``submissions_kept``: the caller knows the run's
    submission rows are already what this call would write (the offline ingest of a run whose
    transcript is all that changed: the rows depend on the submission folders, the non-transcript
    events, the run's info and the task only); they are then not compared nor rewritten.
    (:func:`finalize_runs` of this one run.)"""
    finalize_runs(
        rec,
        [
            FinalizeJob(
                run_key,
                info,
                task,
                subs,
                transcript_source,
                fallback_end,
                live_end,
                align,
                aggregates,
                judge_best,
                log_end,
                submissions_kept,
            )
        ],
    )


@dataclass
class _Done:
    """What :func:`finalize_runs` computed of one run before writing it."""

    job: FinalizeJob
    rows: list[dict]
    steps: list
    selection: str
    direction: str
    game_t: dict[str, float]
    score_0_100: dict
    #: SForge's selection over every counted round (edgetui.replay.selection.BestResult)
    sforge_best: Any = None
    #: the rounds SForge counts, in creation (submission) order
    counted: list = field(default_factory=list)


def finalize_runs(rec: Recorder, jobs: list[FinalizeJob], abort_after_s: Optional[float] = None) -> None:
    """:func:`finalize_run` of several runs (distinct run keys) with a fixed number of DuckDB
    statements whatever their number, instead of ~20 a run (each ~5-10 ms on a loaded machine:
    150 new live runs paid ~11 s): every read groups by ``run_key`` over ``run_key IN (...)``,
    every write is one statement for the batch (submissions, usage, alignment, game events, the
    runs rows). Bare transcripts' record keys and shared totals (:mod:`edgetui.store.repeated_records`) stay
    per run. The same rows as finalizing the runs one by one (tests/test_finalize_batch.py).
    ``abort_after_s``: SForge's abort threshold (the live supervisor passes its settings'); None
    reads the user's settings now (:func:`edgetui.record.user_settings.load_settings`), so the
    offline ingest and the live supervisor say "aborted" of the same run alike."""
    if not jobs:
        return
    if abort_after_s is None:
        abort_after_s = load_settings().abort_after_s
    conn = rec.conn
    for j in jobs:
        if j.fresh is None:
            j.fresh = rec.fresh_run == j.run_key
    keys = [j.run_key for j in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"finalize_runs: a run twice in one batch ({len(keys) - len(set(keys))} repeats)")
    # a round's time (``submissions.t``, the chart's x and the order of best-so-far) is when its result
    # was known: its judge_result event's time (evolve ``at`` for agent rounds, else the judge log's
    # Result: line, else the report's mtime: sforge_dir.result_known_time); without one (in flight)
    # its submission's, the tick's or the report's; games by order
    known_t: dict[str, dict] = {k: {} for k in keys}
    tick_t: dict[str, dict] = {k: {} for k in keys}
    for rk, rnd, kt, tt in conn.execute(  # (one statement: each costs ~1-4 ms in a first ingest)
        "SELECT run_key, round, max(t) FILTER (kind = 'judge_result'), "
        "min(t) FILTER (kind = 'submission_sent') "
        f"FROM events WHERE {in_list('run_key', keys)} AND round IS NOT NULL AND ((kind = 'judge_result' "
        "AND source LIKE 'submissions/%') OR (kind = 'submission_sent' AND source = 'auto_eval_ticks.log')) "
        "GROUP BY run_key, round",
        keys,
    ).fetchall():
        if kt is not None:
            known_t[rk][rnd] = kt
        if tt is not None:
            tick_t[rk][rnd] = tt
    need_log = [j.run_key for j in jobs if j.log_end is _UNKNOWN and not j.info.ended_at]
    log_ends: dict = {k: None for k in need_log}
    if need_log:
        log_ends.update(
            conn.execute(
                f"SELECT run_key, max(t) FROM events WHERE {in_list('run_key', need_log)} AND source = 'run_agent.log' "
                "GROUP BY run_key",
                need_log,
            ).fetchall()
        )
    done = [_best_so_far(j, known_t[j.run_key], tick_t[j.run_key], log_ends.get(j.run_key, j.log_end)) for j in jobs]
    rec.replace_submissions_many([(d.job.run_key, d.rows, d.job.fresh) for d in done if not d.job.submissions_kept])
    # (only transcript events carry a message id)
    _apply_usage_updates(conn, [j.run_key for j in jobs if j.aggregates and j.transcript_source is not None])
    mark_rolled_back(conn, [j.run_key for j in jobs if j.transcript_source is not None])
    align_runs(
        conn,
        [
            AlignJob(
                j.run_key,
                j.transcript_source,
                j.info.started_at,
                j.info.ended_at,
                j.fallback_end,
                j.live_end,
                {r["round"]: (r["submitted_at"], r["seen_at"], r["graded_at"], r["runtime_s"]) for r in d.rows},
            )
            for d in done
            if (j := d.job).align
        ],
    )  # (what replace_submissions wrote or kept)
    _place_game_events(conn, {d.job.run_key: (d.game_t, d.job.info.started_at) for d in done if d.game_t})

    full = [d for d in done if d.job.aggregates]
    # tokens, dollars, messages and tool calls count a record repeated from an earlier run's
    # file (a resumed transcript) once, in that run (edgetui/store/repeated_records.py)
    has_keys = _refresh_record_keys(rec, [d.job for d in full])
    # a run without record keys (an SForge run dir) shares nothing: its totals in the same scan
    aggs = repeats.runs_aggregates(conn, [d.job.run_key for d in full if not has_keys[d.job.run_key]], totals=True)
    aggs.update(repeats.runs_aggregates(conn, [d.job.run_key for d in full if has_keys[d.job.run_key]], totals=False))
    # the harness log's recorded times: since when it is quiet (a run whose harness ended on an
    # ERROR), its first line (a run without started_at)
    log_q = [
        d.job.run_key
        for d in full
        if (d.job.info.final is None and d.job.info.layout != "transcript" and d.job.info.harness_error)
        or d.job.info.started_at is None
    ]
    log_rec: dict = {}
    if log_q:
        log_rec = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT run_key, max(t), min(t) FROM events WHERE {in_list('run_key', log_q)} "
                "AND source = 'run_agent.log' AND t_source = 'recorded' GROUP BY run_key",
                log_q,
            ).fetchall()
        }
    updates = []
    for d in done:
        j = d.job
        updates.append(
            (j.run_key, _run_columns(j, d, aggs.get(j.run_key), log_rec.get(j.run_key, (None, None)), abort_after_s))
        )
    rec.update_runs(updates)
    rec.flush_run()  # (a new run's held row: written now, with every column set since its upsert)
    for d in full:
        if has_keys[d.job.run_key]:  # (after started_at is written: it ranks the run as owner of shared records)
            repeats.recount(conn, d.job.run_key)
            repeats.recount_sharing_runs(conn, d.job.run_key)  # their owner may have changed


def _refresh_record_keys(rec: Recorder, jobs: list[FinalizeJob]) -> dict[str, bool]:
    """:func:`edgetui.store.repeated_records.refresh_record_keys` of the runs: one DELETE for the runs recorded
    before, the keys of the bare transcripts among them (a run dir has none). By run key: whether
    the run has keys now."""
    conn = rec.conn
    old = [j.run_key for j in jobs if not j.fresh]
    if old:
        conn.execute(f"DELETE FROM record_keys WHERE {in_list('run_key', old)}", old)
    return {
        j.run_key: j.info.layout == "transcript"
        and repeats.refresh_record_keys(conn, j.run_key, layout=j.info.layout, fresh=True)
        for j in jobs
    }


def _best_so_far(j: FinalizeJob, known_t: dict, tick_t: dict, log_end) -> _Done:
    """One run's submission rows with their times and best-so-far (no statement)."""
    info, task, subs = j.info, j.task, j.subs
    run_end = info.ended_at or log_end
    game_t = _game_times(subs, info.started_at, run_end)

    def sub_time(s: SubmissionRecord) -> Optional[float]:
        if s.round in game_t:
            return game_t[s.round]
        if s.status != "in_flight" and known_t.get(s.round) is not None:
            return known_t[s.round]
        return sent_time(s)

    def sent_time(s: SubmissionRecord) -> Optional[float]:
        if s.round in game_t:
            return game_t[s.round]
        return s.submitted_at or tick_t.get(s.round) or s.seen_at or s.graded_at

    ordered = sorted(subs, key=lambda s: (sub_time(s) is None, sub_time(s) or 0.0, s.kind, s.n or 0, s.round))
    ordered = [s for s in ordered if s.kind != "manual"] + [s for s in ordered if s.kind == "manual"]
    # SForge's judge selects over its history in creation (= submission) order; the curve steps when
    # each result was known: best_as_known gives, at each result, the selection over those known
    counted = sorted(
        (s for s in ordered if s.kind != "manual" and s.status != "in_flight"),
        key=lambda s: (sent_time(s) is None, sent_time(s) or 0.0, s.kind, s.n or 0, s.round),
    )
    entries = [entry_from_submission(s) for s in counted]
    selection, direction = task.selection, task.score_direction
    final_best = (info.final or {}).get("best_round") if isinstance(info.final, dict) else None
    final_best = final_best or j.judge_best
    if task.assumed and final_best and entries:
        selection, direction = infer_policy(entries, final_best, selection, direction)
    # the run's best: SForge's own selection over every counted round, invalid ones included (as its
    # judge selects); the drawn curve leaves invalid rounds out (docs/sforge-formats.md, "Invalid rounds")
    sforge_best = select_best(entries, direction, selection)
    curve = [s for s in counted if not is_invalid(s)]
    pos = {id(s): i for i, s in enumerate(curve)}
    known_order = [pos[id(s)] for s in ordered if id(s) in pos]
    steps = best_as_known([entry_from_submission(s) for s in curve], known_order, direction, selection)
    step_of = {curve[st.index].round: st for st in steps}
    start = info.started_at
    rows = []
    for s in ordered:
        d = _sub_row(s)
        d["seen_at"] = s.seen_at
        t = sub_time(s)
        d["t"] = t
        d["elapsed_s"] = (t - start) if (t is not None and start is not None) else None
        stp = step_of.get(s.round)
        d["is_new_best"] = bool(stp.is_new_best) if stp else False
        d["best_round"] = stp.best_round if stp else None
        d["best_score"] = _finite(stp.best_score) if stp else None
        d["best_pass_rate"] = stp.best_pass_rate if stp else None
        rows.append(d)
    score_0_100 = {d["round"]: d.get("score_0_100") for d in rows}  # (as written to submissions)
    return _Done(j, rows, steps, selection, direction, game_t, score_0_100, sforge_best, counted)


def _run_columns(j: FinalizeJob, d: _Done, agg_totals: Optional[tuple], log_rec: tuple, abort_after_s: float) -> dict:
    """The runs-row columns of one finalized run (``agg_totals``: its
    :func:`edgetui.store.repeated_records.run_aggregates`, None when ``j.aggregates`` is False; ``log_rec``: the
    latest and the first recorded time of its run_agent.log)."""

    info, task, subs = j.info, j.task, j.subs
    best = d.sforge_best if d.counted else None
    final = info.final or {}
    best_round = final.get("best_round") if final.get("best_round") else (best.best_round if best else None)
    best_score = final.get("best_score") if final.get("best_score") is not None else (best.best_score if best else None)
    best_pr = (
        final.get("best_pass_rate")
        if final.get("best_pass_rate") is not None
        else (best.best_pass_rate if best else None)
    )
    best_0_100 = d.score_0_100.get(best_round) if best_round else None
    n_agent = sum(1 for s in subs if s.kind in ("agent", "legacy"))
    n_auto = sum(1 for s in subs if s.kind == "auto")
    n_game = sum(1 for s in subs if s.kind == "game")
    best_row = next((s for s in subs if best_round and s.round == best_round), None)
    sub_cols = dict(
        best_round=best_round or None,
        best_invalid=best_row is not None and is_invalid(best_row),
        trajectory_metrics=json.dumps(trajectory_metrics(entries_of_rounds(d.counted), d.direction)),
        best_score=_finite(best_score),
        best_pass_rate=best_pr,
        best_score_0_100=best_0_100,
        agent_submissions=n_agent,
        auto_submissions=n_auto,
        game_sessions=n_game,
        selection=d.selection,
        score_direction=d.direction,
        policy_assumed=task.assumed,
        score_task=is_score_task(task.parser, task.score_direction == "minimize", task.game_mode)
        or (task.assumed and any(s.score is not None or s.score_flag for s in subs)),
    )
    if not j.aggregates:
        if info.started_at is not None:
            sub_cols["started_at"] = info.started_at
        return sub_cols
    assert agg_totals is not None  # (a job with aggregates has its row in aggs)
    agg, totals = agg_totals
    last_event = agg[2]
    reason = None
    if info.final is not None:
        status = "finished"
    elif info.layout == "transcript":
        status = "transcript"
    elif info.harness_error and time.time() - (_quiet_since(info, log_rec[0]) or time.time()) >= HARNESS_QUIET_S:
        status, reason = "aborted", harness_reason(info.harness_error)
    else:
        activity = max([x for x in (last_event, info.started_at) if x is not None], default=None)
        status = "aborted" if activity is None or time.time() - activity > abort_after_s else "running"
        reason = unreadable_reason(info.unreadable)
    started = info.started_at
    if started is None:  # no started_at: the harness log's first line, before any file's mtime (a copy's)
        started = log_rec[1]
    if started is None:
        started = agg[3]
    return dict(
        status=status,
        **sub_cols,
        **totals,
        n_events=agg[0],
        n_parse_errors=agg[1],
        stated_cost_usd=agg[4],
        last_event_at=last_event,
        started_at=started,
        status_reason=reason,
    )


#: a run_agent.log that ends on an ERROR and has not changed for this long: the harness has ended
HARNESS_QUIET_S = 60.0


def harness_reason(harness_error: Optional[str]) -> str:
    """``runs.status_reason`` of a run whose harness ended before the agent started, in the
    harness's words (``RunInfo.harness_error``); the offline ingest and the live supervisor alike."""
    return f"harness ended before the agent started: {harness_error}"


def unreadable_reason(unreadable: Optional[str]) -> Optional[str]:
    """``runs.status_reason`` of a run not finished because its final_result.json exists but
    cannot be read (``RunInfo.unreadable``: the file, the byte, what is wrong), else None; the
    offline ingest and the live supervisor alike."""
    return f"no final result: {unreadable}" if unreadable else None


def _quiet_since(info: RunInfo, last_recorded: Optional[float]) -> Optional[float]:
    """Since when run_agent.log has been quiet: the earlier of its mtime and its last record's own
    time (``last_recorded``; a copied or cloned run directory has a fresh mtime, its records keep theirs)."""
    vals = [x for x in (info.log_mtime, last_recorded) if x is not None]
    return min(vals) if vals else None


def _game_times(subs: list[SubmissionRecord], start: Optional[float], end: Optional[float]) -> dict[str, float]:
    """Time of each game session (game folders carry no timestamps; SForge's visualizer uses file
    mtimes). A mtime inside the run (±1 h) is kept; otherwise (a copied or checked-out run dir)
    sessions are spread evenly over the run in the order of N. Approximate by nature."""
    games = sorted((s for s in subs if s.kind == "game"), key=lambda s: s.n or 0)
    if not games or start is None:
        return {}
    end = end if end is not None and end > start else start + 3600
    plausible = all(s.graded_at is not None and start - 3600 <= s.graded_at <= end + 3600 for s in games)
    if plausible:  # (every graded_at a float: checked just above)
        return {s.round: cast(float, s.graded_at) for s in games}
    return {s.round: start + (end - start) * (i + 1) / (len(games) + 1) for i, s in enumerate(games)}


def _place_game_events(conn, runs: dict[str, tuple[dict[str, float], Optional[float]]]) -> None:
    """Game result events at their session's time; steps spread between the previous session's
    time and it, in file order (t_source 'interpolated'). ``runs``: by run key, its sessions'
    times by round and its start. (One read of the runs' untimed submission-folder events, a
    round's events picked as ``source LIKE 'submissions/<round>/%'`` would, and one write.)"""
    if not runs:
        return
    keys = list(runs)
    got: dict[str, list] = {k: [] for k in keys}
    for rk, eid, kind, src in conn.execute(
        f"SELECT run_key, event_id, kind, source FROM events WHERE {in_list('run_key', keys)} "
        "AND source LIKE 'submissions/%' AND t_source <> 'recorded' "
        'ORDER BY run_key, "offset", sub',
        keys,
    ).fetchall():
        got[rk].append((eid, kind, src))
    ids: list[str] = []
    ts: list[float] = []
    for rk, (game_t, start) in runs.items():
        prev = start
        for rnd, t_end in sorted(game_t.items(), key=lambda kv: kv[1]):
            like = _like(f"submissions/{rnd}/%")
            rows = [(eid, kind) for eid, kind, src in got[rk] if src is not None and like.fullmatch(src)]
            steps = [r[0] for r in rows if r[1] == "game_step"]
            t0 = prev if prev is not None else t_end
            for i, eid in enumerate(steps):
                ids.append(eid)
                ts.append(t0 + (t_end - t0) * (i + 1) / (len(steps) + 1))
            for eid, kind in rows:
                if kind != "game_step":
                    ids.append(eid)
                    ts.append(t_end)
            prev = t_end
    if ids:
        write_times(conn, ids, ts, keys)


def _like(pattern: str):
    """SQL ``LIKE`` (no escape character, case-sensitive) as a compiled regex for ``fullmatch``."""

    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.S)


def _apply_usage_updates(conn, run_keys: list[str]) -> None:
    """Claude Code repeats a message's usage on each of its lines and the later lines can carry
    larger (final) counts; the parser marks those as ``data.usage_update``. The first event of
    the message (the one carrying usage) gets the largest counts seen, so each message is
    counted once, with its final numbers (idempotent). (The ``LIKE`` is a prefilter: a string
    search skips parsing the JSON of the run's other events, ~5 ms a run in a first ingest.) One
    statement for the runs ``run_keys``."""
    if not run_keys:
        return
    conn.execute(
        f"""UPDATE events SET
             input_tokens = greatest(events.input_tokens, u.i), output_tokens = greatest(events.output_tokens, u.o),
             cache_read_tokens = greatest(events.cache_read_tokens, u.cr),
             cache_write_tokens = greatest(events.cache_write_tokens, u.cw)
           FROM (SELECT run_key, message_id,
                        max((data->'$.usage_update'->>'input_tokens')::BIGINT) AS i,
                        max((data->'$.usage_update'->>'output_tokens')::BIGINT) AS o,
                        max((data->'$.usage_update'->>'cache_read_tokens')::BIGINT) AS cr,
                        max((data->'$.usage_update'->>'cache_write_tokens')::BIGINT) AS cw
                 FROM events WHERE {in_list("run_key", run_keys)} AND message_id IS NOT NULL
                   AND data LIKE '%"usage_update"%' AND (data->'$.usage_update') IS NOT NULL
                 GROUP BY run_key, message_id) u
           WHERE {in_list("events.run_key", run_keys)} AND events.run_key = u.run_key
             AND events.message_id = u.message_id AND events.input_tokens IS NOT NULL""",
        [*run_keys, *run_keys],
    )


def _finite(v):

    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
