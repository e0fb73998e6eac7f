"""SForge's pods on Kubernetes: a list-then-watch cache per namespace, shown as containers (core: no Textual).

SForge's k8s backend (``sforge/harness/backend/k8s_backend.py``; ../shared/docs/sforge-format.md
§7.1, §7.3) makes one bare pod per work, judge or game container, labelled ``app=sforge`` and
``sforge-pod=<pod name>``, with one container named ``work``. :class:`PodEngine` keeps, for each
configured ``context/namespace``, the pods carrying those labels, through the API server by
**lightkube**'s async client with a list-then-watch loop of our own (:func:`watch_namespace`):

* list (in chunks, with ``continue``), then watch from the list's ``resourceVersion`` with
  ``allowWatchBookmarks=true``; the version of every event, BOOKMARK included, is kept;
* a 410 Gone (an ``ERROR`` event in the stream, or the HTTP status of the watch request), a stream
  that just ends and a connection dropped mid-stream all lead to a relist, reconciled against the
  cache: a pod absent from a *complete* relist is deleted (recorded with ``how="relist"``), and
  the gap is recorded (:class:`Gap`);
* errors back off 1 s, doubling to 30 s, retried forever; a namespace answering 403 is shown as
  ``forbidden`` and its neighbours go on; an unreachable API server deletes nothing.

A pod is deleted from the cache only by a DELETED event or its absence from a complete relist.

The engine has :class:`~edgetui.hosts.docker_watch.DockerWatch`'s interface as the live
supervisor uses it (``refresh``, ``containers``, ``by_name``, ``token_of``, ``sample``, stop / kill /
shell, ``has``, ``state_text``), so pods join runs where containers do
(:class:`edgetui.live.containers.ContainerJoin`), plus :meth:`PodEngine.work_container` and
:func:`match_judge_pod`: SForge's pod names cut task ids to 15 characters and judge names to 63,
so ids are never parsed from a pod name.

lightkube's own ``watch`` is not used: on a 410 it restarts without a version, which skips the
deletions made in between (issue 40).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import httpx2
import yaml
from lightkube import AsyncClient, KubeConfig
from lightkube.resources.core_v1 import Event, Pod

from edgetui.error_log import note_swallowed
from edgetui.events import one_line
from edgetui.hosts.cluster_config import ClusterConfig, kubeconfig_path, sforge_cluster
from edgetui.hosts.container_info import ContainerInfo
from edgetui.hosts.forward import forward_url
from edgetui.hosts.remote_engine import ssh_argv
from edgetui.hosts.ssh import DEGRADED, UP
from edgetui.times import iso8601_to_epoch

#: the labels SForge puts on every pod it makes (k8s_backend.create_container)
SFORGE_LABELS = {"app": "sforge"}
#: the one container of an SForge pod
WORK_CONTAINER = "work"
#: pod events raised as alarms (reason as the cluster says it)
ALARM_REASONS = ("FailedScheduling", "ErrImagePull", "ImagePullBackOff", "Evicted", "FailedMount", "BackOff")
#: backoff after an error: first wait and ceiling (seconds)
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0

_IMAGE_TASK_RE = re.compile(r"\.work\.([^:/@]+)(?::|@|$)")


def k8s_name(name: str) -> str:
    """The pod name SForge's k8s backend gives a Docker-style container name (its
    ``_sanitize_k8s_name``): for ``sforge.<role>.<task>.<id>`` (exactly four dot-separated parts)
    the ``sforge.`` prefix is dropped and the task cut to 15 characters (trailing ``-``/``_``
    trimmed); then lower case, ``_`` and ``.`` become ``-``, outer ``-`` trimmed, cut to 63."""
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "sforge":
        role, task, rid = parts[1], parts[2], parts[3]
        task = task[:15].rstrip("-").rstrip("_")
        name = f"{role}.{task}.{rid}"
    out = name.lower().replace("_", "-").replace(".", "-")
    return out.strip("-")[:63].rstrip("-")


def work_pod_name(task_id: str, run_id: str) -> str:
    """The work pod of run ``run_id`` of ``task_id`` (``run-<task[:15]>-<run>``, sanitised)."""
    return k8s_name(f"sforge.run.{task_id}.{run_id}")


def pod_role(name: str) -> str:
    """work | game | judge | other, from the shape of an SForge pod name (the role only: ids are
    never read from it)."""
    if name.startswith("run-") or name.startswith("evolve-"):
        return "work"
    if name.startswith("game-"):
        return "game"
    if "-judge-" in name:
        return "judge"
    return "other"


def image_task(image: Optional[str]) -> Optional[str]:
    """The task id in a work image's name (``<registry>/<benchmark>.work.<task>:<tag>``), else None."""
    m = _IMAGE_TASK_RE.search(image or "")
    return m.group(1) if m else None


def match_judge_pod(
    pod_name: str,
    created_at: Optional[float],
    candidates: list[tuple[Any, str, str, float, float]],
) -> Optional[tuple[Any, str, bool]]:
    """The submission a judge pod grades: ``candidates`` are ``(owner, task_id, submission_id,
    t_from, t_to)`` (the window in which its judge may have been created). Returns ``(owner,
    submission_id, inferred)`` or None. A pod whose name is the whole sanitised judge name
    (``<benchmark>-judge-<task>-<sid>``) joins exactly; a name cut at 63 characters joins by
    prefix when one candidate alone has it (within its window when several do), marked inferred;
    otherwise nothing (never a guess between two)."""
    bench, sep, _rest = pod_name.partition("-judge-")
    if not sep:
        return None
    prefix_hits = []
    for owner, task, sid, t0, t1 in candidates:
        whole = f"{bench}.judge.{task}.{sid}".lower().replace("_", "-").replace(".", "-").strip("-")
        if whole == pod_name:  # not cut: the name says it all
            return owner, sid, False
        if len(pod_name) >= 62 and len(whole) > 63 and whole.startswith(pod_name):
            prefix_hits.append((owner, sid, t0, t1))
    if len(prefix_hits) > 1 and created_at is not None:
        prefix_hits = [h for h in prefix_hits if h[2] <= created_at <= h[3]]
    if len(prefix_hits) == 1:
        return prefix_hits[0][0], prefix_hits[0][1], True
    return None


# ---------------------------------------------------------------------------- one namespace


@dataclass
class Gap:
    """A stretch the watch did not see (after a 410, a stream's end or a drop): what the relist found."""

    t: float
    why: str
    version_before: Optional[str]
    version_after: Optional[str]
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


@dataclass
class Deletion:
    t: float
    name: str
    how: str  # "event" (a DELETED event) | "relist" (absent from a complete relist)


class NamespacePods:
    """The pods of one ``context/namespace`` and the state of its watch. Written by the watch loop
    only; read (under :attr:`lock`) by the supervisor's thread."""

    def __init__(self, context: str, namespace: str, clock: Callable[[], float] = time.time):
        self.context = context
        self.namespace = namespace
        self.key = f"{context}/{namespace}"
        self.clock = clock
        self.lock = threading.Lock()
        self.pods: dict[str, dict[str, Any]] = {}
        self.version: Optional[str] = None  # of the last list or event (BOOKMARK included)
        self.listed = False  # a complete list was read at least once
        self.state = "connecting"  # connecting | up | forbidden | down
        self.message = ""
        self.since: Optional[float] = None
        self.next_retry: Optional[float] = None
        self.gaps: list[Gap] = []
        self.deletions: list[Deletion] = []
        self.events: dict[str, list[dict[str, Any]]] = {}  # pod name -> its alarm events (newest last)
        self.lists = 0
        self.watches = 0
        self.generation = 0  # bumped at every change of pods / events (the supervisor's cheap check)

    def set_state(self, state: str, message: str = "", next_retry: Optional[float] = None) -> None:
        with self.lock:
            if state != self.state:
                self.since = self.clock()
            self.state, self.message, self.next_retry = state, one_line(message, 200), next_retry

    def apply(self, etype: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED / MODIFIED / DELETED / BOOKMARK): the cache and the version."""
        meta = obj.get("metadata") or {}
        rv = meta.get("resourceVersion")
        with self.lock:
            if rv:
                self.version = str(rv)
            if etype == "BOOKMARK":
                return
            name = meta.get("name")
            if not isinstance(name, str):
                return
            if etype == "DELETED":
                if self.pods.pop(name, None) is not None:
                    self.deletions.append(Deletion(self.clock(), name, "event"))
                self.events.pop(name, None)
            elif etype in ("ADDED", "MODIFIED"):
                self.pods[name] = obj
            self.generation += 1

    def reconcile(self, items: list[dict[str, Any]], version: Optional[str], why: Optional[str]) -> Optional[Gap]:
        """A complete list: the cache becomes it; pods gone from it are deleted. ``why`` (None for
        the first list) records the gap it closes."""
        new = {}
        for obj in items:
            name = (obj.get("metadata") or {}).get("name")
            if isinstance(name, str):
                new[name] = obj
        with self.lock:
            now = self.clock()
            gone = sorted(set(self.pods) - set(new))
            added = sorted(set(new) - set(self.pods))
            changed = sorted(
                n
                for n in set(new) & set(self.pods)
                if (new[n].get("metadata") or {}).get("resourceVersion")
                != (self.pods[n].get("metadata") or {}).get("resourceVersion")
            )
            gap = None
            if why is not None:
                gap = Gap(now, why, self.version, version, added, gone, changed)
                self.gaps.append(gap)
                del self.gaps[:-50]
            for n in gone:
                self.deletions.append(Deletion(now, n, "relist"))
                self.events.pop(n, None)
            del self.deletions[:-500]
            self.pods = new
            self.version = version
            self.listed = True
            self.lists += 1
            self.generation += 1
        return gap

    def set_events(self, items: list[dict[str, Any]]) -> None:
        """The namespace's pod events: those with an alarm reason, by pod (newest last)."""
        by_pod: dict[str, list[dict[str, Any]]] = {}
        for ev in items:
            inv = ev.get("involvedObject") or {}
            if inv.get("kind") != "Pod" or ev.get("reason") not in ALARM_REASONS:
                continue
            by_pod.setdefault(str(inv.get("name")), []).append(ev)
        for evs in by_pod.values():
            evs.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        with self.lock:
            if by_pod != self.events:
                self.events = by_pod
                self.generation += 1


# ---------------------------------------------------------------------------- the watch loop


class StreamEnded(Exception):
    """The watch ended: ``why`` says how (410 of either kind, a clean end, a drop)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


async def list_pods(client: Any, namespace: str, chunk_size: int = 250) -> tuple[list[dict[str, Any]], Optional[str]]:
    """Every SForge pod of ``namespace`` (all chunks, ``continue`` followed by lightkube) and the
    list's ``resourceVersion``."""

    it = client.list(Pod, namespace=namespace, labels=SFORGE_LABELS, chunk_size=chunk_size)
    items = [p.to_dict() async for p in it]
    return items, it.resourceVersion


async def watch_stream(client: Any, ns: NamespacePods, timeout_s: int = 300) -> None:
    """One watch request from ``ns.version``; applies its events to ``ns``. Returns never: raises
    :class:`StreamEnded` (410 either way, clean end, drop) or the client's error."""

    gc = client._client  # (lightkube's generic client: its request building and auth, our own loop)
    br = gc.prepare_request(
        "list",
        res=Pod,
        namespace=ns.namespace,
        watch=True,
        params={
            "labelSelector": _selector(SFORGE_LABELS),
            "resourceVersion": ns.version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_s,
        },
    )
    req = gc._client.build_request(br.method, br.url, params=br.params, timeout=httpx2.Timeout(10.0, read=None))
    resp = await gc.send(req, stream=True)
    try:
        if resp.status_code == 410:
            raise StreamEnded("410 Gone (watch request)")
        if resp.status_code >= 400:
            await resp.aread()
            gc.raise_for_status(resp)
        ns.watches += 1
        try:
            async for line in resp.aiter_lines():
                if not line.strip():
                    continue
                ev = json.loads(line)
                etype, obj = ev.get("type"), ev.get("object") or {}
                if etype == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        raise StreamEnded(f"410 Gone (in stream: {one_line(str(obj.get('message') or ''), 120)})")
                    raise StreamEnded(f"watch error {code}: {one_line(str(obj.get('message') or ''), 120)}")
                ns.apply(str(etype), obj)
        except httpx2.TransportError as e:  # a connection dropped mid-stream (incomplete chunk)
            raise StreamEnded(f"stream dropped ({type(e).__name__})") from None
        except ValueError as e:  # a line cut by the drop, or not JSON
            raise StreamEnded(f"stream dropped (bad line: {one_line(str(e), 80)})") from None
        raise StreamEnded("stream ended")
    finally:
        await resp.aclose()


def _error_text(e: BaseException) -> tuple[str, str]:
    """(state, message) for an error of the API server or the connection to it."""
    status = getattr(e, "status", None)
    code = getattr(status, "code", None)
    if code == 403:
        return "forbidden", f"403 Forbidden: {one_line(str(getattr(status, 'message', '') or e), 160)}"
    if code is not None:
        return "down", f"HTTP {code}: {one_line(str(getattr(status, 'message', '') or e), 160)}"
    txt = str(e) or type(e).__name__
    if "Connection refused" in txt or "ConnectError" in type(e).__name__:
        return "down", f"connection refused ({one_line(txt, 100)})"
    return "down", one_line(f"{type(e).__name__}: {txt}", 160)


async def watch_namespace(
    client: Any,
    ns: NamespacePods,
    stop: asyncio.Event,
    *,
    backoff_first_s: float = BACKOFF_FIRST_S,
    backoff_max_s: float = BACKOFF_MAX_S,
    watch_timeout_s: int = 300,
    on_change: Optional[Callable[[], None]] = None,
    chunk_size: int = 250,
) -> None:
    """List, then watch, forever (until ``stop``): see the module."""
    backoff = backoff_first_s
    why: Optional[str] = None  # the gap the next list closes (None: the first list)
    quick = 0  # watches in a row that ended within a second
    while not stop.is_set():
        try:
            items, version = await list_pods(client, ns.namespace, chunk_size)
            ns.reconcile(items, version, why)
            ns.set_state("up", f"{len(items)} pods")
            _notify(on_change)
            if not quick:
                backoff = backoff_first_s
            while not stop.is_set():
                started = time.monotonic()
                try:
                    await watch_stream(client, ns, watch_timeout_s)
                except StreamEnded as end:
                    why = end.why
                    _notify(on_change)
                    quick = quick + 1 if time.monotonic() - started < 1.0 else 0
                    if quick and (quick > 1 or not end.why.startswith("410")):
                        # a server that ends (or 410s) every stream at once: not a busy loop (a first
                        # 410 relists at once: the usual compaction)
                        await _wait(stop, backoff)
                        backoff = min(backoff * 2, backoff_max_s)
                    break  # relist: the changes the watch did not deliver are in the list
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the API or the connection: shown, retried
            state, msg = _error_text(e)
            why = why or f"error: {msg}"
            ns.set_state(state, msg + (f"; retrying in {backoff:.0f} s" if backoff else ""), time.time() + backoff)
            _notify(on_change)
            await _wait(stop, backoff)
            backoff = min(backoff * 2, backoff_max_s)


async def poll_events(client: Any, ns: NamespacePods, stop: asyncio.Event, interval_s: float = 10.0) -> None:
    """The namespace's pod events every ``interval_s`` (FailedScheduling, ErrImagePull...)."""

    while not stop.is_set():
        if ns.state == "up":
            try:
                items = [
                    e.to_dict()
                    async for e in client.list(Event, namespace=ns.namespace, fields={"involvedObject.kind": "Pod"})
                ]
                ns.set_events(items)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - events are extra: the pods' watch says whether the API is up
                note_swallowed(f"{ns.key}: pod events could not be listed")
        await _wait(stop, interval_s)


async def _wait(stop: asyncio.Event, s: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=s)
    except asyncio.TimeoutError:  # (the wait is the point)
        pass


def _notify(cb: Optional[Callable[[], None]]) -> None:
    if cb is not None:
        try:
            cb()
        except Exception:  # noqa: BLE001 - a listener's failure is not the cluster's
            note_swallowed("a pod listener failed")


# ---------------------------------------------------------------------------- pods as containers


def _t(v: Any) -> Optional[float]:
    return iso8601_to_epoch(v) if isinstance(v, str) and v else None


def pod_info(pod: dict[str, Any], host: str, events: Optional[list[dict[str, Any]]] = None) -> ContainerInfo:
    """A pod as the supervisor sees a container: ``state`` in Docker's words (Pending → created,
    Running → running, Succeeded / Failed → exited, being deleted → removing), plus its phase,
    node, waiting reason, the ``work`` container's exit code / OOM kill / restarts, and the pod's
    alarm events in the cluster's words (``problems``)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    st = pod.get("status") or {}
    name = str(meta.get("name") or "")
    phase = str(st.get("phase") or "Unknown")
    cs = next((c for c in st.get("containerStatuses") or [] if c.get("name") == WORK_CONTAINER), None)
    cs = cs or next(iter(st.get("containerStatuses") or []), None) or {}
    cstate = cs.get("state") or {}
    term = cstate.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
    waiting = cstate.get("waiting") or {}
    state = {"Pending": "created", "Running": "running", "Succeeded": "exited", "Failed": "exited"}.get(
        phase, "unknown"
    )
    if meta.get("deletionTimestamp") and state != "exited":
        state = "removing"
    problems: list[str] = []
    if st.get("reason"):  # Evicted, OutOfpods, NodeLost...: the pod's own words
        problems.append(f"{st.get('reason')}: {one_line(str(st.get('message') or ''), 200)}".rstrip(": "))
    if waiting.get("reason") in ALARM_REASONS:
        problems.append(f"{waiting.get('reason')}: {one_line(str(waiting.get('message') or ''), 200)}".rstrip(": "))
    for ev in events or []:
        line = f"{ev.get('reason')}: {one_line(str(ev.get('message') or ''), 200)}"
        if line not in problems:
            problems.append(line)
    env = next((c.get("env") for c in spec.get("containers") or [] if c.get("name") == WORK_CONTAINER), None) or []
    token = next((e.get("value") for e in env if isinstance(e, dict) and e.get("name") == "SFORGE_TOKEN"), None)
    image = next((c.get("image") for c in spec.get("containers") or [] if c.get("name") == WORK_CONTAINER), None)
    return ContainerInfo(
        id=str(meta.get("uid") or name),
        name=name,
        role=pod_role(name),
        state=state,
        exit_code=term.get("exitCode") if state == "exited" else None,
        oom_killed=term.get("reason") == "OOMKilled",
        restart_count=int(cs.get("restartCount") or 0),
        started_at=_t((cstate.get("running") or {}).get("startedAt") or term.get("startedAt")),
        finished_at=_t(term.get("finishedAt")),
        host=host,
        image_id=str(cs.get("imageID") or "") or None,
        phase=phase,
        node=spec.get("nodeName"),
        reason=waiting.get("reason") or term.get("reason") or st.get("reason"),
        problems=problems,
        created_at=_t(meta.get("creationTimestamp")),
        image=image,
        token=token,
    )


def missing_kubeconfig(c: ClusterConfig, short: bool = False) -> str:
    """What to do when ``c``'s kubeconfig file is not there (one line, the path once, ``~`` for home;
    ``short``: for the status line, which holds 76 cells at 80 columns: the hosts view says the rest)."""
    path = kubeconfig_path(c)
    try:
        shown = "~/" + str(path.relative_to(Path.home()))
    except ValueError:  # not under the home directory: the whole path
        shown = str(path)
    sforge = c.source == sforge_cluster({}).source  # SForge's own (watch --k8s), from its variables
    if sforge:
        fix = "check SFORGE_K8S_KUBECONFIG" if c.kubeconfig else "set SFORGE_K8S_KUBECONFIG or a [clusters] section"
        if short and not c.kubeconfig:
            return f"no {shown}: set SFORGE_K8S_KUBECONFIG or [clusters]"
    else:
        fix = f"check kubeconfig in [clusters.{c.name}]" if c.kubeconfig else f"set kubeconfig in [clusters.{c.name}]"
    return f"no kubeconfig at {shown}: {fix}, see docs/kubernetes.md"


# ---------------------------------------------------------------------------- the engine


class PodEngine:
    """The pods of every configured ``context/namespace``, watched in one thread of its own (an
    asyncio loop; one task per namespace), read without I/O by the supervisor (see the module)."""

    def __init__(
        self,
        clusters: list[ClusterConfig],
        *,
        clock: Callable[[], float] = time.time,
        events_interval_s: float = 10.0,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        on_change: Optional[Callable[[], None]] = None,
        kubectl: Optional[str] = None,
        chunk_size: int = 250,
        hosts: Optional[dict[str, Any]] = None,
    ):
        self.chunk_size = chunk_size
        #: SSH hosts by name (:class:`~edgetui.hosts.ssh.SshHost`), for the clusters reached ``via`` one
        self.hosts = dict(hosts or {})
        self._via: list[tuple[ClusterConfig, list[NamespacePods]]] = []
        self.clusters = list(clusters)
        self.clock = clock
        self.events_interval_s = events_interval_s
        self.backoff_first_s = backoff_first_s
        self.backoff_max_s = backoff_max_s
        self.on_change = on_change
        self.kubectl = kubectl if kubectl is not None else shutil.which("kubectl")
        self.host = "k8s"
        self.namespaces: list[NamespacePods] = []
        self._ns_cluster: dict[str, ClusterConfig] = {}
        self.config_errors: list[tuple[str, str]] = []  # (cluster name, why its kubeconfig is not usable)
        self._short_errors: dict[str, str] = {}  # cluster name -> its config error for the status line
        self._configs: dict[str, Any] = {}
        for c in self.clusters:
            if c.via is not None:  # its kubeconfig is on that host: read once the host is up
                if c.via not in self.hosts:
                    self.config_errors.append((c.name, f"via {c.via}: no such host in the hosts file"))
                    continue
                nss = [NamespacePods(c.name, n, clock) for n in c.namespaces]
                for ns in nss:
                    ns.message = f"waiting for {c.via}"
                    self.namespaces.append(ns)
                    self._ns_cluster[ns.key] = c
                self._via.append((c, nss))
                continue
            if not kubeconfig_path(c).exists():  # (lightkube's error repeats the path, cut at 80 columns)
                self.config_errors.append((c.name, missing_kubeconfig(c)))
                self._short_errors[c.name] = missing_kubeconfig(c, short=True)
                continue
            try:
                single = self._load(c)
            except Exception as e:  # noqa: BLE001 - a bad kubeconfig: said in the hosts view, not raised
                self.config_errors.append((c.name, one_line(f"{kubeconfig_path(c)}: {e}", 200)))
                continue
            ctx = single.context_name
            for n in c.namespaces:
                ns = NamespacePods(ctx, n, clock)
                self.namespaces.append(ns)
                self._ns_cluster[ns.key] = c
                self._configs[ns.key] = single
        self.containers: dict[str, ContainerInfo] = {}
        self.by_name: dict[str, ContainerInfo] = {}
        self._by_ns_name: dict[tuple[str, str], ContainerInfo] = {}
        self._named: dict[str, list[ContainerInfo]] = {}
        self._info_cache: dict[tuple[str, str], tuple[Any, Any, ContainerInfo]] = {}
        self._seen_gen: Optional[tuple] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._stop: Optional[asyncio.Event] = None
        self._clients: dict[str, Any] = {}

    @staticmethod
    def _load(c: ClusterConfig):

        return KubeConfig.from_file(kubeconfig_path(c)).get(context_name=c.context)

    # ---- the thread
    def start(self) -> "PodEngine":
        if self._thread is None and self.namespaces:
            ready = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(ready,), name="edgetui-pods", daemon=True)
            self._thread.start()
            ready.wait(10)
        return self

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main(ready))
        finally:
            loop.close()

    async def _main(self, ready: threading.Event) -> None:

        self._stop = asyncio.Event()
        tasks: list[asyncio.Future] = []
        for c, nss in self._via:
            tasks.append(asyncio.ensure_future(self._start_via(c, nss, tasks)))
        for ns in self.namespaces:
            if ns.key in self._configs:
                self._start_watch(ns, tasks)
        ready.set()
        await self._stop.wait()
        for t in list(tasks):
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in self._clients.values():
            try:
                await client.close()
            except Exception:  # noqa: BLE001 - closing a client whose server may be gone
                note_swallowed("closing a Kubernetes client")

    async def _start_via(self, c: ClusterConfig, nss: list[NamespacePods], tasks: list) -> None:
        """A cluster reached through an SSH host: once the host is up, its kubeconfig read over SFTP,
        the API server's address forwarded over the host's connection, then the namespaces watched.
        Retried (1 s doubling to 30 s) until it works."""
        backoff = self.backoff_first_s
        loop = asyncio.get_running_loop()
        assert self._stop is not None
        while not self._stop.is_set():
            try:
                single = await loop.run_in_executor(None, self._load_via, c)
                break
            except Exception as e:  # noqa: BLE001 - the host down, no kubeconfig there: shown, retried
                for ns in nss:
                    ns.set_state("down", f"via {c.via}: {one_line(str(e), 160)}", time.time() + backoff)
                _notify(self.on_change)
                await _wait(self._stop, backoff)
                backoff = min(backoff * 2, self.backoff_max_s)
        else:
            return
        for ns in nss:
            self._configs[ns.key] = single
            self._start_watch(ns, tasks)

    def _load_via(self, c: ClusterConfig):
        host = self.hosts[c.via or ""]
        if host.state.kind not in (UP, DEGRADED):
            raise RuntimeError(f"host {c.via} is {host.state.kind}")
        path = c.kubeconfig or ".kube/config"  # (SFTP resolves a relative path in the login's home)
        raw = host.read_at(path, 0, 4 << 20)
        doc = yaml.safe_load(raw.decode("utf-8", "replace"))
        if not isinstance(doc, dict):
            raise ValueError(f"{c.via}:{path}: not a kubeconfig")
        ctx_name = c.context or doc.get("current-context")
        ctx = next((x.get("context") or {} for x in doc.get("contexts") or [] if x.get("name") == ctx_name), None)
        if ctx is None:
            raise ValueError(f"{c.via}:{path}: no context {ctx_name!r}")
        cl = next((x.get("cluster") for x in doc.get("clusters") or [] if x.get("name") == ctx.get("cluster")), None)
        if not isinstance(cl, dict) or not cl.get("server"):
            raise ValueError(f"{c.via}:{path}: context {ctx_name!r} names no cluster with a server")
        cl["server"] = forward_url(host, str(cl["server"]))  # the API as the host sees it, over its connection
        return KubeConfig.from_dict(doc).get(context_name=ctx_name)

    def _start_watch(self, ns: NamespacePods, tasks: list) -> None:
        assert self._stop is not None
        client = AsyncClient(config=self._configs[ns.key], namespace=ns.namespace, field_manager="edgetui")
        self._clients[ns.key] = client
        tasks.append(
            asyncio.ensure_future(
                watch_namespace(
                    client,
                    ns,
                    self._stop,
                    backoff_first_s=self.backoff_first_s,
                    backoff_max_s=self.backoff_max_s,
                    on_change=self.on_change,
                    chunk_size=self.chunk_size,
                )
            )
        )
        if self.events_interval_s > 0:
            tasks.append(asyncio.ensure_future(poll_events(client, ns, self._stop, self.events_interval_s)))

    def close(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # (the loop closed meanwhile)
                note_swallowed("pod engine loop already closed")
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def kick(self) -> None:
        """After an action of ours: nothing to do (the watch delivers the change)."""

    def _call(self, key: str, coro_fn: Callable[[Any], Any], timeout: float = 30.0) -> Any:
        loop = self._loop
        client = self._clients.get(key)
        if loop is None or client is None:
            raise RuntimeError("the cluster is not being watched")
        return asyncio.run_coroutine_threadsafe(coro_fn(client), loop).result(timeout)

    # ---- what the supervisor reads (no I/O)
    def refresh(self) -> bool:
        """The containers from the caches (rebuilt only when a cache changed). True when a
        namespace was listed completely at least once (its pods stand while it is down)."""
        gen = tuple(ns.generation for ns in self.namespaces)
        if gen != self._seen_gen:
            self._seen_gen = gen
            containers: dict[str, ContainerInfo] = {}
            by_ns: dict[tuple[str, str], ContainerInfo] = {}
            cache: dict[tuple[str, str], tuple[Any, Any, ContainerInfo]] = {}
            for ns in self.namespaces:
                with ns.lock:
                    pods = list(ns.pods.values())
                    events = dict(ns.events)
                for p in pods:
                    name = str((p.get("metadata") or {}).get("name") or "")
                    evs = events.get(name)
                    k = (ns.key, name)
                    hit = self._info_cache.get(k)
                    # a pod unchanged (same object: the cache keeps what the watch stored) with the same
                    # events is not converted again: one pod changing costs one conversion
                    if hit is not None and hit[0] is p and hit[1] is evs:
                        info = hit[2]
                    else:
                        info = pod_info(p, ns.key, evs)
                    cache[k] = (p, evs, info)
                    containers[info.id] = info
                    by_ns[k] = info
            self._info_cache = cache
            self.containers = containers
            self._by_ns_name = by_ns
            named: dict[str, list[ContainerInfo]] = {}
            for (_k, n), c in by_ns.items():
                named.setdefault(n, []).append(c)
            self._named = named
            self.by_name = {c.name: c for c in containers.values()}
        return any(ns.listed for ns in self.namespaces)

    def generations(self) -> Optional[tuple]:
        """The caches' change counts that :attr:`containers` reflects (as of the last :meth:`refresh`;
        equal: nothing changed since)."""
        return self._seen_gen

    @property
    def available(self) -> bool:
        return any(ns.state == "up" for ns in self.namespaces)

    def state_text(self) -> str:
        ups = sum(1 for ns in self.namespaces if ns.state == "up")
        return f"k8s: {ups}/{len(self.namespaces)} namespaces up, {len(self.containers)} pods"

    def work_container(self, task_id: str, run_id: str) -> Optional[ContainerInfo]:
        """The work pod of a run: the pod named as SForge names it whose image does not name another
        task (two tasks sharing their first 15 characters under one run id share the pod name;
        such a pod without a task in its image is marked ``inferred``). None when several
        namespaces hold one (ambiguous)."""
        name = work_pod_name(task_id, run_id)
        hits = []
        for c in self._named.get(name, ()):
            it = image_task(c.image)
            if it is not None and it != task_id:
                continue
            if it is None and len(task_id) > 15:
                c = c.model_copy(update={"inferred": True})
            hits.append(c)
        return hits[0] if len(hits) == 1 else None

    def work_name(self, task_id: str, run_id: str) -> str:
        return work_pod_name(task_id, run_id)

    def judge_owner(self, c: ContainerInfo, windows: list[tuple]) -> Optional[tuple[Any, str, bool]]:
        """(owner, submission id, inferred) of judge pod ``c`` among ``windows`` (see :func:`match_judge_pod`)."""
        return match_judge_pod(c.name, c.created_at, windows)

    @property
    def error(self) -> Optional[str]:
        """One line while a namespace is not up (the supervisor's notes), else None."""
        bad = [ns for ns in self.namespaces if ns.state in ("down", "forbidden")]
        if bad:
            return f"k8s {bad[0].key}: {bad[0].state}: {bad[0].message}" + (
                f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
            )
        if self.config_errors:
            name, why = self.config_errors[0]
            return f"k8s {name}: {self._short_errors.get(name, why)}"
        return None

    def state_of(self, key: str) -> Optional[str]:
        """The state of namespace ``key`` (``context/namespace``): up, connecting, down, forbidden."""
        for ns in self.namespaces:
            if ns.key == key:
                return ns.state
        return None

    def token_of(self, container_id: str) -> Optional[str]:
        c = self.containers.get(container_id)
        return c.token if c is not None else None

    def sample(self, running_work_ids: dict[str, str]) -> dict[str, dict[str, Any]]:
        """No resource samples (the metrics API is not read)."""
        return {}

    def has(self, name_or_id: str) -> bool:
        return name_or_id in self.containers or name_or_id in self.by_name

    def _find(self, name_or_id: str) -> tuple[NamespacePods, ContainerInfo]:
        c = self.containers.get(name_or_id) or self.by_name.get(name_or_id)
        if c is None:
            raise RuntimeError(f"no pod {name_or_id} in the watched namespaces")
        ns = next(n for n in self.namespaces if n.key == c.host)
        return ns, c

    # ---- actions (never raise, but shell_command)
    def _delete(self, name_or_id: str, grace: int, verb: str) -> str:

        try:
            ns, c = self._find(name_or_id)
            self._call(ns.key, lambda cl: cl.delete(Pod, c.name, namespace=ns.namespace, grace_period=grace))
            return f"{verb} pod {c.name} ({ns.key})"
        except Exception as e:  # noqa: BLE001 - the user's action: its failure is the returned message
            return f"could not delete pod {name_or_id}: {_error_text(e)[1]}"

    def stop_container(self, name_or_id: str, timeout: int = 15) -> str:
        """Delete the pod with SForge's grace period (15 s: ``kubectl delete pod --grace-period=15``)."""
        return self._delete(name_or_id, max(timeout, 15), "deleted")

    def kill_container(self, name_or_id: str) -> str:
        """Delete the pod at once (grace period 0)."""
        return self._delete(name_or_id, 0, "deleted (no grace)")

    def shell_command(self, name_or_id: str) -> list[str]:
        """``kubectl exec -it`` in the pod's ``work`` container, a second program as the SSH shell is.
        Raises ``RuntimeError`` (shown as is) when kubectl is not installed."""
        ns, c = self._find(name_or_id)
        cfg = self._ns_cluster.get(ns.key)
        tail = ["-n", ns.namespace, "exec", "-it", c.name, "-c", WORK_CONTAINER, "--", "sh"]
        if cfg is not None and cfg.via is not None:  # that host's kubectl and kubeconfig: a second login, as its shells
            single = self._configs.get(ns.key)
            ctx = ["--context", single.context_name] if single is not None else []
            kc = ["--kubeconfig", cfg.kubeconfig] if cfg.kubeconfig else []
            return [*ssh_argv(self.hosts[cfg.via]), "kubectl", *kc, *ctx, *tail]
        if not self.kubectl:
            raise RuntimeError("kubectl is not installed: a shell in a pod needs it (kubectl exec -it)")
        argv = [self.kubectl]
        if cfg is not None and cfg.kubeconfig:
            argv += ["--kubeconfig", str(kubeconfig_path(cfg))]
        argv += ["--context", ns.context, *tail]
        return argv

    def pod_log(self, name_or_id: str, tail_lines: int = 20000) -> str:
        """The ``work`` container's log (its last ``tail_lines`` lines). Raises ``RuntimeError``."""
        ns, c = self._find(name_or_id)

        async def read(cl: Any) -> str:
            return "".join(
                [
                    line
                    async for line in cl.log(
                        c.name, namespace=ns.namespace, container=WORK_CONTAINER, tail_lines=tail_lines
                    )
                ]
            )

        try:
            return str(self._call(ns.key, read))
        except Exception as e:  # noqa: BLE001 - said in one line
            raise RuntimeError(f"the log of pod {c.name} could not be read: {_error_text(e)[1]}") from None

    # ---- the hosts view
    def host_rows(self) -> list[tuple[str, str, Optional[float], Optional[float], str, int]]:
        """(``context/namespace``, state, since, next retry, message, pods) per namespace, then one
        line per cluster whose kubeconfig could not be read."""
        out = []
        for ns in self.namespaces:
            with ns.lock:
                n = len(ns.pods)
                out.append((ns.key, ns.state, ns.since, ns.next_retry, ns.message, n))
        for name, why in self.config_errors:
            out.append((name, "down", None, None, why, 0))
        return out
