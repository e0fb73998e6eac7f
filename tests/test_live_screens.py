"""Live views through Textual's Pilot: runs table (status, sort, filter, alarms), live run screen
(pinned to now, incremental reload, "N new", submissions), container actions behind a confirmation,
layouts at 80×24 and 160×48.

Data: runs written with the real :class:`edgetui.record.recorder.Recorder` into a DuckDB file, and
:class:`edgetui.live.model.LiveRun` snapshots handed to the screens in :class:`RunsUpdated`
messages, as the supervisor's worker will. Container effects go to a recording fake
(:class:`FakeActions`); the real Docker effects are the live core's tests.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pytest
from rich.text import Text
from textual.app import App

from waits import pilot_wait_for as wait_for

from edgetui.store import queries as store
from edgetui.store.database import close_when_idle, open_db
from edgetui.events import Event, Usage
from edgetui.hosts.container_info import ContainerInfo
from edgetui.live.model import Alarm, LiveRun
from edgetui.record.recorder import Recorder
from edgetui.records import RunInfo, TaskInfo, make_run_key
from edgetui.views.screens.confirm import ChoiceScreen, ConfirmScreen
from edgetui.views.screens.live_common import PriorFitter
from edgetui.views.screens.live_run import (
    LiveRunScreen,
    SubmissionsTable,
    SupervisorActions,
    load_increment,
    tail_start,
)
from edgetui.views.screens.runs import (
    AlarmsScreen,
    RunsScreen,
    RunsUpdated,
    dispatch_events_recorded,
    dispatch_runs_updated,
)
from edgetui.views.widgets import EventList, RunHeader, ScoreChart
from edgetui.views.widgets.runs_table import (
    COLUMNS,
    RunsTable,
    budget_bar,
    filter_runs,
    fmt_age,
    fmt_hm,
    sort_runs,
    status_text,
)

APP_TCSS = Path(__file__).resolve().parents[1] / "edgetui" / "views" / "app.tcss"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
NOW = T0 + 5 * 3600 + 12 * 60  # 5:12 into the runs


# ---------------------------------------------------------------------------- database builders


def _settle(conn) -> None:
    """Close a pending result (DuckDB 2.0 refuses ``register`` after an unfinished ``fetchone``)."""
    conn.execute("SELECT 1").fetchall()


class LiveRunWriter:
    """Writes one growing run through the Recorder: events every ``step`` seconds, graded rounds."""

    def __init__(
        self,
        conn,
        run_id: str,
        task_id: str,
        *,
        start: float = T0,
        step: float = 30.0,
        score_task: bool = True,
        model: str = "claude-opus-4",
        status: str = "running",
    ) -> None:
        self.conn = conn
        self.rec = Recorder(conn)
        _settle(conn)
        self.rk = make_run_key("local", run_id, task_id)
        self.run_id, self.task_id = run_id, task_id
        self.start, self.step = start, step
        self.score_task = score_task
        self.i = 0
        self.off = 0
        self.subs: list[dict] = []
        self.best: Optional[float] = None
        self.rec.upsert_task(
            TaskInfo(
                task_id=task_id,
                name=task_id.replace("-", " "),
                selection="score_first" if score_task else "pass_rate_first",
                assumed=False,
            )
        )
        _settle(conn)
        self.rec.upsert_run(
            self.rk,
            RunInfo(
                host="local",
                run_id=run_id,
                task_id=task_id,
                agent="claude",
                model=model,
                timeout_s=12 * 3600.0,
                started_at=start,
                layout="flat",
            ),
            status=status,
            score_task=score_task,
            selection="score_first" if score_task else "pass_rate_first",
        )
        _settle(conn)

    def attach(self, conn) -> "LiveRunWriter":
        """Write through ``conn`` from now on (e.g. a cursor of the app's connection)."""
        self.conn = conn
        self.rec = Recorder(conn)
        _settle(conn)
        return self

    def t_of(self, i: int) -> float:
        return self.start + 5.0 + i * self.step

    def add(self, n: int) -> list[str]:
        """Append ``n`` events (a graded agent round every 20th); returns their summaries."""
        events = []
        graded = False
        for _ in range(n):
            i = self.i
            kind = ("thinking", "tool_call", "tool_result", "agent_message")[i % 4]
            summary = f"{kind} #{i}"
            kw: dict[str, Any] = {}
            src = "agent_output.txt"
            if i and i % 20 == 0:
                kind = "judge_result"
                rnd = f"agent-{len(self.subs) + 1}"
                score = round(40.0 + 2.5 * len(self.subs), 2)
                new_best = self.best is None or score > self.best
                self.best = max(score, self.best or score)
                self.subs.append(
                    dict(
                        round=rnd,
                        kind="agent",
                        n=len(self.subs) + 1,
                        status="graded",
                        t=self.t_of(i),
                        elapsed_s=self.t_of(i) - self.start,
                        pass_rate=0.5,
                        score=score,
                        valid=True,
                        is_new_best=new_best,
                        best_round=rnd,
                        best_score=self.best,
                        best_pass_rate=0.5,
                        summary="10/20 passed",
                    )
                )
                summary = f"{rnd} graded: score {score}"
                kw = dict(round=rnd, data={"round": rnd, "score": score})
                src = f"submissions/{rnd}/report.json"
                graded = True
            elif kind == "agent_message":
                kw = dict(message_id=f"m{i}", model="claude-opus-4", usage=Usage(input_tokens=1000, output_tokens=200))
            events.append(
                Event(
                    run_key=self.rk,
                    kind=kind,
                    source=src,
                    offset=self.off,
                    sub=0,
                    t=self.t_of(i),
                    summary=summary,
                    **kw,
                )
            )
            self.off += 100
            self.i += 1
        self.rec.insert_events(self.rk, events)
        _settle(self.conn)
        if graded:
            self.rec.replace_submissions(self.rk, [dict(s) for s in self.subs])
            _settle(self.conn)
        self.rec.update_run(
            self.rk,
            n_events=self.i,
            last_event_at=self.t_of(self.i - 1),
            best_score=self.best,
            agent_submissions=len(self.subs),
        )
        _settle(self.conn)
        return [e.summary for e in events]

    @property
    def last_t(self) -> float:
        return self.t_of(self.i - 1)


def live(rk_or_writer: Any, **kw: Any) -> LiveRun:
    """A LiveRun snapshot (defaults: running, 5:12 of 12:00, a running work container)."""
    if isinstance(rk_or_writer, LiveRunWriter):
        w = rk_or_writer
        kw.setdefault("last_event_at", w.last_t)
        kw.setdefault("best_display", w.best)
        kw.setdefault("agent_submissions", len(w.subs))
        kw.setdefault("score_task", w.score_task)
        kw.setdefault("n_events", w.i)  # as the supervisor counts them: recorded + tailed since
        rk = w.rk
    else:
        rk = rk_or_writer
    host, run_id, task_id = rk.split("/", 2)
    kw.setdefault("status", "running")
    # alarms given to a snapshot are current unless the test says which rules still hold
    kw.setdefault("active_alarms", sorted({a.rule for a in kw.get("alarms", [])}))
    kw.setdefault("elapsed_s", 5 * 3600 + 12 * 60)
    kw.setdefault("budget_s", 12 * 3600)
    kw.setdefault("model", "claude-opus-4")
    kw.setdefault("agent", "claude")
    kw.setdefault("started_at", T0)
    if "container" not in kw and kw["status"] in ("running", "grading"):
        kw["container"] = ContainerInfo(
            id="c0ffee" + "0" * 58, name=f"sforge.run.{task_id}.{run_id}", role="work", state="running"
        )
    return LiveRun(run_key=rk, host=host, run_id=run_id, task_id=task_id, **kw)


def alarm(
    rk: str,
    rule: str = "stall",
    t: float = NOW - 60,
    severity: str = "warning",
    message: str = "no agent action for 25 min",
) -> Alarm:
    return Alarm(run_key=rk, rule=rule, severity=severity, t=t, message=message)


class FakeActions:
    """Records what the screens ask the live core to do."""

    def __init__(self, files: Sequence[str] = ("run_agent.log", "agent_output.txt")) -> None:
        self.calls: list[tuple[str, str]] = []
        self.files = set(files)

    def stop(self, run_key: str) -> None:
        self.calls.append(("stop", run_key))

    def kill(self, run_key: str) -> None:
        self.calls.append(("kill", run_key))

    def shell_argv(self, run_key: str) -> Optional[list[str]]:
        self.calls.append(("shell", run_key))
        return ["docker", "exec", "-it", "c0ffee", "sh"]

    def file_path(self, run_key: str, name: str) -> Optional[str]:
        return f"/runs/{run_key}/{name}" if name in self.files else None


class LiveApp(App):
    """A small app holding the DuckDB connection (screens read ``app.conn``) with the Runs screen as home."""

    CSS_PATH = str(APP_TCSS)

    def __init__(
        self,
        db_path: Path,
        *,
        actions: Any = None,
        now: Callable[[], float] = lambda: NOW,
        run_command: Callable[[Sequence[str]], int] = lambda argv: 0,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.conn = open_db(db_path)
        self.prior_fitter: Optional[PriorFitter] = None  # (the forecast prior's fits, as the app's)
        self.runs_view: Optional[dict] = None  # (the runs screen's view kept for the next one, as the app's)
        self.actions = actions
        self._now = now
        self.run_command = run_command

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(actions=self.actions, now=self._now, run_command=self.run_command))

    def on_unmount(self) -> None:
        assert close_when_idle(self.conn)  # a worker may still be reading when the test ends


def table_rows(screen: RunsScreen) -> list[list[str]]:
    t = screen.query_one(RunsTable)
    return [[c.plain if isinstance(c, Text) else str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]


def col(screen: RunsScreen, key: str) -> list[str]:
    t = screen.query_one(RunsTable)
    return [c.plain if isinstance(c, Text) else str(c) for c in t.get_column(key)]


async def runs_home(pilot, writers: dict) -> None:
    """Wait for the runs screen, then give it a snapshot of every writer's run."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, RunsScreen))
    await post_runs(pilot, snapshot(writers))


async def open_selected_run(pilot) -> LiveRunScreen:
    """Enter on the runs screen; the live run screen once its run is loaded."""
    app = pilot.app
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None)
    return app.screen


async def post_runs(pilot, runs: list[LiveRun], messages: Sequence[str] = ()) -> None:
    runs_screen = next(s for s in pilot.app.screen_stack if isinstance(s, RunsScreen))
    runs_screen.post_message(RunsUpdated(runs, list(messages)))
    await pilot.pause()
    await pilot.pause()


@pytest.fixture
def db(tmp_path) -> tuple[Path, dict[str, LiveRunWriter]]:
    path = tmp_path / "live.duckdb"
    conn = open_db(path)
    writers = {
        "gw": LiveRunWriter(conn, "run-a-20260101000000", "gw-detect"),
        "sat": LiveRunWriter(conn, "run-b-20260101000000", "sat-solver", score_task=False, model="gpt-5"),
        "old": LiveRunWriter(conn, "run-c-20260101000000", "tsp-heuristic", status="finished"),
    }
    writers["gw"].add(120)
    writers["sat"].add(30)
    writers["old"].add(45)
    conn.close()
    return path, writers


def snapshot(writers: dict[str, LiveRunWriter], **over: dict) -> list[LiveRun]:
    base = {
        "gw": dict(status="running", tokens=2_400_000, cost_usd=88.5, cpu_percent=130.0, mem_bytes=3 * 1024**3),
        "sat": dict(
            status="grading",
            judges_running=1,
            model="gpt-5",
            agent="codex",
            tokens=400_000,
            cost_usd=12.25,
            best_display=85.0,
        ),
        "old": dict(status="finished", elapsed_s=12 * 3600, tokens=9_000_000, cost_usd=412.0, container=None),
    }
    out = []
    for k, w in writers.items():
        kw = {**base[k], **over.get(k, {})}
        out.append(live(w, **kw))
    return out


# ---------------------------------------------------------------------------- pure helpers


def test_formatting_helpers():
    assert [fmt_age(x) for x in (None, -3, 0, 12, 59, 60, 240, 3599, 3600, 7500, 36000, 100000, 400000)] == [
        "–",
        "0s",
        "0s",
        "12s",
        "59s",
        "1m",
        "4m",
        "59m",
        "1h00",
        "2h05",
        "10h",
        "27h",
        "4d",
    ]
    assert fmt_hm(5 * 3600 + 12 * 60 + 59) == "5:12" and fmt_hm(12 * 3600) == "12:00" and fmt_hm(None) == "–"
    assert budget_bar(6 * 3600, 12 * 3600, 6).plain == "███░░░"
    assert budget_bar(13 * 3600, 12 * 3600, 6).plain == "██████"
    assert budget_bar(None, 12 * 3600, 4).plain == "    "
    assert budget_bar(0.0, 12 * 3600, 4).plain == "░░░░"  # known and none of it used: an empty bar, not a blank
    r = live("local/r/t", alarms=[alarm("local/r/t")], infra_error=True, flags=["infra", "oom", "alarm:stall"])
    assert status_text(r).plain == "● running ⚠1 ⚑infra OOM"
    assert status_text(r, compact=True).plain == "● running ⚠1 ⚑ OOM"


def test_sort_and_filter_pure():
    a = live("local/r1/alpha", status="finished", best_display=50.0, score_task=True)
    b = live("local/r2/beta", status="running", best_display=70.0, score_task=True, model="gpt-5")
    c = live("local/r3/gamma", status="gone", best_display=None)
    d = live("local/r4/delta", status="aborted", best_display=60.0, alarms=[alarm("local/r4/delta")])
    assert [r.task_id for r in sort_runs([a, b, c, d])] == ["delta", "gamma", "beta", "alpha"]
    assert [r.task_id for r in sort_runs([a, b, c, d], "best")] == ["alpha", "delta", "beta", "gamma"]
    assert [r.task_id for r in sort_runs([a, b, c, d], "best", reverse=True)] == ["beta", "delta", "alpha", "gamma"]
    assert [r.task_id for r in filter_runs([a, b, c, d], "gpt")] == ["beta"]
    assert [r.task_id for r in filter_runs([a, b, c, d], "R1 fin")] == ["alpha"]
    assert [r.task_id for r in filter_runs([a, b, c, d], "alarm")] == ["delta"]


def test_incremental_load_appends_only_the_tail(tmp_path):
    path = tmp_path / "inc.duckdb"
    conn = open_db(path)
    w = LiveRunWriter(conn, "r1", "gw-detect")
    w.add(50)
    how, head, cur, subs = load_increment(conn, w.rk, None, [])
    assert how == "full" and cur.n == 50
    how, *_ = load_increment(conn, w.rk, cur, subs)
    assert how == "idle"
    w.add(7)
    how, head, cur2, subs2 = load_increment(conn, w.rk, cur, subs)
    assert how == "tail" and cur2.n == 57
    ref = store.run_events(conn, w.rk)
    assert cur2.events.event_id == ref.event_id
    # an event inserted before the newest known time forces a full reload, still in timeline order
    w.rec.insert_events(
        w.rk,
        [
            Event(
                run_key=w.rk,
                kind="log",
                source="run_agent.log",
                offset=0,
                sub=0,
                t=w.t_of(3) + 1,
                summary="late harness line",
            )
        ],
    )
    _settle(conn)
    how, head, cur3, _ = load_increment(conn, w.rk, cur2, subs2)
    assert how == "full" and cur3.events.event_id == store.run_events(conn, w.rk).event_id
    k, t0 = tail_start(cur3.events)
    assert t0 == w.last_t and k == cur3.n - 1
    # given the last header (only lines were tailed), a tail read keeps it and the submissions but
    # brings its event count and last time up to date: the same timeline as a read of everything
    w.add(5)  # no graded round among these
    how, head4, cur4, subs4 = load_increment(conn, w.rk, cur3, subs2, header=head)
    ref_how, ref_head, ref_cur, _ = load_increment(conn, w.rk, cur3, subs2)
    assert how == ref_how == "tail" and cur4.events.event_id == ref_cur.events.event_id
    assert head4["n_events"] == ref_head["n_events"] == cur4.n and head4["last_t"] == ref_head["last_t"]
    assert subs4 == subs2
    # a late event breaks the plain append: a light read falls back to reading everything
    w.rec.insert_events(
        w.rk,
        [
            Event(
                run_key=w.rk,
                kind="log",
                source="run_agent.log",
                offset=1,
                sub=0,
                t=w.t_of(4) + 1,
                summary="another late line",
            )
        ],
    )
    _settle(conn)
    how, _, cur5, _ = load_increment(conn, w.rk, cur4, subs4, header=head4)
    assert how == "full" and cur5.events.event_id == store.run_events(conn, w.rk).event_id
    conn.close()


def test_tail_read_keeps_the_timeline_order_across_sources(tmp_path):
    """run_events_since orders the re-read events as run_events does: ties on t by the sources'
    earliest times (a source whose first timed event arrives in the tail included), untimed last."""
    conn = open_db(tmp_path / "order.duckdb")
    w = LiveRunWriter(conn, "r1", "gw-detect")
    rec = w.rec
    seq = [0]

    def ev(src: str, t: Optional[float], off: int, sub: int = 0) -> Event:
        seq[0] += 1
        return Event(run_key=w.rk, kind="log", source=src, offset=off, sub=sub, t=t, summary=f"e{seq[0]}")

    def put(*evs: Event) -> None:
        rec.insert_events(w.rk, list(evs))
        _settle(conn)

    # b.log starts earlier than a.log: at equal times b.log's lines come first, whatever the name
    put(
        ev("b.log", T0 + 1, 0),
        ev("a.log", T0 + 2, 0),
        ev("a.log", T0 + 5, 10),
        ev("b.log", T0 + 5, 10),
        ev("c.log", None, 0),
    )
    base = store.run_events(conn, w.rk)
    assert base.source[2:4] == ["b.log", "a.log"]  # the tie at T0 + 5
    steps = [
        # more at the newest time (re-read with the tail), in every source, untimed ones included
        [ev("a.log", T0 + 5, 20), ev("b.log", T0 + 5, 20, 1), ev("b.log", T0 + 5, 20, 0), ev("c.log", None, 5)],
        # a new source whose first timed event ties with others; the untimed c.log gets its first time
        [ev("d.log", T0 + 7, 0), ev("a.log", T0 + 7, 30), ev("c.log", T0 + 7, 9), ev("b.log", T0 + 7, 30)],
        [ev("d.log", T0 + 8, 5), ev("d.log", None, 7), ev("a.log", T0 + 8, 40)],
    ]
    for new in steps:
        put(*new)
        got = store.run_events_since(conn, w.rk, base)
        assert got is not None
        tl, total = got
        ref = store.run_events(conn, w.rk)
        assert total == len(ref) == len(tl)
        for name in store.EVENT_LIST_COLUMNS:
            assert getattr(tl, name) == getattr(ref, name), name
        assert tl.source_min() == ref.source_min()
        base = tl
    # an event before the newest time: not a plain append
    put(ev("a.log", T0 + 3, 50))
    assert store.run_events_since(conn, w.rk, base) is None
    # no timed event at all: nothing to start from
    assert store.run_events_since(conn, w.rk, store.EventColumns.from_rows([{"event_id": "x", "t": None}])) is None
    conn.close()


# ---------------------------------------------------------------------------- runs screen


@pytest.mark.asyncio
async def test_rows_status_and_title(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        assert screen.query_one("#runs-empty").display  # waiting for the first snapshot
        await post_runs(pilot, snapshot(writers), ["watching /runs (3 runs)"])
        rows = table_rows(screen)
        assert len(rows) == 3
        status = dict(zip(col(screen, "task"), col(screen, "status")))
        assert status["gw-detect"].startswith("● running")
        assert status["sat-solver"].startswith("● grading")
        assert status["tsp-heuristic"].startswith("● finished")
        best = dict(zip(col(screen, "task"), col(screen, "best")))
        assert best["sat-solver"] == "85%" and best["gw-detect"] == "50"
        elapsed = dict(zip(col(screen, "task"), col(screen, "elapsed")))
        assert elapsed["gw-detect"].startswith("5:12 / 12:00")
        last = dict(zip(col(screen, "task"), col(screen, "last")))
        assert last["gw-detect"] == fmt_age(NOW - writers["gw"].last_t)
        assert dict(zip(col(screen, "task"), col(screen, "cost")))["tsp-heuristic"] == "$412.00"
        assert dict(zip(col(screen, "task"), col(screen, "subs")))["gw-detect"] == "5/0"
        title = screen.query_one("#runs-title").render().plain
        assert "3 runs" in title and "1 running" in title and "1 grading" in title
        assert "watching /runs" in screen.query_one("#runs-notes").render().plain
        assert not screen.query_one("#alarm-banner").display


@pytest.mark.asyncio
async def test_sort_cycle_reverse_and_filter(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        await post_runs(pilot, snapshot(writers))
        assert col(screen, "task") == ["gw-detect", "sat-solver", "tsp-heuristic"]  # status order
        await pilot.press("s")  # run id
        assert screen.sort_key == "run_id"
        assert col(screen, "run_id")[0].startswith("run-a")
        await pilot.press("S")
        assert col(screen, "run_id")[0].startswith("run-c")
        assert "▼" in str(screen.query_one(RunsTable).columns["run_id"].label)
        await pilot.press("s", "s", "s", "s")  # task, model, elapsed, best
        assert screen.sort_key == "best"
        await pilot.press("S")  # ascending again
        assert col(screen, "task") == ["tsp-heuristic", "gw-detect", "sat-solver"]
        # filter as you type; the table keeps only matching runs
        await pilot.press("slash")
        assert screen.query_one("#runs-filter").has_focus
        await pilot.press(*"gpt")
        assert col(screen, "task") == ["sat-solver"]
        assert "1 of 3" in str(screen.query_one(RunsTable).border_title)
        await pilot.press("enter")  # keep the filter, back to the table
        assert screen.query_one(RunsTable).has_focus and screen.filter_text == "gpt"
        await pilot.press("escape")
        assert len(col(screen, "task")) == 3 and screen.filter_text == ""
        await pilot.press("slash", *"finished")
        assert col(screen, "task") == ["tsp-heuristic"]


@pytest.mark.asyncio
async def test_alarms_are_loud(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        await post_runs(pilot, snapshot(writers))
        rk = writers["sat"].rk
        snap = snapshot(
            writers,
            sat=dict(alarms=[alarm(rk, "judge_error", severity="critical", message="judge container exited 137")]),
        )
        await post_runs(pilot, snap)
        banner = screen.query_one("#alarm-banner")
        assert banner.display
        text = banner.render().plain
        assert "1 alarm" in text and "judge_error" in text and "exited 137" in text
        assert any("exited 137" in n.message for n in app._notifications)
        assert col(screen, "task")[0] == "sat-solver"  # runs with alarms sort first
        assert "⚠1" in col(screen, "status")[0]
        n_toasts = len(app._notifications)
        await post_runs(pilot, snap)  # the same alarm again: no new toast
        assert len(app._notifications) == n_toasts
        await pilot.press("a")
        assert isinstance(app.screen, AlarmsScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


@pytest.mark.asyncio
async def test_enter_opens_live_run_pinned_and_new_events_stream_in(db):
    path, writers = db
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        assert screen.selected_run_key == w.rk
        run = await open_selected_run(pilot)
        assert run.run_key == w.rk and run.live is not None and run.live.status == "running"
        assert run.pinned and run.cursor.n == 120 and run.cursor.index == 119
        lst = run.query_one(EventList)
        assert lst.selected == 119
        assert "● now" in str(lst.border_subtitle)
        assert "● running" in run.query_one("#live-status").render().plain
        subs = run.query_one(SubmissionsTable)
        assert subs.row_count == 5 and subs.rounds[0] == "agent-5"
        assert "★" in str(subs.get_row_at(0)[4])
        chart = run.query_one(ScoreChart)
        assert len(chart.data.agent) == 5
        # new events recorded + a refresh message: they appear, the selection follows them
        w.attach(app.conn.cursor())
        added = w.add(25)  # includes two graded rounds (agent-6, agent-7)
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: run.cursor.n == 145)
        await pilot.pause()
        assert run.reloads["tail"] >= 1
        assert run.pinned and run.cursor.index == 144 and lst.selected == 144
        assert run.cursor.summary[-1] == added[-1]
        top = int(lst.scroll_y)
        assert top <= 144 < top + lst.scrollable_content_region.height  # auto-scrolled to the bottom
        assert subs.row_count == 7 and subs.rounds[0] == "agent-7"
        assert len(chart.data.agent) == 7  # the chart grew in place
        # q goes back to the runs table
        await pilot.press("q")
        assert isinstance(app.screen, RunsScreen)


@pytest.mark.asyncio
async def test_events_recorded_reloads_the_live_run_before_any_snapshot(db):
    """The supervisor's mid-refresh "events recorded" reaches the run's screen, which reads them
    without waiting for the snapshot; another run's events do not make it read."""
    path, writers = db
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        n0 = run.cursor.n
        w.attach(app.conn.cursor())
        w.add(3)
        loads = dict(run.reloads)
        assert dispatch_events_recorded(app, {writers["old"].rk}) >= 1  # not this run: nothing read
        await pilot.pause(0.3)
        assert run.reloads == loads and run.cursor.n == n0
        dispatch_events_recorded(app, {w.rk})
        await wait_for(pilot, lambda: run.cursor.n == n0 + 3)
        assert run.pinned and run.cursor.index == n0 + 2
        # the header's dollars follow the snapshot (the runs row is written only every few seconds)
        header = run.query_one(RunHeader)
        assert "$88.50" in header.text(160).plain
        await post_runs(pilot, snapshot(writers, gw=dict(cost_usd=91.25)))
        await wait_for(pilot, lambda: "$91.25" in header.text(160).plain)


@pytest.mark.asyncio
async def test_snapshot_figures_wait_for_the_tick_and_a_status_change_shows_at_once(db):
    """A snapshot that only moves figures (dollars) is drawn with the next 1 s tick, not in a frame
    of its own; one that changes what the run is (status) is drawn at once."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        header = run.query_one(RunHeader)
        status = run.query_one("#live-status")
        await post_runs(pilot, snapshot(writers, gw=dict(cost_usd=91.25)))
        await wait_for(pilot, lambda: "$91.25" in header.text(160).plain)  # drawn by a tick at the latest
        run._tick_timer.pause()  # the test ticks by hand
        run._tick()
        runs_screen = next(s for s in app.screen_stack if isinstance(s, RunsScreen))
        runs_screen.post_message(RunsUpdated(snapshot(writers, gw=dict(cost_usd=93.5))))
        await wait_for(pilot, lambda: run.live is not None and run.live.cost_usd == 93.5)
        assert run._live_dirty and "$91.25" in header.text(160).plain  # waits for the tick
        run._tick()
        assert not run._live_dirty and "$93.50" in header.text(160).plain
        runs_screen.post_message(
            RunsUpdated(snapshot(writers, gw=dict(cost_usd=93.5, status="grading", judges_running=1)))
        )
        await wait_for(pilot, lambda: run.live is not None and run.live.status == "grading")
        assert "grading" in status.render().plain and not run._live_dirty  # at once, no tick needed


@pytest.mark.asyncio
async def test_j_and_k_move_the_runs_table_cursor(db):
    """j/k step the runs table as they step the live run screen (a trial pressed j, then Enter)."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        t = app.screen.query_one(RunsTable)
        first = t.selected_run_key
        await pilot.press("j")
        assert t.cursor_row == 1 and t.selected_run_key != first
        await pilot.press("k")
        assert t.cursor_row == 0 and t.selected_run_key == first


@pytest.mark.asyncio
async def test_new_marker_when_not_at_the_bottom(db):
    path, writers = db
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        lst = run.query_one(EventList)
        page = lst.scrollable_content_region.height - 1
        await pilot.press("pageup", "pageup", "k")
        await pilot.pause()
        at = 119 - 2 * page - 1
        assert not run.pinned and run.cursor.index == at
        sel_id = run.cursor.events.event_id[at]
        scroll = lst.scroll_y
        w.attach(app.conn.cursor())
        w.add(12)
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: run.cursor.n == 132)
        await pilot.pause()
        assert not run.pinned
        assert run.cursor.index == at and run.cursor.events.event_id[at] == sel_id
        assert lst.scroll_y == scroll  # no auto-scroll away from what the user reads
        assert run.new_count == 12
        assert "12 new" in str(lst.border_subtitle)
        w.add(3)
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: run.cursor.n == 135)
        await pilot.pause()
        assert run.new_count == 15 and "15 new" in str(lst.border_subtitle)
        await pilot.press("G")  # back to now: pinned again, marker gone
        assert run.pinned and run.new_count == 0 and run.cursor.index == 134
        assert "● now" in str(lst.border_subtitle)
        w.add(2)
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: run.cursor.n == 137)
        await pilot.pause()
        assert run.cursor.index == 136 and run.new_count == 0
        n_full = run.reloads["full"]
        await pilot.press("r")  # read the whole run again: same timeline, still following now
        await wait_for(pilot, lambda: run.reloads["full"] == n_full + 1)
        await pilot.pause()
        assert run.cursor.n == 137 and run.cursor.index == 136 and run.pinned
        assert run.cursor.events.event_id == store.run_events(app.conn, w.rk).event_id


@pytest.mark.asyncio
async def test_enter_on_a_submission_jumps_to_its_graded_event(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        subs = run.query_one(SubmissionsTable)
        subs.focus()
        await pilot.press("down", "enter")  # agent-4
        await pilot.pause()
        cur = run.cursor
        assert cur.kind[cur.index] == "judge_result" and cur.round[cur.index] == "agent-4"
        assert not run.pinned


# ---------------------------------------------------------------------------- actions


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["runs", "run"])
async def test_stop_asks_first_and_calls_only_after_confirming(db, where):
    path, writers = db
    fake = FakeActions()
    app = LiveApp(path, actions=fake)
    rk = writers["gw"].rk
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        if where == "run":
            await open_selected_run(pilot)
        home = app.screen
        # cancelled with n, with esc, and with enter on the focused Cancel button: nothing happens
        for cancel in ("n", "escape", "enter"):
            await pilot.press("x")
            assert isinstance(app.screen, ConfirmScreen)
            assert "sforge.run.gw-detect" in app.screen.query_one("#confirm-body").render().plain
            await pilot.press(cancel)
            await pilot.pause()
            assert app.screen is home
        await pilot.pause(0.1)
        assert fake.calls == []
        await pilot.press("x")
        await pilot.press("y")
        await wait_for(pilot, lambda: fake.calls == [("stop", rk)])
        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: fake.calls == [("stop", rk), ("kill", rk)])
        assert app.screen is home


@pytest.mark.asyncio
async def test_stop_is_refused_without_a_running_container(db):
    path, writers = db
    fake = FakeActions()
    app = LiveApp(path, actions=fake)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        screen.query_one(RunsTable).select_run(writers["old"].rk)
        await pilot.press("x")
        assert app.screen is screen and fake.calls == []
        assert any("no running work container" in n.message for n in app._notifications)


@pytest.mark.asyncio
async def test_shell_and_pager_run_with_the_app_suspended(db, monkeypatch, tmp_path):
    path, writers = db
    fake = FakeActions()
    real = tmp_path / "agent_output.txt"  # the file the pager is asked for holds a secret
    real.write_text("line 1\nexport GITHUB_TOKEN=ghp_" + "Zq9x" * 9 + "\nline 3\necho Zq-known-Value-99 ok\n")
    fake.file_path = lambda run_key, name: (
        str(real)
        if name == "agent_output.txt"
        # type: ignore
        else (f"/runs/{run_key}/{name}" if name in fake.files else None)
    )
    fake.known_secrets = lambda run_key: {"Zq-known-Value-99"}  # type: ignore  # (the run's api_key…)
    ran: list[list[str]] = []
    shown: list[str] = []

    def run_command(argv):
        ran.append(list(argv))
        if argv[-1].endswith("agent_output.txt"):
            shown.append(open(argv[-1]).read())
        return 0

    app = LiveApp(path, actions=fake, run_command=run_command)
    suspended: list[bool] = []

    @contextmanager
    def fake_suspend():
        suspended.append(True)
        yield

    monkeypatch.setattr(app, "suspend", fake_suspend)
    monkeypatch.setenv("PAGER", "less -R")
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        await open_selected_run(pilot)
        await pilot.press("e")
        assert ran == [["docker", "exec", "-it", "c0ffee", "sh"]] and suspended == [True]
        await pilot.press("o")
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.press("down", "enter")  # run_agent.log, then agent_output.txt
        await pilot.pause()
        # the pager gets a private redacted copy, removed afterwards, never the file itself
        assert ran[-1][:2] == ["less", "-R"] and ran[-1][2] != str(real)
        assert ran[-1][2].endswith("/agent_output.txt") and not os.path.exists(ran[-1][2])
        assert shown == ["line 1\nexport GITHUB_TOKEN=<redacted>\nline 3\necho <redacted> ok\n"]
        assert len(suspended) == 2 and isinstance(app.screen, LiveRunScreen)


# ---------------------------------------------------------------------------- sizes


def _visible_ok(widget, width: int) -> None:
    region = widget.region
    assert region.width > 0 and region.height > 0
    assert region.right <= width


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_layouts_fit(db, size):
    path, writers = db
    app = LiveApp(path)
    w, h = size
    rk = writers["gw"].rk
    snap = snapshot(
        writers, gw=dict(alarms=[alarm(rk), alarm(rk, "no_new_best", t=NOW - 30, message="no new best for 3h")])
    )
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        await post_runs(pilot, snap, ["watching /runs"])
        screen = app.screen
        table = screen.query_one(RunsTable)
        assert table.row_count == 3
        # every column fits in the table without scrolling sideways
        assert table.virtual_size.width <= table.scrollable_content_region.width
        title = screen.query_one("#runs-title")
        _visible_ok(title, w)
        assert "3 runs" in title.render().plain
        assert screen.query_one("#alarm-banner").region.height >= 1
        assert table.region.height >= 5
        await open_selected_run(pilot)
        await pilot.pause()
        run = app.screen
        header = run.query_one(RunHeader)
        _visible_ok(header, w)
        lines = header.text(header.content_region.width).plain.split("\n")
        assert header.content_region.height == len(lines)  # the header is not cut
        assert all(len(x) <= header.content_region.width for x in lines)
        status = run.query_one("#live-status")
        _visible_ok(status, w)
        assert "5:12" in status.render().plain
        assert run.query_one("#live-alarms").region.height >= 1
        lst = run.query_one(EventList)
        assert lst.scrollable_content_region.height >= 4
        top = int(lst.scroll_y)
        assert top <= run.cursor.index < top + lst.scrollable_content_region.height
        if w >= 120:
            assert run.query_one(SubmissionsTable).region.width > 0
            assert run.query_one(ScoreChart).region.width > 60
        else:
            assert run.query_one(SubmissionsTable).region.width == 0  # hidden: u swaps it with the chart
            await pilot.press("u")
            assert run.query_one(SubmissionsTable).region.width > 0
            assert run.query_one(ScoreChart).region.width == 0
            await pilot.press("u")
            assert run.query_one(ScoreChart).region.width > 0


@pytest.mark.asyncio
async def test_dispatch_reaches_every_live_screen(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await runs_home(pilot, writers)
        await open_selected_run(pilot)
        rk = writers["gw"].rk
        n = dispatch_runs_updated(app, snapshot(writers, gw=dict(status="gone", container=None)), ["x"])
        assert n == 2
        await pilot.pause()
        assert app.screen.live.status == "gone"
        assert "● gone" in app.screen.query_one("#live-status").render().plain
        runs_screen = next(s for s in app.screen_stack if isinstance(s, RunsScreen))
        assert runs_screen.by_key[rk].status == "gone"


@pytest.mark.asyncio
async def test_live_run_waits_for_a_run_not_recorded_yet(db):
    path, writers = db
    app = LiveApp(path)
    rk = "local/run-new/new-task"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        await post_runs(pilot, snapshot(writers) + [live(rk, last_event_at=None)])
        assert app.screen.query_one(RunsTable).select_run(rk)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.waiting_note is not None)
        run = app.screen
        assert run.cursor is None and "waiting" in str(run.query_one(EventList).border_subtitle)
        w = LiveRunWriter(app.conn.cursor(), "run-new", "new-task")
        w.add(10)
        await post_runs(pilot, snapshot(writers) + [live(w)])
        await wait_for(pilot, lambda: run.cursor is not None and run.cursor.n == 10)
        await pilot.pause()
        assert run.pinned and run.cursor.index == 9 and run.waiting_note is None


@pytest.mark.asyncio
async def test_palette_offers_the_live_commands(db):
    from textual.command import CommandPalette

    path, writers = db
    fake = FakeActions()
    app = LiveApp(path, actions=fake)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        await open_selected_run(pilot)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"stop the work")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: fake.calls == [("stop", writers["gw"].rk)])


def test_supervisor_actions_adapter(tmp_path):
    (tmp_path / "run_agent.log").write_text("x")

    class FakeSupervisor:
        def __init__(self) -> None:
            self.last_runs = [live("local/r1/t1"), live("local/r2/t2", status="finished", container=None)]
            self.calls: list[tuple[str, str]] = []

        def stop_container(self, c: str) -> str:
            self.calls.append(("stop", c))
            return f"stopped {c}"

        def kill_container(self, c: str) -> str:
            self.calls.append(("kill", c))
            return f"could not kill {c}: gone"

        def shell_command(self, c: str) -> list[str]:
            return ["docker", "exec", "-it", c, "bash"]

        def run_file_path(self, run_key: str, name: str):
            return tmp_path / name

    sup = FakeSupervisor()
    acts = SupervisorActions(sup)
    cid = sup.last_runs[0].container.id
    assert acts.stop("local/r1/t1") == f"stopped {cid}"
    with pytest.raises(RuntimeError, match="could not kill"):
        acts.kill("local/r1/t1")
    with pytest.raises(RuntimeError, match="no work container"):
        acts.stop("local/r2/t2")
    assert sup.calls == [("stop", cid), ("kill", cid)]
    assert acts.shell_argv("local/r1/t1") == ["docker", "exec", "-it", cid, "bash"]
    assert acts.shell_argv("local/r2/t2") is None
    assert acts.file_path("local/r1/t1", "run_agent.log") == tmp_path / "run_agent.log"
    assert acts.file_path("local/r1/t1", "final_result.json") is None


@pytest.mark.asyncio
async def test_cleared_alarms_are_not_counted(db):
    """An alarm whose condition no longer holds stays in the list but is not counted or flagged."""
    path, writers = db
    app = LiveApp(path)
    rk = writers["gw"].rk
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        await post_runs(pilot, snapshot(writers, gw=dict(alarms=[alarm(rk)], active_alarms=[])))
        screen = app.screen
        assert not screen.query_one("#alarm-banner").display
        assert not any("⚠" in c for row in table_rows(screen) for c in row)
        await post_runs(pilot, snapshot(writers, gw=dict(alarms=[alarm(rk)])))
        await wait_for(pilot, lambda: screen.query_one("#alarm-banner").display)


@pytest.mark.asyncio
async def test_a_snapshot_arriving_before_the_live_run_screen_is_composed_is_kept_not_a_crash(db):
    path, writers = db
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        snap = snapshot(writers)
        screen = LiveRunScreen(w.rk, live=None, now=lambda: NOW)
        app.push_screen(screen)
        dispatch_runs_updated(app, snap)  # same tick: the screen is in the stack but not composed yet
        assert screen.live is not None and screen.live.run_key == w.rk
        await wait_for(pilot, lambda: screen.is_mounted and screen.cursor is not None)
        assert "● running" in screen.query_one("#live-status").render().plain


@pytest.mark.asyncio
async def test_help_scrolls_when_the_terminal_is_short(db):
    """At 80x24 the runs keys do not fit: the help overlay scrolls with the keys (it used to be cut)."""
    from textual.containers import VerticalScroll

    from edgetui.views.screens.replay import HelpScreen

    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        box = app.screen.query_one(VerticalScroll)
        assert box.has_focus and box.max_scroll_y > 0 and box.scroll_y == 0
        await pilot.press("end")
        await pilot.pause(0.3)
        assert box.scroll_y == box.max_scroll_y
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))


@pytest.mark.asyncio
async def test_q_says_quit_when_the_runs_screen_is_home_and_quits(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        assert screen.check_action("quit_or_back", ("quit",)) is True
        assert screen.check_action("quit_or_back", ("back",)) is False  # the footer shows "q quit"
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0  # app.exit() was called


@pytest.mark.asyncio
async def test_a_runs_screen_opened_again_keeps_sort_filter_and_selection(db):
    """q back to the recorded runs, then F2: the runs view comes back as it was left."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        await pilot.press("s", "s", "S")
        first = app.screen
        first.query_one(RunsTable).select_run(writers["sat"].rk)
        sort, rev = first.sort_index, first.reverse
        assert (sort, rev) != (0, False)
        app.pop_screen()
        await pilot.pause()
        again = RunsScreen(now=lambda: NOW)
        app.push_screen(again)
        await wait_for(pilot, lambda: app.screen is again)
        await post_runs(pilot, snapshot(writers))
        assert (again.sort_index, again.reverse) == (sort, rev)
        assert again.selected_run_key == writers["sat"].rk


@pytest.mark.asyncio
async def test_sort_cycles_only_through_columns_shown(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        shown = set(screen.query_one(RunsTable).columns)
        assert "tokens" not in shown  # the narrow layout hides it
        seen = []
        for _ in range(12):
            await pilot.press("s")
            seen.append(screen.sort_key)
        assert set(seen) <= shown and "status" in seen and len(set(seen)) >= 5


@pytest.mark.asyncio
async def test_snapshot_reads_again_only_when_the_run_changed(db):
    """New lines come with ``events_recorded``; a snapshot that says nothing new about the run does not
    make the live run screen query the database, one with a new submission, more events or an alarm does."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        await post_runs(pilot, snapshot(writers))  # the first snapshot the screen sees sets what it compares
        await wait_for(pilot, lambda: not run._busy)

        def reads() -> int:
            return sum(run.reloads.values())

        n0 = reads()
        for _ in range(3):  # the same figures again (as at every refresh of a quiet run)
            await post_runs(pilot, snapshot(writers))
        await pilot.pause(0.2)
        assert reads() == n0
        w = writers["gw"]
        w.attach(app.conn.cursor())
        w.add(3)  # more events than the screen holds
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: run.cursor.n == w.i)
        n1 = reads()
        assert n1 > n0
        await post_runs(pilot, snapshot(writers, gw={"alarms": [alarm(w.rk)]}))  # an alarm: read again
        await wait_for(pilot, lambda: reads() > n1)
        n2 = reads()
        run.events_recorded({"local/other/run"})  # another run's lines: nothing to read here
        await pilot.pause(0.2)
        assert reads() == n2
        run.events_recorded({w.rk})
        await wait_for(pilot, lambda: reads() > n2)


@pytest.mark.asyncio
async def test_header_tokens_follow_new_lines_within_the_header_refresh(db, monkeypatch):
    """Reads of tailed lines keep the header for HEADER_REFRESH_S at most: an idle read (nothing new)
    must not count as the header's refresh (seen in a trial: tokens frozen while dollars moved)."""
    import edgetui.views.screens.live_run as lr

    monkeypatch.setattr(lr, "HEADER_REFRESH_S", 0.3)
    path, writers = db
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        w.attach(app.conn.cursor())
        for _ in range(3):
            await pilot.pause(0.4)
            run.refresh_live()  # nothing new: an idle read
            await wait_for(pilot, lambda: not run._busy)
            w.add(4)  # an agent_message with usage among every 4 events
            run.events_recorded({w.rk})
            await wait_for(pilot, lambda: run.cursor.n == w.i)
            await wait_for(pilot, lambda: not run._busy)
        ref = store.run_header(app.conn, w.rk)
        await wait_for(pilot, lambda: (run.header or {}).get("tokens") == ref["tokens"], timeout=3)
        assert run.header["n_events"] == w.i


@pytest.mark.asyncio
async def test_narrow_runs_table_adds_the_wider_columns_that_fit(db):
    """Where the narrow tier leaves room (a trial at 80 columns saw 16 blank columns and no tokens),
    the wider tiers' columns that fit are shown too, in display order; none that would fit is left out."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(90, 24)) as pilot:
        await runs_home(pilot, {"gw": writers["gw"]})
        await pilot.pause(0.2)
        t = pilot.app.screen.query_one(RunsTable)
        assert t._tier == "n"  # the medium tier (with agent/model) does not fit at 90
        cols = list(t.columns)
        extra = [k for k in cols if "n" not in next(c for c in COLUMNS if c.key == k).tiers]
        assert extra, cols  # at least one wider column was added (cpu here)
        assert cols == [c.key for c in COLUMNS if c.key in cols]  # display order kept
        pad = 2 * t.cell_padding
        left = (t.size.width - 1) - sum(c.width + pad for c in t.columns.values())
        assert left >= 0
        header = t.render_line(0).text
        for k in extra:
            assert t.columns[k].label.plain.split()[0] in header
        # nothing that would fit was left out: every missing extra column is wider than what is left
        for k in RunsTable.EXTRA_COLUMNS:
            if k not in cols:
                col = next(c for c in COLUMNS if c.key == k)
                assert len(col.narrow_label or col.label) + pad > left, (k, left)
        await pilot.resize_terminal(60, 24)
        await post_runs(pilot, snapshot({"gw": writers["gw"]}))
        await pilot.pause(0.2)
        assert not [k for k in t.columns if k in RunsTable.EXTRA_COLUMNS]


@pytest.mark.asyncio
async def test_live_status_after_its_widgets_are_gone_is_dropped(db):
    """A snapshot or the 1 s tick reaching the live run screen while the app shuts down (its children
    already removed: seen once in CI) is dropped, not a NoMatches error."""
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        await run.query_one("#live-status").remove()
        run._show_live()  # the tick
        run.update_runs(snapshot(writers))  # a snapshot
        await pilot.pause()
        assert isinstance(app.screen, LiveRunScreen)


@pytest.mark.asyncio
async def test_footer_leaves_out_the_palette_key_when_narrow_also_after_a_resize_while_covered(db):
    """At 80 columns the footer's keys ran under its "^p palette": narrow screens leave it out (ctrl+p
    still opens the palette); a runs screen resized while a run covered it fits on its return."""
    from textual.widgets import Footer

    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(130, 30)) as pilot:
        await runs_home(pilot, writers)
        runs = app.screen
        assert runs.query_one(Footer).show_command_palette
        run = await open_selected_run(pilot)
        assert run.query_one(Footer).show_command_palette
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not run.query_one(Footer).show_command_palette
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is runs)
        assert not runs.query_one(Footer).show_command_palette
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


@pytest.mark.asyncio
async def test_short_terminal_collapses_the_empty_chart_until_the_first_graded_submission(db):
    """At 80x24 an empty chart took 9 of the 24 rows from the events: with nothing graded yet the
    top area collapses (the status line says c shows the chart), c brings it back and keeps it,
    and in a collapsed view the first graded submission brings it back by itself."""
    from edgetui.views.widgets import ScoreChart

    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        w = LiveRunWriter(app.conn.cursor(), "run-new", "new-task")
        w.add(10)  # no graded round yet (one comes every 20th event)
        await post_runs(pilot, snapshot(writers) + [live(w)])
        assert app.screen.query_one(RunsTable).select_run(w.rk)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None)
        await pilot.pause()
        run = app.screen
        lst = run.query_one(EventList)
        assert run.has_class("-top-collapsed") and run.query_one("#top").region.height == 0
        assert lst.scrollable_content_region.height >= 14
        assert "c: chart" in run.query_one("#live-status").render().plain
        await pilot.press("c")
        await pilot.pause()
        assert not run.has_class("-top-collapsed") and run.query_one(ScoreChart).region.height > 0
        await pilot.press("c")  # the user's choice from now on: hidden, with no hint
        await pilot.pause()
        assert run.query_one(ScoreChart).region.height == 0 and not run.has_class("-top-collapsed")
    app = LiveApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        w2 = LiveRunWriter(app.conn.cursor(), "run-new2", "new-task")
        w2.add(10)
        await post_runs(pilot, snapshot(writers) + [live(w2)])
        assert app.screen.query_one(RunsTable).select_run(w2.rk)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None)
        run = app.screen
        await wait_for(pilot, lambda: run.has_class("-top-collapsed"))
        w2.add(15)  # the 20th event is a graded round: the snapshot counts it
        await post_runs(pilot, snapshot(writers) + [live(w2)])
        await wait_for(pilot, lambda: bool(run.subs))
        await pilot.pause()
        assert not run.has_class("-top-collapsed") and run.query_one(ScoreChart).region.height > 0


def test_the_live_line_says_when_the_runs_host_is_not_up():
    """A remote run whose host is down says so on the live run screen's line (its quiet is the
    connection's), with the host's mark; up, or a local run, adds nothing."""
    from edgetui.views.screens.live_parts import live_status_text

    r = LiveRun(
        run_key="gpu16/r/t",
        host="gpu16",
        run_id="r",
        task_id="t",
        status="running",
        host_state="down",
        last_event_at=NOW - 90,
    )
    assert "✗ host gpu16 down" in live_status_text(r, NOW, 160).plain
    r.host_state = "degraded"
    assert "◐ host gpu16 degraded" in live_status_text(r, NOW, 160).plain
    r.host_state = "up"
    assert "host gpu16" not in live_status_text(r, NOW, 160).plain
    assert (
        "host"
        not in live_status_text(
            LiveRun(run_key="local/r/t", host="local", run_id="r", task_id="t", status="running"), NOW, 160
        ).plain
    )
