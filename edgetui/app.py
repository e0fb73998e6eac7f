"""The edgetui Textual app: run picker and replay screen over one DuckDB file.

``EdgeTUIApp(db_path)`` opens the picker; ``EdgeTUIApp(db_path, run_key)``
opens the replay of that run directly (``q`` then quits). Screens read the
database only through :mod:`edgetui.store`, in thread workers, on cursors of
the one connection the app holds (:attr:`EdgeTUIApp.conn`).

Opening: read-write by default (``read_only=True`` for a viewer); when another
process holds the file, a read-only snapshot copy is opened instead and the
app says so. When the database holds no run at all the ``on_empty`` hook runs
once (default: :func:`default_on_empty`, which records the bundled sample runs
through ``edgetui.ingest.ingest_samples`` if that exists); the connection is
closed around the hook so it can open the file itself.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import duckdb
from textual import work
from textual.app import App, SystemCommand
from textual.screen import Screen

from .db import DatabaseBusy, HolderServer, open_db, snapshot_copy
from .screens.picker import PickerScreen
from .screens.replay import ReplayScreen, replay_commands

__all__ = ["EdgeTUIApp", "run_app", "default_on_empty"]


def default_on_empty(db_path: Path) -> Optional[str]:
    """Record the bundled sample runs into ``db_path``; returns a note for the user or ``None``."""
    try:
        from .ingest import ingest_samples  # written by the ingest work; optional here
    except ImportError:
        return "No runs recorded yet. Record one with `edgetui ingest <run dir>`, then press F5."
    ingest_samples(Path(db_path))
    return None


class EdgeTUIApp(App):
    """edgetui's terminal app (see the module docstring)."""

    CSS_PATH = "app.tcss"
    TITLE = "edgetui"

    def __init__(
        self,
        db_path: Path | str,
        run_key: Optional[str] = None,
        *,
        read_only: bool = False,
        clock: Optional[Callable[[], float]] = None,
        on_empty: Optional[Callable[[Path], Optional[str]]] = None,
    ) -> None:
        super().__init__()
        self.db_path = Path(db_path).expanduser()
        self.run_key = run_key
        self.read_only = read_only
        self.clock = clock or time.monotonic
        self.on_empty = on_empty if on_empty is not None else default_on_empty
        self.conn: Optional[duckdb.DuckDBPyConnection] = None
        self.snapshot: bool = False
        self.empty_note: Optional[str] = None
        self._empty_done = False

    # ------------------------------------------------------------------ database

    def _open(self) -> duckdb.DuckDBPyConnection:
        try:
            conn = open_db(self.db_path, read_only=self.read_only)
            if not self.read_only:
                self._serve(conn)
            return conn
        except DatabaseBusy as e:
            self.snapshot = True
            self.notify(f"{e}\nShowing a read-only snapshot.", title="database busy", severity="warning",
                        timeout=10)
            return snapshot_copy(self.db_path)

    def on_mount(self) -> None:
        try:
            self.conn = self._open()
        except Exception as e:
            self.exit(return_code=1, message=f"edgetui: cannot open {self.db_path}: {e}")
            return
        if self.run_key:
            self.push_screen(ReplayScreen(self.run_key, clock=self.clock, direct=True))
        else:
            self.push_screen(PickerScreen())

    def _serve(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Answer `edgetui sql` / `edgetui runs` from other terminals while this app holds the file."""
        self._stop_serving()
        try:
            self.holder = HolderServer(conn, self.db_path)
        except OSError as e:  # no socket: other processes get the PID + --snapshot message instead
            self.holder = None
            self.notify(f"cannot serve other edgetui commands: {e}", severity="warning", timeout=6)

    def _stop_serving(self) -> None:
        if getattr(self, "holder", None) is not None:
            self.holder.close()
            self.holder = None

    def on_unmount(self) -> None:
        self._stop_serving()
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    # ------------------------------------------------------------------ navigation

    def open_run(self, run_key: str) -> None:
        """Open the replay of ``run_key`` over the picker."""
        self.push_screen(ReplayScreen(run_key, clock=self.clock))

    # ------------------------------------------------------------------ empty database

    def handle_empty(self) -> None:
        """Run the ``on_empty`` hook once (in a thread), then reload the picker."""
        if self._empty_done:
            return
        self._empty_done = True
        self._run_on_empty()

    @work(thread=True, exclusive=True, group="on-empty", exit_on_error=False)
    def _run_on_empty(self) -> None:
        note: Optional[str] = None
        try:
            self._stop_serving()
            if self.conn is not None:
                self.conn.close()
            note = self.on_empty(self.db_path)
        except Exception as e:  # the hook's failure is a message, not a crash
            note = f"Could not record the sample runs: {type(e).__name__}: {e}"
        finally:
            try:
                self.conn = self._open()
            except Exception as e:
                note = f"cannot reopen {self.db_path}: {e}"
        self.empty_note = note
        self.call_from_thread(self._after_empty)

    def _after_empty(self) -> None:
        if self.empty_note:
            self.notify(self.empty_note, title="no runs", timeout=10)
        for s in self.screen_stack:
            if isinstance(s, PickerScreen):
                s.reload()

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, ReplayScreen):
            for title, help, cb in replay_commands(screen):
                yield SystemCommand(title, help, cb)
        if not isinstance(screen, PickerScreen) and any(isinstance(s, PickerScreen) for s in self.screen_stack):
            yield SystemCommand("Runs", "back to the run picker", self.pop_screen)


def run_app(db_path: Path | str, run_key: Optional[str] = None, **kwargs: Any) -> None:
    """Run the app in the terminal: the picker, or the replay of ``run_key`` when given."""
    app = EdgeTUIApp(db_path, run_key, **kwargs)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
