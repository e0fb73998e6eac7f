"""What the replay screen's composed parts may ask of the screen that holds them.

The replay and live run screens are built from parts, each an object with its own declared state:
the search (:class:`edgetui.views.screens.replay_search.ReplaySearch`), the moments
(:class:`edgetui.views.screens.replay_moments.ReplayMoments`), and on the live run screen the live
moments and the forecast's prior (:mod:`edgetui.views.screens.live_common`). A part runs its reads in
the screen's thread workers and posts its messages to the screen, whose handlers hand them back to
the part; what it needs of the screen is :class:`ReplayHost`, and nothing else."""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, runtime_checkable

import duckdb
from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.worker import Worker

from edgetui.record.forget_and_tag import apply_request
from edgetui.replay.cursor import ReplayCursor
from edgetui.store.holder_connection import HolderConnection

__all__ = ["DatabaseApp", "ReplayHost", "app_connection", "apply_write"]


@runtime_checkable
class DatabaseApp(Protocol):
    """An app holding the one database connection the screens read through
    (:attr:`edgetui.views.app.EdgeTUIApp.conn`; the screens cannot import the app, which imports them)."""

    conn: Optional[duckdb.DuckDBPyConnection]


def app_connection(app: object) -> duckdb.DuckDBPyConnection:
    """The app's database connection; raises ``RuntimeError`` when none is open (the app closing, or
    recording the samples): a worker's read fails with that and says so."""
    conn = app.conn if isinstance(app, DatabaseApp) else None
    if conn is None:
        raise RuntimeError("no database open")
    return conn


def apply_write(app: object, req: dict) -> dict:
    """A typed write (:data:`edgetui.record.forget_and_tag.OPS`: annotate, tag…) on the app's
    database: carried out on its connection, or sent to the holder when the app reads through it (a
    browser tab of ``edgetui serve``). The reply: ``{"ok": …}`` or ``{"error": one line}``."""
    conn: object = app_connection(app)
    if isinstance(conn, HolderConnection):
        return conn.request(req)
    return apply_request(app_connection(app), req)


class ReplayHost(Protocol):
    """The replay screen as its parts see it: the run, its cursor, the moves and redraws they may
    ask for, and the Textual calls they make (workers, messages, toasts)."""

    run_key: str
    header: Optional[dict]
    subs: list[dict]

    @property
    def cursor(self) -> Optional[ReplayCursor]: ...

    @property
    def app(self) -> App[Any]: ...

    def later(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue ``fn(*args)`` until the whole run's cursor is ready (``True``), else ``False``."""
        ...

    def moved(self, changed: bool = True) -> None:
        """The cursor moved (or not): redraw the list, chart cursor, status and detail."""
        ...

    def do(self, move: Callable[[], bool], what: str = "") -> None:
        """Make a cursor move; ``what`` is said when it moved nowhere."""
        ...

    def draw_chart(self) -> None: ...

    def show_query(self, query: str) -> None:
        """Highlight ``query``'s matches in the event list."""
        ...

    def annotations_changed(self) -> None:
        """The run's annotations were read again: the detail pane shows the new ones."""
        ...

    def notify(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: Optional[float] = None
    ) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def run_worker(
        self,
        work: Callable[[], Any],
        name: Optional[str] = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[Any]: ...
