"""``edgetui serve [RUN]``: the app in a browser (textual-serve), one app process per tab.

This process holds the database (as ``watch`` does: read-write, with the holder socket,
:mod:`edgetui.store.holder_socket`); every tab is an app process started by textual-serve
(:mod:`edgetui.cli.browser_tab`) that reads through that socket and never opens the file, and
sends its annotations as typed requests. When another edgetui process holds the file already
and serves its socket, the tabs read through that one instead.

:class:`TabServer` is textual-serve's ``Server`` with: the checks of
:mod:`edgetui.cli.web_access` (token, Host, websocket Origin) on every request; a cap on the tabs
open at once (``--max-tabs``); a tab's app process ended when its websocket closes (asked to quit,
then terminated, then killed); any port (0: one the OS picks), and the URL printed with its token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import Any, Optional

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from edgetui.cli.web_access import LOOPBACK, access_middleware, allowed_origins, cookie_name

__all__ = ["TabServer", "tab_command", "DEFAULT_PORT", "DEFAULT_MAX_TABS"]

DEFAULT_PORT = 8000
#: the addresses that mean every address of this machine
WILDCARD = ("0.0.0.0", "::", "")
DEFAULT_MAX_TABS = 4
#: seconds a tab's app process has to quit once asked, then to end once terminated
QUIT_WAIT_S = 5.0

log = logging.getLogger("edgetui.serve")
#: textual-serve's page links a stylesheet of Google Fonts: left out (see :meth:`TabServer.handle_index`)
OUTSIDE_FONT = re.compile(r"<link\b[^>]*\bhref=\"https://fonts\.googleapis\.com/[^\"]*\"[^>]*>", re.S)


def tab_command(db: Path, run_key: Optional[str]) -> str:
    """The shell command textual-serve runs for each tab (``exec``: the shell becomes the app, so the
    process ended is the app's)."""
    argv = [sys.executable, "-m", "edgetui.cli.browser_tab", "--db", str(db)]
    if run_key:
        argv += ["--run", run_key]
    return "exec " + shlex.join(argv)


class _Tab:
    """One open tab: its textual-serve ``AppService`` and the app process it started."""

    def __init__(self, service: AppService) -> None:
        self.service = service

    @property
    def pid(self) -> Optional[int]:
        proc = self.service._process  # (textual-serve keeps the process only there)
        return proc.pid if proc is not None else None

    async def end(self) -> None:
        """Ask the app to quit; terminate, then kill it if it is still there after :data:`QUIT_WAIT_S`."""
        try:
            await asyncio.wait_for(self.service.stop(), QUIT_WAIT_S)
        except (asyncio.TimeoutError, ConnectionError, RuntimeError):  # gone or stuck: ended below
            log.debug("tab %s did not quit when asked", self.pid)
        proc = self.service._process  # (textual-serve keeps the process only there)
        if proc is None or proc.returncode is not None:
            return
        for signal_it in (proc.terminate, proc.kill):
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile: nothing to signal
                signal_it()
            try:
                await asyncio.wait_for(proc.wait(), QUIT_WAIT_S)
                return
            except asyncio.TimeoutError:  # not ended by this signal: the next one
                continue


class TabServer(Server):
    """textual-serve's server with edgetui's access checks and tab cap (module docstring)."""

    def __init__(
        self,
        command: str,
        *,
        host: str = LOOPBACK[0],
        port: int = DEFAULT_PORT,
        token: Optional[str] = None,
        max_tabs: int = DEFAULT_MAX_TABS,
        public_url: Optional[str] = None,
        title: str = "edgetui",
        say=print,
    ) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.token = token
        self.max_tabs = max_tabs
        self.given_public_url = public_url
        self.say = say
        #: served on every address with no public URL: the page's URLs follow the name it is reached by
        self.any_host = host in WILDCARD and public_url is None
        self.tabs: set[_Tab] = set()
        #: set once the server listens (the port then is the one bound)
        self.started = asyncio.Event()
        self._runner: Optional[web.AppRunner] = None

    # -- the web application
    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        origins = allowed_origins(self.host, self.port, self.given_public_url)
        secure = bool(self.given_public_url and self.given_public_url.startswith("https:"))
        app.middlewares.append(
            access_middleware(self.token, origins, secure=secure, cookie=cookie_name(self.port), any_host=self.any_host)
        )
        return app

    async def on_startup(self, app: web.Application) -> None:
        """(textual-serve prints its logo here; the URL is said by :meth:`run`.)"""

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(t.end() for t in list(self.tabs)), return_exceptions=True)

    async def handle_index(self, request: web.Request) -> Any:
        """textual-serve's page, without its one outside reference (a Google Fonts stylesheet: the
        page asks no other host for anything; the font is the browser's monospace)."""
        if len(self.tabs) >= self.max_tabs:
            return web.Response(status=503, text=self._full_text(), content_type="text/plain")
        response = await super().handle_index(request)
        if isinstance(response, web.Response) and response.text:
            text = OUTSIDE_FONT.sub("", response.text)
            if self.any_host:  # the page's own URLs under the name it was reached by (checked well-formed)
                text = text.replace(self.public_url, f"http://{request.host}").replace(
                    "ws:" + self.public_url.split(":", 1)[1], f"ws://{request.host}"
                )
            response.text = text
        return response

    def _full_text(self) -> str:
        return (
            f"edgetui serve: {len(self.tabs)} tabs are open, the most this server allows "
            f"(--max-tabs {self.max_tabs}); close one and load this page again\n"
        )

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's handler, with the cap on tabs and the app process ended with its tab."""
        if len(self.tabs) >= self.max_tabs:
            raise web.HTTPServiceUnavailable(text=self._full_text())
        websocket = web.WebSocketResponse(heartbeat=15)

        async def close() -> None:
            await websocket.close()

        width = _int(request.query.get("width"), 80)
        height = _int(request.query.get("height"), 24)
        service = AppService(  # (nothing started yet: the tab's place is taken before any await)
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        tab = _Tab(service)
        self.tabs.add(tab)
        try:
            await websocket.prepare(request)
            await service.start(width, height)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:  # the server ends: the tab's process ends below
            await websocket.close()
        except Exception:  # one tab's failure (logged) ends that tab, never the server
            log.exception("a tab failed")
        finally:
            self.tabs.discard(tab)
            await tab.end()
        return websocket

    # -- running
    async def start(self) -> str:
        """Listen (on an OS-chosen port when ``port`` is 0); returns the URL to open (with its token)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]  # (the port the OS chose for 0)
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.given_public_url is None:
            self.public_url = f"http://{host}:{self.port}"
        self._runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        self.started.set()
        base = f"http://{socket.gethostname()}:{self.port}" if self.any_host else self.public_url
        return base + (f"/?token={self.token}" if self.token else "")

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _int(v: Optional[str], default: int) -> int:
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


# ---------------------------------------------------------------------------- the command


class HeldDatabase:
    """The database as ``edgetui serve`` holds it: opened read-write with its holder socket (as
    ``watch`` does), or, when another edgetui process holds it and serves its socket, that one."""

    def __init__(self, db: Path) -> None:
        from edgetui.record.forget_and_tag import holder_server
        from edgetui.store.database import DatabaseBusy, busy_because, open_db
        from edgetui.store.holder_socket import ask_holder

        self.db = db
        self.conn: Any = None
        self.holder: Any = None
        self.other_holder = ""
        try:
            self.conn = open_db(db)
        except DatabaseBusy as busy:
            try:
                ask_holder(db, "SELECT 1")
            except ConnectionError as why:
                raise busy_because(busy, why) from None
            self.other_holder = f"{busy.detail or 'edgetui'} (PID {busy.pid})" if busy.pid else "another process"
            return
        try:
            self.holder = holder_server(self.conn, db)
        except BaseException:
            self.conn.close()
            raise

    def rows(self, sql: str, params: Optional[list] = None) -> list:
        from edgetui.store.holder_socket import ask_holder

        if self.conn is not None:
            return self.conn.execute(sql, params or []).fetchall()
        return ask_holder(self.db, sql, params or []).rows

    def close(self) -> None:
        if self.holder is not None:
            self.holder.close()
            self.holder = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def serve(db: Path, args: Any, say=print) -> int:
    """``edgetui serve``: hold the database, start the server, say its URL, serve until ctrl+c / SIGTERM."""
    from edgetui.cli.run_arguments import RowsConn, resolve_run
    from edgetui.cli.web_access import new_token, read_token_file

    if args.max_tabs < 1:
        raise ValueError("--max-tabs: at least 1")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: not a port (0 to 65535)")
    token: Optional[str] = None
    if args.token_file is not None:
        token = read_token_file(args.token_file)
    elif args.bind not in LOOPBACK:
        token = new_token()
    held = HeldDatabase(Path(db).expanduser())
    try:
        if held.conn is not None and not args.run and not held.rows("SELECT count(*) FROM runs")[0][0]:
            held.close()  # an empty database: the bundled sample runs, as the app records them
            from edgetui.record.ingest import ingest_samples

            say("edgetui serve: an empty database: recording the bundled sample runs first (as the app does)")
            ingest_samples(Path(db).expanduser())
            held = HeldDatabase(Path(db).expanduser())
        key = resolve_run(RowsConn(held.rows), args.run) if args.run else None
        server = TabServer(
            tab_command(Path(db).expanduser(), key),
            host=args.bind,
            port=args.port,
            token=token,
            max_tabs=args.max_tabs,
            public_url=args.public_url,
        )
        asyncio.run(_serve_until_stopped(server, held, key, say))
    finally:
        held.close()
    return 0


async def _serve_until_stopped(server: TabServer, held: HeldDatabase, key: Optional[str], say) -> None:
    import signal

    from edgetui.control_chars import visible

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        url = await server.start()
    except OSError as e:
        raise OSError(f"cannot listen on {server.host} port {server.port}: {e.strerror or e}") from None
    say(f"edgetui serve: open {url}")
    where = f"read through {held.other_holder}, which holds it" if held.other_holder else "held by this process"
    say(f"  database {visible(str(held.db))} ({where}); every tab reads through it")
    say(
        f"  each tab opens {'the replay of ' + visible(key) if key else 'the run picker'}; at most {server.max_tabs} tabs"
    )
    if server.token is None:
        say("  no token: only this machine can connect (--bind ADDR serves other addresses, with a token)")
    else:
        say("  every request needs the token (it is in the URL above); no TLS: use a proxy beyond this machine")
    say("  ctrl+c stops the server and every tab")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await server.stop()
