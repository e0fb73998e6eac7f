"""The local Docker engine as a source for the live supervisor (core, no Textual).

Cost model (docs/sforge-run-folders.md §8.3, §11.12): the engine's container events
(``GET /events``, type ``container``) are read in a thread
(:class:`EngineEvents`); a container listing — one ``GET /containers/json``
without the per-container inspect the SDK does by default, names, state and
exit code from it — is made only when an event came (or the stream could not
be read), after an action of ours, and every ``list_interval_s`` as a safety
net. The stream is asked in windows of ``events_window_s`` seconds (``since`` =
the previous window's ``until``: no gap), so a stopped engine is noticed within
one window. The supervisor turns the stream on for the local engine
(``AlarmSettings.docker_events_window_s``); with ``events_window_s = 0`` (the
default here) or a client without ``api.events``, every refresh lists. A work
container is inspected once when first seen (memory limit, start time, the
``SFORGE_TOKEN`` of its environment for judge polling) and once per state
change (``State.OOMKilled``, ``ExitCode``, ``FinishedAt``); judge and game
containers are never inspected. CPU/memory samples of running work
containers come from a background thread (``stats(stream=False,
one_shot=True)``, CPU from the difference of two samples), at most every
``stats_interval_s`` per container. 150 containers stay cheap.

Never raises to its caller: an unreachable engine is reported as a one-line
:attr:`DockerWatch.error` and retried every ``retry_s``.

Container names (docs/sforge-run-folders.md §5.1):

* work ``sforge.run.<task_id>.<run_id>`` (legacy ``sforge.evolve.<task>.<run>``);
* judge ``<benchmark>.judge.<task_id>.<submission_id>``;
* game ``sforge.game.<task_id>.<session_id>``.

Task ids and run ids may contain dots, so a work container is joined to a run
by computing the names the run's containers would have (:func:`work_names`),
not by splitting the name; :func:`parse_name` is only a best guess for
containers of runs not (yet) discovered.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Protocol

from edgetui.error_log import note_swallowed
from edgetui.events import one_line
from edgetui.hosts.container_info import ContainerInfo
from edgetui.times import iso8601_to_epoch

_EXITED_RE = re.compile(r"^Exited \((-?\d+)\)")
_SUBMISSION_ID_RE = re.compile(r"^[0-9a-f]{6,64}$")


def work_names(task_id: str, run_id: str) -> tuple[str, str]:
    """Names of a run's work container: current and legacy."""
    return f"sforge.run.{task_id}.{run_id}", f"sforge.evolve.{task_id}.{run_id}"


def parse_name(name: str) -> dict[str, Optional[str]]:
    """Role and ids guessed from a container name (see the module docstring for the caveat)."""
    out: dict[str, Optional[str]] = {"role": "other", "task_id": None, "run_id": None, "submission_id": None}
    for prefix in ("sforge.run.", "sforge.evolve."):
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            task, _, run = rest.partition(".")
            out.update(role="work", task_id=task or None, run_id=run or None)
            return out
    if name.startswith("sforge.game."):
        rest = name[len("sforge.game.") :]
        task, _, sid = rest.rpartition(".")
        out.update(role="game", task_id=task or None, submission_id=sid or None)
        return out
    if ".judge." in name:
        _, _, rest = name.partition(".judge.")
        task, _, sid = rest.rpartition(".")
        if task and sid:
            out.update(role="judge", task_id=task, submission_id=sid)
        return out
    return out


def parse_docker_time(v: Any) -> Optional[float]:
    """Epoch of a Docker RFC 3339 timestamp (nanoseconds allowed); the zero time → None."""
    if not isinstance(v, str) or v.startswith("0001-"):
        return None
    return iso8601_to_epoch(v)


def _env_value(env: Any, key: str) -> Optional[str]:
    if isinstance(env, list):
        pre = key + "="
        for item in env:
            if isinstance(item, str) and item.startswith(pre):
                return item[len(pre) :]
    return None


def short_error(e: BaseException) -> str:
    """One line for an engine error, without the SDK's long reprs."""
    txt = str(e)
    if "Connection refused" in txt or "ConnectionRefused" in txt:
        return "connection refused"
    if "No such file or directory" in txt or "FileNotFoundError" in txt:
        return "socket not found"
    if "Permission denied" in txt:
        return "permission denied on the Docker socket"
    if "timed out" in txt.lower():
        return "timed out"
    return one_line(f"{type(e).__name__}: {txt}", 160)


class StatsSampler:
    """Background CPU/memory sampling of a set of containers (one thread + a small pool)."""

    def __init__(self, api, interval_s: float, workers: int = 4):
        self.api = api
        self.interval_s = interval_s
        self.one_shot = True
        self._targets: dict[str, str] = {}
        self._prev: dict[str, tuple[float, int]] = {}
        self._latest: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="edgetui-stats")
        self._thread = threading.Thread(target=self._loop, name="edgetui-stats-loop", daemon=True)
        self._thread.start()

    def set_targets(self, targets: dict[str, str]) -> None:
        with self._lock:
            self._targets = dict(targets)
            for cid in list(self._prev):
                if cid not in targets:
                    self._prev.pop(cid, None)

    def take(self) -> dict[str, dict[str, Any]]:
        """Samples taken since the last call, by container id."""
        with self._lock:
            out, self._latest = self._latest, {}
        return out

    def close(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            with self._lock:
                ids = list(self._targets)
            if ids:
                try:
                    list(self._pool.map(self._sample, ids))
                except RuntimeError:  # pool shut down
                    return
            self._stop.wait(max(0.2, self.interval_s - (time.monotonic() - t0)))

    def _sample(self, cid: str) -> None:
        try:
            if self.one_shot:
                try:
                    st = self.api.stats(cid, stream=False, one_shot=True)
                except Exception as e:
                    if type(e).__name__ != "InvalidVersion":
                        raise
                    self.one_shot = False  # engine API < 1.41: the slower two-sample call
                    st = self.api.stats(cid, stream=False)
            else:
                st = self.api.stats(cid, stream=False)
        except Exception:  # noqa: BLE001 - a container that just went away, an engine hiccup
            note_swallowed("a container that just went away, an engine hiccup")
            return
        now = time.time()
        mono = time.monotonic()
        cpu_total = (((st or {}).get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
        mem = (st or {}).get("memory_stats") or {}
        usage = mem.get("usage")
        stats = mem.get("stats") or {}
        if isinstance(usage, int):
            usage -= int(stats.get("inactive_file", stats.get("total_inactive_file", stats.get("cache", 0))) or 0)
            usage = max(0, usage)
        limit = mem.get("limit") if isinstance(mem.get("limit"), int) else None
        cpu = None
        with self._lock:
            prev = self._prev.get(cid)
            if isinstance(cpu_total, int):
                if prev is not None and mono > prev[0]:
                    cpu = max(0.0, (cpu_total - prev[1]) / ((mono - prev[0]) * 1e9) * 100.0)
                self._prev[cid] = (mono, cpu_total)
            if cpu is not None or usage is not None:
                self._latest[cid] = {"t": now, "cpu_percent": cpu, "mem_bytes": usage, "mem_limit_bytes": limit}


#: container event actions that change what a listing shows (exec_*, attach, resize, top... do not)
_STATE_ACTIONS = frozenset(
    {"create", "start", "restart", "stop", "die", "kill", "oom", "pause", "unpause", "destroy", "rename", "update"}
)


#: seconds after a container event when the engine is listed once more (see EngineEvents.last_event_mono)
RECHECK_S = 1.0


def _relevant(ev: Any) -> bool:
    """An event about an SForge container (work, judge, game: :func:`parse_name`) that changes its state."""
    if not isinstance(ev, dict):
        return True
    action = str(ev.get("Action") or ev.get("status") or "").split(":", 1)[0]
    if action and action not in _STATE_ACTIONS:
        return False
    name = ((ev.get("Actor") or {}).get("Attributes") or {}).get("name")
    return not isinstance(name, str) or action == "rename" or parse_name(name)["role"] != "other"


class EngineEvents:
    """A thread reading the engine's container events (``api.events(decode=True)``) in windows of
    ``window_s`` seconds (each asks ``since`` = the previous ``until``, so none is missed between
    windows, and a stopped engine ends the stream within one window). Each event about an SForge
    container's state (:func:`_relevant`: other containers and exec/attach events are ignored) sets a dirty flag
    (:meth:`take_dirty`) and calls ``on_change``; so does the stream failing (:attr:`up` False
    until it is read again: the caller lists at each refresh meanwhile)."""

    def __init__(self, api: Any, on_change: Callable[[], None], window_s: float = 5.0, retry_s: float = 5.0):
        self.api = api
        self.on_change = on_change
        self.window_s = window_s
        self.retry_s = retry_s
        self.up = False
        self.events = 0  # events read (diagnostics)
        self.error: Optional[str] = None
        self._dirty = True  # a listing is due once the stream is read (events before it are unknown)
        #: monotonic time of the last relevant event: a listing right after an event may still show
        #: the state before it (the engine logs the event and updates what it lists separately), so
        #: the caller lists once more when RECHECK_S have passed since it
        self.last_event_mono = 0.0
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._loop, name="edgetui-docker-events", daemon=True)
        self._thread.start()

    def take_dirty(self) -> bool:
        """Did an event come (or the stream start or fail) since the last call? Clears the flag."""
        d, self._dirty = self._dirty, False
        return d

    def close(self) -> None:
        self._stop.set()
        st = self._stream
        if st is not None:
            try:
                st.close()  # docker-py's CancellableStream: ends the blocked read
            except Exception:  # noqa: BLE001 - ending a stream whose engine may be gone
                note_swallowed("ending a stream whose engine may be gone")

    def _loop(self) -> None:
        since: Optional[float] = None
        while not self._stop.is_set():
            now = time.time()
            start = now if since is None else since
            until = max(now, start) + self.window_s
            try:
                self._stream = st = self.api.events(
                    since=start, until=until, decode=True, filters={"type": "container"}
                )
                if not self.up:
                    self.up, self.error = True, None
                    self._dirty = True
                for ev in st:
                    if not _relevant(ev):
                        continue
                    self.events += 1
                    self.last_event_mono = time.monotonic()
                    self._dirty = True
                    self.on_change()
                    if self._stop.is_set():
                        return
                since = until
                # (a window ends at `until` by the engine's clock: ours may be a little ahead)
            except Exception as e:  # noqa: BLE001 - engine stopped, socket gone
                self._stream = None
                if self._stop.is_set():
                    return
                self.up = False
                self.error = short_error(e)
                self._dirty = True
                self.on_change()
                since = None
                self._stop.wait(self.retry_s)


class EngineClient(Protocol):
    """What the watch uses of a client: ``docker.DockerClient``, or one of the same shape over a
    remote engine (:class:`edgetui.hosts.remote_engine.CliDockerClient`)."""

    @property
    def api(self) -> Any: ...
    @property
    def containers(self) -> Any: ...
    def close(self) -> None: ...


class DockerWatch:
    """Listing, joining helpers, samples and actions for one Docker engine.

    ``client``: a ``docker.DockerClient``, ``"auto"`` (``docker.from_env()``,
    created lazily and re-created after failures) or ``None`` (disabled). ``events_window_s`` > 0
    reads the engine's events stream (:class:`EngineEvents`) and lists only on events, after an
    action of ours and every ``list_interval_s``; 0 (the default) lists at every :meth:`refresh`.
    ``on_change`` is called from the events thread when an event arrives.
    """

    def __init__(
        self,
        client: Any = "auto",
        *,
        host: str = "local",
        retry_s: float = 5.0,
        stats_interval_s: float = 10.0,
        clock=time.time,
        list_interval_s: float = 30.0,
        events_window_s: float = 0.0,
        on_change: Optional[Callable[[], None]] = None,
    ):
        self._auto = client == "auto"
        #: seconds between two listings while the events stream is read and says nothing (safety net)
        self.list_interval_s = list_interval_s
        self.events_window_s = events_window_s
        #: called from the events thread when a container event arrives or the stream fails
        self.on_change = on_change
        self._events: Optional[EngineEvents] = None
        self._listed_mono = float("-inf")
        self._force_list = False  # an action of ours changed a container: list at the next refresh
        self.listings = 0  # listings made (diagnostics, benches)
        self.client: Optional[EngineClient] = None if self._auto else client
        self.enabled = client is not None
        self.host = host
        self.retry_s = retry_s
        self.stats_interval_s = stats_interval_s
        self.clock = clock
        self.error: Optional[str] = None  # one line while the engine is unreachable
        self.available = False
        self.listed_at: Optional[float] = None
        self._next_try = 0.0
        self._inspected: dict[str, dict[str, Any]] = {}  # id -> facts from inspect (per state)
        self._sampler: Optional[StatsSampler] = None
        self._shell_cache: dict[str, str] = {}
        self.containers: dict[str, ContainerInfo] = {}  # id -> info (last successful listing)
        self.by_name: dict[str, ContainerInfo] = {}

    # ------------------------------------------------------------------ engine
    def _ensure_client(self) -> Optional[EngineClient]:
        """The client, made now for an auto watch that has none; None when there is none."""
        if self.client is not None:
            return self.client
        if not self._auto:
            return None
        try:
            # lazy: the Docker SDK loads only when an engine is watched
            import docker

            self.client = docker.from_env(timeout=10)
            return self.client
        except Exception as e:  # noqa: BLE001 - no engine, bad DOCKER_HOST...
            self.error = f"docker unavailable: {short_error(e)}"
            return None

    def refresh(self) -> bool:
        """Bring :attr:`containers` up to date: a listing when the events stream said something
        changed, is not running, or ``list_interval_s`` passed since the last listing (else the
        last listing stands, at no cost). False (and :attr:`error` set) when unreachable."""
        if not self.enabled:
            return False
        now = time.monotonic()
        if not self.available and now < self._next_try:
            return False
        client = self._ensure_client()
        if client is None:
            self._next_try = now + self.retry_s
            self.available = False
            return False
        ev = self._events
        recheck = (
            ev is not None
            and ev.last_event_mono > 0
            and now - ev.last_event_mono >= RECHECK_S
            and self._listed_mono < ev.last_event_mono + RECHECK_S
        )
        if (
            self.available
            and ev is not None
            and ev.up
            and not ev.take_dirty()
            and not self._force_list
            and not recheck
            and now - self._listed_mono < self.list_interval_s
        ):
            return True
        self._force_list = False
        try:
            raw = client.api.containers(all=True)
        except Exception as e:  # noqa: BLE001 - engine stopped, socket gone, timeout
            was = self.available
            self.available = False
            self.error = f"docker unavailable: {short_error(e)}" + ("; retrying" if was else "")
            self._next_try = now + self.retry_s
            self._close_events()
            if self._auto:
                try:
                    client.close()
                except Exception:  # noqa: BLE001 - closing a client whose engine may be gone
                    note_swallowed("closing a client whose engine may be gone")
                self.client = None
                self._close_sampler()
            return False
        self._listed_mono = now
        self.listings += 1
        self.available = True
        if self._events is None and self.events_window_s > 0:  # listed: read the events from now on
            try:
                has_events = callable(getattr(client.api, "events", None))
            except Exception:  # noqa: BLE001 - a client whose attributes fail while the engine is down
                has_events = False
            if has_events:
                self._events = EngineEvents(client.api, self._on_event, self.events_window_s)
        self.error = None
        self.listed_at = self.clock()
        infos: dict[str, ContainerInfo] = {}
        for attrs in raw or []:
            info = self._info(attrs)
            if info is not None:
                infos[info.id] = info
        for cid in list(self._inspected):
            if cid not in infos:
                self._inspected.pop(cid, None)
        self.containers = infos
        self.by_name = {c.name: c for c in infos.values()}
        return True

    def _info(self, attrs: dict[str, Any]) -> Optional[ContainerInfo]:
        names = attrs.get("Names") or []
        name = (names[0] if names else "").lstrip("/")
        if not name:
            return None
        p = parse_name(name)
        if p["role"] == "other":
            return None
        state = str(attrs.get("State") or "")
        status = str(attrs.get("Status") or "")
        m = _EXITED_RE.match(status)
        info = ContainerInfo(
            id=str(attrs.get("Id") or ""),
            name=name,
            role=p["role"] or "other",
            task_id=p["task_id"],
            run_id=p["run_id"],
            submission_id=p["submission_id"],
            state=state,
            exit_code=int(m.group(1)) if m else None,
            host=self.host,
            image_id=str(attrs.get("ImageID") or "") or None,
        )
        if info.role == "work":
            self._fill_inspect(info)
        return info

    def _fill_inspect(self, info: ContainerInfo) -> None:
        """Inspect a work container when new or when its state changed; cached otherwise."""
        cached = self._inspected.get(info.id)
        if cached is None or cached.get("_state") != info.state:
            facts: dict[str, Any] = {"_state": info.state}
            if cached is not None:
                facts["token"] = cached.get("token")
            try:
                if self.client is None:  # (closed since the listing)
                    raise RuntimeError("docker unavailable")
                a = self.client.api.inspect_container(info.id)
                st = a.get("State") or {}
                facts.update(
                    oom_killed=bool(st.get("OOMKilled")),
                    exit_code=st.get("ExitCode") if info.state not in ("running", "created") else None,
                    started_at=parse_docker_time(st.get("StartedAt")),
                    finished_at=parse_docker_time(st.get("FinishedAt")) if info.state not in ("running",) else None,
                    restart_count=int(a.get("RestartCount") or 0),
                    mem_limit=((a.get("HostConfig") or {}).get("Memory") or None),
                    image_id=str(a.get("Image") or "") or None,
                )
                tok = _env_value((a.get("Config") or {}).get("Env"), "SFORGE_TOKEN")
                if tok:
                    facts["token"] = tok
            except Exception:  # noqa: BLE001 - removed between list and inspect
                facts["_state"] = None  # try again next listing
            self._inspected[info.id] = cached = facts
        info.oom_killed = bool(cached.get("oom_killed"))
        if cached.get("exit_code") is not None:
            info.exit_code = cached["exit_code"]
        info.started_at = cached.get("started_at")
        info.finished_at = cached.get("finished_at")
        info.restart_count = cached.get("restart_count") or 0
        info.mem_limit_bytes = cached.get("mem_limit")
        info.image_id = info.image_id or cached.get("image_id")

    def token_of(self, container_id: str) -> Optional[str]:
        """``SFORGE_TOKEN`` from the work container's environment (read once, at its first inspect)."""
        return (self._inspected.get(container_id) or {}).get("token")

    # ------------------------------------------------------------------ stats
    def sample(self, running_work_ids: dict[str, str]) -> dict[str, dict[str, Any]]:
        """Hand the running work containers to the sampler; returns the samples taken since the last call."""
        if not self.available or self.stats_interval_s <= 0 or self.client is None:
            return {}
        if self._sampler is None:
            self._sampler = StatsSampler(self.client.api, self.stats_interval_s)
        self._sampler.set_targets(running_work_ids)
        return self._sampler.take()

    def _close_sampler(self) -> None:
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None

    def close(self) -> None:
        self._close_sampler()
        self._close_events()

    def _on_event(self) -> None:
        cb = self.on_change
        if cb is not None:
            try:
                cb()
            except Exception:  # noqa: BLE001 - a listener's failure is not the engine's
                note_swallowed("a listener's failure is not the engine's")

    def _close_events(self) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None

    @property
    def events_up(self) -> bool:
        """The engine's events stream is being read (listings only on events and as a safety net)."""
        return self._events is not None and self._events.up

    # ------------------------------------------------------------------ actions (never raise)
    def _container(self, name_or_id: str):
        client = self._ensure_client()
        if client is None:
            raise RuntimeError(self.error or "docker unavailable")
        return client.containers.get(name_or_id)

    def stop_container(self, name_or_id: str, timeout: int = 10) -> str:
        """``docker stop``; returns a one-line outcome."""
        try:
            self._container(name_or_id).stop(timeout=timeout)
            self._force_list = True
            return f"stopped {name_or_id}"
        except Exception as e:  # noqa: BLE001 - the user's action: its failure is the returned message
            return f"could not stop {name_or_id}: {short_error(e)}"

    def kill_container(self, name_or_id: str, signal: str = "SIGKILL") -> str:
        """``docker kill``; returns a one-line outcome."""
        try:
            self._container(name_or_id).kill(signal=signal)
            self._force_list = True
            return f"killed {name_or_id}"
        except Exception as e:  # noqa: BLE001 - the user's action: its failure is the returned message
            return f"could not kill {name_or_id}: {short_error(e)}"

    def shell_command(self, name_or_id: str) -> list[str]:
        """argv opening an interactive shell in the container: bash when it has one, else sh."""
        shell = self._shell_cache.get(name_or_id)
        if shell is None:
            shell = "sh"
            try:
                c = self._container(name_or_id)
                r = c.exec_run(["sh", "-c", "command -v bash"], stdout=True, stderr=False)
                if r.exit_code == 0 and r.output.strip():
                    shell = "bash"
                key = c.id
            except Exception:  # noqa: BLE001 - stopped container, no sh: fall back to sh
                key = name_or_id
            self._shell_cache[name_or_id] = self._shell_cache[key] = shell
        return ["docker", "exec", "-it", name_or_id, shell]
