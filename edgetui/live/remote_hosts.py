"""Remote hosts joined to one live supervisor: each host's feed (its runs roots' images), its engine
(:class:`~edgetui.hosts.remote_engine.RemoteEngine`) and its judge poller (on the judge URL forwarded
over its connection, :mod:`edgetui.hosts.forward`), plus the rows of the hosts view (core, no Textual).

The supervisor keys the runs of a host's roots by the host's name; :class:`HostLinks` tells it
which engine and which judge belong to those runs (``Supervisor.add_engine`` / ``add_judge``), so
a remote run's work and judge containers are joined from its own host's engine only, and a host
that is down makes only its own runs' containers stale.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple, Optional

from edgetui.error_log import note_swallowed
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.remote_engine import RemoteEngine
from edgetui.hosts.ssh import DEGRADED, UP

from edgetui.live.judge import JudgePoller
from edgetui.hosts.forward import forward_url
import os

#: where a log dir's judge admin secret is, relative to a runs root (SForge 1.1.0)
_SECRET_NAME = ".judge-admin-secret"


class HostRow(NamedTuple):
    """One line of the hosts view. ``kind``: the :class:`~edgetui.hosts.ssh.HostState` kind
    (``local`` for this machine); ``rtt_s``: last round trip (seconds, up / degraded only);
    ``since`` / ``next_retry``: epoch UTC seconds (None when not known / not retrying); ``message``:
    one line (the target, or why it is down); ``runs``: runs found under its roots; ``engine``: the
    engine's state in words (``up (socket)``, ``up (cli)``, ``none``, or why it is unavailable)."""

    name: str
    kind: str
    rtt_s: Optional[float]
    since: Optional[float]
    next_retry: Optional[float]
    message: str
    runs: int
    engine: str


def cluster_rows(cluster: Any, runs: list) -> list[HostRow]:
    """One row per ``context/namespace`` of the pods' engine (:class:`edgetui.hosts.pod_watch.PodEngine`):
    up, connecting, down (an unreachable API server, retried as a host is) or forbidden (403: the
    user may not list pods there); ``runs``: the runs whose work pod is there."""
    counts: dict[str, int] = {}
    for r in runs:
        if getattr(r, "cluster", None):
            counts[r.cluster] = counts.get(r.cluster, 0) + 1
    return [
        HostRow(key, state, None, since, retry, message, counts.get(key, 0), f"k8s: {n} pods")
        for key, state, since, retry, message, n in cluster.host_rows()
    ]


class HostLinks:
    """The remote hosts of one supervisor (see the module). ``feeds``: one
    :class:`~edgetui.hosts.feed.RemoteFeed` per host; ``engine_options``: keyword arguments of
    :class:`~edgetui.hosts.remote_engine.RemoteEngine` (``interval_s``, ``stats_interval_s``...);
    ``docker``: False leaves every remote engine out (``--no-docker``)."""

    def __init__(
        self, feeds: list[RemoteFeed], *, docker: bool = True, engine_options: Optional[dict[str, Any]] = None
    ):
        self.feeds = list(feeds)
        self.engines: dict[str, RemoteEngine] = {}
        for f in self.feeds:
            mode = getattr(f.cfg, "engine", "auto")
            if docker and mode != "none":
                self.engines[f.name] = RemoteEngine(f.host, mode=mode, **(engine_options or {}))
        self.judges: dict[str, Any] = {}
        self.sup: Any = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def attach(self, sup: Any) -> "HostLinks":
        """Give ``sup`` (a :class:`~edgetui.live.supervisor.Supervisor` watching the feeds' roots) the
        hosts' state lines and states, engines and judge pollers."""

        self.sup = sup
        feeds = self.feeds
        by_name = {f.name: f for f in feeds}
        sup.host_lines = lambda: [line for f in feeds if (line := f.state_line())]
        sup.host_state_of = lambda name: (
            (by_name[name].host.state.kind, by_name[name].host.state.rtt_s) if name in by_name else None
        )
        for name, eng in self.engines.items():
            sup.add_engine(name, eng)
        for f in feeds:  # a sync that changed the image wakes the refresh (not the image's inotify + debounce)
            prev = f.on_change

            def changed(rep, prev=prev):
                if prev is not None:
                    prev(rep)
                sup.wake()

            f.on_change = changed
            f.on_note = sup.note
            f.share_catchup_marks(sup.tailer.catchup_marks)  # caught-up lines are not timed by arrival
        for f in feeds:
            if f.cfg.judge_url:
                url = forward_url(f.host, f.cfg.judge_url)
                p = JudgePoller(
                    url,
                    None,
                    interval_s=sup.settings.judge_interval_s,
                    timeout_s=sup.settings.judge_timeout_s,
                    clock=sup.clock,
                )
                p.remote_url = f.cfg.judge_url  # what the host calls it, for messages
                self.judges[f.name] = p
                sup.add_judge(f.name, p)
        return self

    def start(self) -> "HostLinks":
        """Start every feed and engine (returns at once)."""
        for f in self.feeds:
            f.start()
        for eng in self.engines.values():
            eng.start()
        for f in self.feeds:
            if f.name in self.judges:
                self.judges[f.name].holding = True  # no request before its admin secret is known
                t = threading.Thread(target=self._read_secret, args=(f,), name=f"edgetui-secret-{f.name}", daemon=True)
                t.start()
                self._threads.append(t)
        return self

    def close(self) -> None:
        self._stop.set()
        for eng in self.engines.values():
            eng.close()
        for f in self.feeds:
            f.close()

    def _read_secret(self, feed: RemoteFeed) -> None:
        """The host's judge admin secret (``SFORGE_ADMIN_SECRET`` here, else
        ``.judge-admin-secret`` beside the host's runs roots, read over SFTP once it is up)."""

        poller = self.judges[feed.name]
        try:
            self._find_secret(feed, poller, os.environ.get("SFORGE_ADMIN_SECRET"))
        finally:
            poller.holding = False  # asked with the secret if one was found, else without (as locally)

    def _find_secret(self, feed: RemoteFeed, poller, env: Optional[str]) -> None:
        secret: Optional[str] = None
        candidates = []
        for r in feed.cfg.roots:
            parts = r.rstrip("/").split("/")
            for k in (len(parts), len(parts) - 1, len(parts) - 2):
                if k >= 1:
                    c = "/".join(parts[:k]) + "/" + _SECRET_NAME
                    if c not in candidates:
                        candidates.append(c)
        while not self._stop.is_set():
            if env:
                secret = env.strip()
                break
            if feed.host.state.kind in (UP, DEGRADED):
                secret = None
                for c in candidates:
                    try:
                        if feed.host.stat(c) is not None:
                            secret = feed.host.read_at(c, 0, 4096).decode("utf-8", "replace").strip() or None
                    except OSError:  # (unreadable there: the next candidate)
                        note_swallowed(f"{c}: the judge secret's file could not be read")
                        continue
                    if secret:
                        break
                break
            self._stop.wait(1.0)
        else:
            return
        if secret:
            self.sup.rec.add_secret(secret)
            poller.admin_secret = secret

    def rows(self, now: Optional[float] = None) -> list[HostRow]:
        """The hosts view's rows: this machine first, then each remote host in the order given."""
        sup = self.sup
        counts: dict[str, int] = {}
        for _key, name in list(sup.run_root_host.items()) if sup is not None else []:
            counts[name] = counts.get(name, 0) + 1
        out = []
        if sup is not None:
            local_runs = sum(1 for k in list(sup.runs) if k not in sup.run_root_host)
            dw = sup.docker
            eng = "none" if dw is None else ("up" if dw.available else (dw.error or "connecting"))
            out.append(HostRow(sup.host, "local", None, None, None, "this machine", local_runs, eng))
        cluster = getattr(sup, "cluster", None)
        if cluster is not None:
            out += cluster_rows(cluster, list(getattr(sup, "last_runs", None) or []))
        for f in self.feeds:
            st = f.host.state
            eng = self.engines.get(f.name)
            out.append(
                HostRow(
                    f.name,
                    st.kind,
                    st.rtt_s if st.kind in (UP, DEGRADED) else None,
                    st.since,
                    st.next_retry,
                    st.message,
                    counts.get(f.name, 0),
                    "none" if eng is None else eng.state_text(),
                )
            )
        return out
