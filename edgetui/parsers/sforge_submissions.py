"""SForge's ``submissions/<round>/`` folders: each graded round as a
:class:`~edgetui.records.SubmissionRecord` (report.json with its tests, game folders, the judge's
``run_instance.log``; :func:`read_submissions`, cached by folder signature) and as events
(:func:`submission_events`: submission sent, judge result, per-step game events, with the time
each result was known, :func:`result_known_time`). Facts (docs/sforge-run-folders.md): §4 (folders,
report.json, game folders), §3.5 (the judge log's format), §9 (clocks). Nothing here raises on bad input."""

from __future__ import annotations

import math
import os
from functools import partial
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from edgetui.events import Event, Kind, TimeSource, one_line
from edgetui.records import SubmissionRecord, TestResult
from edgetui.parsers.run_folder_files import reads_run_folder
from edgetui.replay.invalid_rounds import invalid_reason
from edgetui.parsers.base import (
    GENERATION_PREFIX_BYTES,
    file_generation,
    finite_or_none,
    generation_of_head,
    iter_lines,
    loads_lenient,
    open_regular,
    parse_error,
)
from edgetui.parsers.runlog import JUDGE_KEPT_LEVELS, JUDGE_KEPT_PREFIXES, JudgeLogParser
from edgetui.parsers.sforge_common import (
    FAILED_GRADING_SUB,
    KIND_ORDER,
    PASS_STATUSES,
    ROUND_RE,
    as_bool,
    content_gen,
    as_finite,
    as_int,
    json_parse_error,
    file_mtime,
    parse_lines,
    read_bytes,
    read_json,
    subdirs,
    sanitize,
)
from edgetui.parsers.json_fields import list_at


def parse_round(name: str) -> Optional[tuple[str, int]]:
    if name.isdigit():
        return "legacy", int(name)
    m = ROUND_RE.match(name)
    if m:
        return m.group(1), int(m.group(2))
    return None


def _evolve_seen(task_dir: Path) -> dict[str, float]:
    j = read_json(task_dir / "evolve_state.json", "evolve_state.json")
    out: dict[str, float] = {}
    if not (j.ok and isinstance(j.value, dict)):
        return out
    subs = j.value.get("submissions")
    if not isinstance(subs, list):
        return out
    for s in subs:
        if isinstance(s, dict) and isinstance(s.get("round"), str):
            at = as_finite(s.get("at"))
            if at is not None and at > 0:
                out[s["round"]] = at
    return out


def test(item: dict[str, Any], origin: str) -> TestResult:
    g = item.get
    name, status, msg, score, weight = g("name"), g("status"), g("message"), g("score"), g("weight")
    # (positional: name, status, message, score, weight, origin; the values checked here, the
    # common types first: ~300,000 calls a 750-run root)
    return TestResult(
        name if type(name) is str else ("" if name is None else str(name)),
        status if type(status) is str else ("" if status is None else str(status)),
        msg if msg is None or type(msg) is str else str(msg),
        None if score is None else as_finite(score),
        None if weight is None else as_finite(weight),
        origin,
    )


def _tests_of_report(d: dict[str, Any]) -> list[TestResult]:
    """details (all parsers) + test_details items not already in details (legacy parsers repeat them)."""
    details = list_at(d, "details")
    tdetails = list_at(d, "test_details")
    out: list[TestResult] = []
    seen: Counter[tuple[str, str]] = Counter()
    for it in details:
        if isinstance(it, dict):
            tr = test(it, "details")
            out.append(tr)
            seen[(tr.name, tr.status)] += 1
    for it in tdetails:
        if isinstance(it, dict):
            name, status = it.get("name"), it.get("status")  # (as test makes them: a repeat is not built)
            key = ("" if name is None else str(name), "" if status is None else str(status))
            if seen[key] > 0:
                seen[key] -= 1
                continue
            out.append(test(it, "test_details"))
    return out


@dataclass
class _JudgeLog:
    """What a submission folder uses of its ``run_instance.log``: ``events``, every event a
    :class:`~edgetui.parsers.runlog.RunAgentLogParser` gives of it that the folder may record
    (:class:`~edgetui.parsers.runlog.JudgeLogParser`: the others are never built); ``judge_end``,
    when the judge ended (epoch s UTC: its last ``Result:`` line, else its last timed record; None
    without either); ``generation`` of the file ("" when missing or without a complete line)."""

    events: list[Event]
    judge_end: Optional[float]
    generation: str


def instance_log(entry: Path, rel_dir: str, utc_offset_s: Optional[float]) -> _JudgeLog:
    """Read ``entry/run_instance.log`` once (its generation from the same open file)."""
    try:
        fp = open_regular(entry / "run_instance.log")
    except OSError:
        return _JudgeLog([], None, "")
    with fp:
        gen = generation_of_head(fp.read(GENERATION_PREFIX_BYTES)) or ""
        parser = JudgeLogParser(f"{rel_dir}/run_instance.log", gen, utc_offset_s)
        events = parse_lines(fp, parser, parser.source, gen)
    results = [
        e.t
        for e in events
        if e.t is not None and e.kind != Kind.PARSE_ERROR and str(e.data.get("message", "")).startswith(_RESULT_PREFIX)
    ]
    return _JudgeLog(events, results[-1] if results else parser.end_t, gen)


def _last_instance_error(events: list[Event]) -> Optional[Event]:
    errs = [e for e in events if e.data.get("error")]
    return errs[-1] if errs else None


def read_report_folder(entry: Path, rec: SubmissionRecord, tests: bool = True) -> None:
    rel_dir = f"submissions/{entry.name}"
    rj = read_json(entry / "report.json", f"{rel_dir}/report.json")
    if not rj.exists:
        rec.status = "failed_grading"
        err = _last_instance_error(instance_log(entry, rel_dir, None).events)
        rec.error = one_line(err.summary, 300) if err is not None and err.summary else "no report.json"
        return
    rec.graded_at = rj.mtime
    if rj.error is not None:
        rec.status, rec.error = "bad_report", rj.error
        return
    d = rj.value
    if not isinstance(d, dict):
        rec.status = "bad_report"
        rec.error = f"{rj.rel}: not a JSON object (got {type(d).__name__}) at byte 0"
        return
    rec.status = "graded"
    sid = d.get("submission_id")
    rec.submission_id = str(sid) if sid not in (None, "") else None
    rec.total_tests = as_int(d.get("total_tests"))
    rec.passed = as_int(d.get("passed"))
    rec.failed = as_int(d.get("failed"))
    rec.errors = as_int(d.get("errors"))
    rec.pass_rate = as_finite(d.get("pass_rate"))
    rec.score, rec.score_flag = finite_or_none(d.get("score"))
    rec.score_0_100 = as_finite(d.get("score_0_100"))
    rec.valid = as_bool(d.get("valid"))
    rec.timed_out = as_bool(d.get("timed_out"))
    rec.runtime_s = as_finite(d.get("runtime_seconds"))
    summ = d.get("summary")
    rec.summary = summ if isinstance(summ, str) else (None if summ is None else str(summ))
    m = d.get("metrics")
    rec.metrics = (m if rj.finite else sanitize(m)) if isinstance(m, dict) else {}  # (orjson: nothing to sanitize)
    sub_at = as_finite(d.get("submitted_at"))
    rec.submitted_at = sub_at if sub_at is not None and sub_at > 0 else None
    if tests:
        rec.tests = _tests_of_report(d)


def _last_step(path: Path) -> tuple[Optional[dict[str, Any]], int]:
    last: Optional[dict[str, Any]] = None
    n = 0
    try:
        fp = open_regular(path)
    except OSError:
        return None, 0
    with fp:
        for ln in iter_lines(fp, 0, final=True):
            if ln.too_long or not ln.data.strip():
                continue
            try:
                v = loads_lenient(ln.data)
            except ValueError:
                continue
            if isinstance(v, dict):
                last, n = v, n + 1
    return last, n


def _fill_game(rec: SubmissionRecord, d: dict[str, Any]) -> None:
    max_score = as_finite(d.get("max_score"))
    final = d.get("final_score", d.get("score"))
    score, flag = finite_or_none(final)
    rec.score, rec.score_flag = score, flag
    rec.max_score = max_score
    pr = as_finite(d.get("pass_rate"))
    if pr is None and score is not None and max_score is not None:
        pr = score / max_score if max_score > 0 else 0.0
    rec.pass_rate = pr
    moves = as_int(d.get("moves", d.get("move")))
    rec.metrics = {k: v for k, v in (("moves", moves), ("peak_score", as_finite(d.get("peak_score")))) if v is not None}
    sid = d.get("session_id")
    rec.submission_id = str(sid) if sid else None


def _read_game_folder(entry: Path, rec: SubmissionRecord) -> None:
    rel_dir = f"submissions/{entry.name}"
    gj = read_json(entry / "game_result.json", f"{rel_dir}/game_result.json")
    if gj.exists:
        rec.graded_at = gj.mtime
        if gj.error is not None:
            rec.status, rec.error = "bad_report", gj.error
        elif not isinstance(gj.value, dict):
            rec.status, rec.error = "bad_report", f"{gj.rel}: not a JSON object at byte 0"
        else:
            rec.status = "graded"
            _fill_game(rec, gj.value)
        return
    rec.status = "in_flight"
    last, _ = _last_step(entry / "steps.jsonl")
    if last is not None:
        _fill_game(rec, last)


#: The files of a submission folder whose size / mtime / inode make its signature (read_submissions cache).
FOLDER_FILES = ("report.json", "run_instance.log", "test_output.txt", "game_result.json", "steps.jsonl")


def folder_signature(entry: Path) -> tuple:
    """(size, mtime_ns, inode) of each of :data:`FOLDER_FILES` in a submission folder (None when absent)."""
    out: list[Optional[tuple[int, int, int]]] = []
    for name in FOLDER_FILES:
        try:
            st = os.stat(os.path.join(entry, name))
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _cached(
    cache: Optional[dict[str, tuple]], fresh: dict[str, tuple], name: str, key: Any, build: Callable[[], Any]
) -> Any:
    """``build()`` unless ``cache`` holds ``name`` under the same ``key``; what is used goes into ``fresh``
    (which replaces the cache afterwards, so folders that vanished drop out)."""
    hit = cache.get(name) if cache is not None else None
    if hit is not None and hit[0] == key:
        fresh[name] = hit
        return hit[1]
    value = build()
    fresh[name] = (key, value)
    return value


def _replace(cache: Optional[dict[str, tuple]], fresh: dict[str, tuple]) -> None:
    if cache is not None:
        cache.clear()
        cache.update(fresh)


def _read_folder(entry: Path, kind: str, n: Optional[int], tests: bool = True) -> SubmissionRecord:
    rec = SubmissionRecord(round=entry.name, kind=kind, n=n)
    try:
        if kind == "game":
            _read_game_folder(entry, rec)
        else:
            if tests:
                read_report_folder(entry, rec)
            else:
                read_report_folder(entry, rec, tests=False)
    except Exception as e:  # noqa: BLE001 - last resort: one bad folder must not stop the run
        rec.status = "bad_report"
        rec.error = one_line(f"submissions/{entry.name}: {type(e).__name__}: {e}", 240)
    return rec


@reads_run_folder(lambda task_dir, *a, **k: Path(task_dir).parent)
def read_submissions(
    task_dir: Path, cache: Optional[dict[str, tuple]] = None, *, tests: bool = True
) -> list[SubmissionRecord]:
    """One record per ``submissions/<round>/`` folder (agent-N, auto-N, game-N, manual-N, legacy integers).

    Other folder names are ignored (as the visualizer does). Sorted by time
    (``submitted_at``, else ``seen_at``, else ``graded_at``; unknown last), then
    kind and N. Never raises. ``cache`` (a dict the caller keeps between calls,
    e.g. the live supervisor) skips re-reading folders whose files did not
    change (:func:`folder_signature`). ``tests=False`` leaves every record's ``tests`` empty
    (report.json's per-test results not parsed: ~40 % of the read, for a caller that keeps the
    recorded test results; not with ``cache``, whose records must be complete).
    """
    task_dir = Path(task_dir)
    tests = tests or cache is not None
    out: list[SubmissionRecord] = []
    seen = _evolve_seen(task_dir)
    fresh: dict[str, tuple] = {}
    for entry in subdirs(task_dir / "submissions"):
        parsed = parse_round(entry.name)
        if parsed is None:
            continue
        kind, n = parsed
        if cache is None:
            rec = _read_folder(entry, kind, n, tests)
        else:  # the cached record stays as read; the caller gets a copy (seen_at is set below)
            rec = _cached(
                cache,
                fresh,
                entry.name,
                folder_signature(entry),
                partial(_read_folder, entry, kind, n),
            ).model_copy()
        if kind in ("agent", "legacy") and entry.name in seen:
            rec.seen_at = seen[entry.name]
        out.append(rec)

    def key(r: SubmissionRecord) -> tuple[Any, ...]:
        t = r.submitted_at if r.submitted_at is not None else (r.seen_at if r.seen_at is not None else r.graded_at)
        return (t is None, t or 0.0, KIND_ORDER.get(r.kind, 9), r.n or 0, r.round)

    out.sort(key=key)
    _replace(cache, fresh)
    return out


def _is_pass(status: str) -> bool:
    return status.upper() in PASS_STATUSES


def _judge_data(rec: SubmissionRecord) -> dict[str, Any]:
    failing = [t.name for t in rec.tests if not _is_pass(t.status)]
    return {
        "status": rec.status,
        "kind": rec.kind,
        "n": rec.n,
        "submission_id": rec.submission_id,
        "pass_rate": rec.pass_rate,
        "score": rec.score,
        "score_flag": rec.score_flag,
        "score_0_100": rec.score_0_100,
        "max_score": rec.max_score,
        "valid": rec.valid,
        "summary": rec.summary,
        "total_tests": rec.total_tests,
        "passed": rec.passed,
        "failed": rec.failed,
        "errors": rec.errors,
        "timed_out": rec.timed_out,
        "runtime_s": rec.runtime_s,
        "submitted_at": rec.submitted_at,
        "graded_at": rec.graded_at,
        "seen_at": rec.seen_at,
        "failing": failing[:50],
        "n_failing": len(failing),
        "error": rec.error,
        "metrics": rec.metrics,
        "invalid": invalid_reason(rec),
    }


def result_summary(rec: SubmissionRecord) -> str:
    if rec.status == "failed_grading":
        return one_line(f"{rec.round} failed grading: {rec.error}")
    if rec.status == "bad_report":
        return one_line(f"{rec.round} bad report: {rec.error}")
    parts = [f"{rec.round} graded"]
    if rec.pass_rate is not None:
        parts.append(f"pass {rec.pass_rate * 100:.1f}%")
    if rec.score is not None and not math.isfinite(rec.score):
        parts.append("score –")  # a report's NaN / inf score: no score, not the word "nan"
    elif rec.score is not None:
        parts.append(f"score {rec.score:g}" + (f"/{rec.max_score:g}" if rec.max_score is not None else ""))
    elif rec.score_flag:  # (a NaN or non-numeric score is shown as "–", not the word "nan")
        parts.append("score –" if rec.score_flag in ("nan", "non_numeric") else f"score {rec.score_flag}")
    if rec.valid is False:  # (an invalid round: not a zero, no point of the curve; replay/invalid_rounds.py)
        parts.append("INVALID (report valid: false; not a score)")
    return one_line(", ".join(parts))


def _step_events(entry: Path, rel_dir: str, rnd: str) -> list[Event]:
    p = entry / "steps.jsonl"
    src = f"{rel_dir}/steps.jsonl"
    gen = file_generation(p) or ""
    out: list[Event] = []
    try:
        fp = open_regular(p)
    except OSError:
        return out
    with fp:
        for ln in iter_lines(fp, 0, final=True):
            if not ln.data.strip():
                continue
            if ln.too_long:
                out.append(parse_error(src, gen, ln.offset, ln.data, "line longer than 20 MB"))
                continue
            try:
                v = loads_lenient(ln.data)
            except ValueError as e:
                out.append(parse_error(src, gen, ln.offset, ln.data, f"invalid JSON: {e}"))
                continue
            if not isinstance(v, dict):
                out.append(parse_error(src, gen, ln.offset, ln.data, "step is not a JSON object"))
                continue
            v = sanitize(v)
            act = one_line(v.get("action"), 60)
            summ = f"{rnd} move {v.get('move')}: {act} → {v.get('score')}/{v.get('max_score')}"
            out.append(
                Event(
                    kind=Kind.GAME_STEP,
                    source=src,
                    generation=gen,
                    offset=ln.offset,
                    round=rnd,
                    summary=one_line(summ),
                    data=v,
                )
            )
    return out


_KEPT_INSTANCE_PREFIXES = JUDGE_KEPT_PREFIXES


def submission_events(
    task_dir: Path,
    records: Iterable[SubmissionRecord],
    utc_offset_s: Optional[float],
    cache: Optional[dict[str, tuple]] = None,
) -> list[Event]:
    """Events of the submission folders described by ``records`` (from :func:`read_submissions`).
    ``cache`` (kept by the caller between calls, e.g. the live supervisor) re-reads only the folders
    whose files or record changed; the events returned are then copies (callers may re-time them).

    Per non-game record one JUDGE_RESULT (``round`` set; ``data`` = pass_rate,
    score, valid, summary, ``failing`` (first 50 non-passing test names),
    status, error, ``submitted_at``, ``known_by``…): source ``report.json`` (or
    ``run_instance.log`` when grading failed), offset 0; ``t`` = when the result
    was known (:func:`result_known_time`: evolve ``at`` for agent rounds, else the
    judge log's ``Result:`` line, else the report mtime), or, for failed grading,
    the time of the last ERROR record of run_instance.log (recorded). The
    submission itself is the round's ``sforge-submit`` call / auto-eval tick, at
    ``submitted_at``. A bad report.json also gives a parse_error (sub 0; the
    JUDGE_RESULT is then sub 1).
    From run_instance.log: ERROR records (kind LOG, level ERROR, with
    traceback), WARNING lines and the ``Result:`` / ``Test runtime:`` /
    ``Judge container started:`` lines, as LOG events with ``round``; judge
    local times use ``utc_offset_s`` (judge and runner on one host).
    Game folders: GAME_RESULT from game_result.json (mtime, interpolated), one
    GAME_STEP per steps.jsonl line (no time).
    """
    task_dir = Path(task_dir)
    if cache is None:
        return folder_events(task_dir, records, utc_offset_s)
    fresh: dict[str, tuple] = {}
    out: list[Event] = []
    for rec in records:
        key = (rec.model_dump_json(), utc_offset_s, folder_signature(task_dir / "submissions" / rec.round))
        evs = _cached(cache, fresh, rec.round, key, partial(folder_events, task_dir, [rec], utc_offset_s))
        out.extend(e.model_copy() for e in evs)
    _replace(cache, fresh)
    return out


_RESULT_PREFIX = "Result:"
#: the judge's end is trusted as a result time only this long (s) past ``submitted_at`` plus the
#: eval's runtime (container start, archive, teardown take seconds): a log read with the wrong
#: UTC offset (the run's offset unknown) falls back to the report's mtime instead
JUDGE_SETUP_MAX_S = 900.0


def result_known_time(
    rec: SubmissionRecord, judge_end: Optional[float]
) -> tuple[Optional[float], Optional[TimeSource], Optional[str]]:
    """When a graded round's result was known: ``(t, t_source, known_by)`` (epoch seconds UTC).

    * agent (and legacy) rounds: ``evolve_state.json`` ``at`` (``seen_at``), the moment the
      agent saw the result — SForge's visualizer times agent rounds so
      (docs/sforge-run-folders.md §8.2);
      ``known_by = "evolve_state"``, recorded;
    * otherwise (auto rounds; an agent round before ``evolve_state.json`` is written, which the
      harness does at the end): the judge's end in ``run_instance.log``, its ``Result:`` line
      (else its last timed record, the judge container's end); ``"judge_log"``, recorded;
      trusted between ``submitted_at`` and ``submitted_at`` + runtime + :data:`JUDGE_SETUP_MAX_S`;
    * else the ``report.json`` mtime (``graded_at``), trusted in the same window;
      ``"report_mtime"``, interpolated;
    * else (a copied or checked-out folder: every mtime is the copy's) ``submitted_at`` plus the
      eval's ``runtime_seconds``; ``"submitted_at+runtime"``, interpolated;
    * nothing known: ``(None, None, None)``.

    Never ``submitted_at``: that is when grading began, not when its result was known.
    ``judge_end``: the judge's end read from the round's ``run_instance.log`` (epoch s UTC, or None:
    :attr:`_JudgeLog.judge_end`).
    """
    if rec.kind in ("agent", "legacy") and rec.seen_at is not None:
        return rec.seen_at, TimeSource.RECORDED, "evolve_state"

    def plausible(t: float) -> bool:
        return (
            rec.submitted_at is None
            or rec.submitted_at - 1.0 <= t <= rec.submitted_at + (rec.runtime_s or 0.0) + JUDGE_SETUP_MAX_S
        )

    if judge_end is not None and plausible(judge_end):
        return judge_end, TimeSource.RECORDED, "judge_log"
    if rec.graded_at is not None and plausible(rec.graded_at):
        return rec.graded_at, TimeSource.INTERPOLATED, "report_mtime"
    if rec.submitted_at is not None:  # a copied or checked-out folder's mtime: grading start + its runtime
        return rec.submitted_at + (rec.runtime_s or 0.0), TimeSource.INTERPOLATED, "submitted_at+runtime"
    return None, None, None


def folder_events(task_dir: Path, records: Iterable[SubmissionRecord], utc_offset_s: Optional[float]) -> list[Event]:
    out: list[Event] = []
    for rec in records:
        entry = task_dir / "submissions" / rec.round
        rel_dir = f"submissions/{rec.round}"
        if rec.kind == "game":
            gj = read_json(entry / "game_result.json", f"{rel_dir}/game_result.json")
            if gj.exists and rec.status != "graded":
                out.append(json_parse_error(gj, rec.error))
            elif gj.exists:
                out.append(
                    Event(
                        kind=Kind.GAME_RESULT,
                        source=gj.rel,
                        generation=gj.generation,
                        t=gj.mtime,
                        t_source=TimeSource.INTERPOLATED if gj.mtime is not None else None,
                        round=rec.round,
                        summary=result_summary(rec),
                        data=_judge_data(rec),
                    )
                )
            out.extend(_step_events(entry, rel_dir, rec.round))
            continue

        judge = instance_log(entry, rel_dir, utc_offset_s)
        inst = judge.events
        data = _judge_data(rec)
        if rec.status == "failed_grading":
            err = _last_instance_error(inst)
            p = entry / "run_instance.log"
            ts: Optional[TimeSource]
            if err is not None:
                t, ts = err.t, TimeSource.RECORDED
            else:
                t = file_mtime(p) or file_mtime(entry)
                ts = TimeSource.INTERPOLATED if t is not None else None
            if utc_offset_s is None and err is not None:
                data["tz_assumed"] = True
            out.append(
                Event(
                    kind=Kind.JUDGE_RESULT,
                    source=f"{rel_dir}/run_instance.log",
                    generation=judge.generation,
                    sub=FAILED_GRADING_SUB,
                    t=t,
                    t_source=ts,
                    round=rec.round,
                    level="ERROR",
                    is_error=True,
                    summary=result_summary(rec),
                    data=data,
                )
            )
        else:
            rel = f"{rel_dir}/report.json"
            sub = 0
            if rec.status == "bad_report":
                rj = read_json(entry / "report.json", rel)
                out.append(json_parse_error(rj, rec.error))
                gen = rj.generation
                sub = 1
            else:  # (read as read_json would, not parsed again: its bytes' generation is all it gives)
                gen = content_gen(read_bytes(entry / "report.json"))
            t, ts, known_by = result_known_time(rec, judge.judge_end)
            data["known_by"] = known_by
            if known_by == "judge_log" and utc_offset_s is None:
                data["tz_assumed"] = True
            out.append(
                Event(
                    kind=Kind.JUDGE_RESULT,
                    source=rel,
                    generation=gen,
                    sub=sub,
                    t=t,
                    t_source=ts,
                    round=rec.round,
                    # (an invalid report: a warning, marked grey ╵ in the event list; replay/invalid_rounds.py)
                    level="ERROR" if rec.status != "graded" else ("WARNING" if rec.valid is False else None),
                    is_error=rec.status != "graded",
                    summary=result_summary(rec),
                    data=data,
                )
            )
        for ev in inst:
            msg = str(ev.data.get("message", ""))
            keep = (
                ev.kind == Kind.PARSE_ERROR or ev.level in JUDGE_KEPT_LEVELS or msg.startswith(_KEPT_INSTANCE_PREFIXES)
            )
            if keep:
                ev.round = rec.round
                out.append(ev)
    return out


# =========================================================================== other files as events
