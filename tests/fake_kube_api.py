"""A fake Kubernetes API server on 127.0.0.1 for the pod tests: no real one can run here (no
kube-apiserver, k3s or kwok installable on these machines; issue 40). It speaks the wire protocol
of what edgetui uses, as the API reference describes it
(https://kubernetes.io/docs/reference/using-api/api-concepts/):

* ``GET /api/v1/namespaces/NS/pods?labelSelector=&limit=&continue=``: a PodList whose
  ``metadata.resourceVersion`` is the list's version; ``limit`` / ``continue`` page a snapshot
  (the token names the snapshot and the offset);
* ``GET ...pods?watch=true&resourceVersion=RV&allowWatchBookmarks=true``: a chunked stream of
  ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}`` lines, one per chunk; a
  version older than the compacted history answers 410 (an ERROR event in the stream, or the
  HTTP status, as chosen), and the test can end every open stream cleanly, drop it mid-chunk,
  send an ERROR 410 or a BOOKMARK;
* ``GET /api/v1/namespaces/NS/events``: an EventList; ``GET .../pods/NAME/log``: text;
  ``DELETE .../pods/NAME``: the pod removed (a DELETED event);
* ``.../pods/NAME/exec``: refused (403, as for a user without ``pods/exec``);
* a namespace listed in ``forbidden`` answers 403 with the apiserver's Status body.

Pods and events are copied from ``tests/fixtures/k8s/`` (shapes of ``kubectl get -o json``).
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

FIXTURES = Path(__file__).parent / "fixtures" / "k8s"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def sforge_pod(
    name: str,
    namespace: str = "sforge",
    *,
    phase: str = "Running",
    image: Optional[str] = None,
    token: Optional[str] = None,
    terminated: Optional[dict[str, Any]] = None,
    waiting: Optional[dict[str, Any]] = None,
    reason: Optional[str] = None,
    message: Optional[str] = None,
    node: Optional[str] = "node-a",
    created: str = "2026-12-06T03:00:00Z",
    uid: Optional[str] = None,
) -> dict[str, Any]:
    """The fixture pod renamed and put in another state (a Pending pod is unscheduled and waiting;
    a Failed / Succeeded one terminated)."""
    p = fixture("pod_work_running.json")
    p["metadata"].update(name=name, namespace=namespace, creationTimestamp=created)
    p["metadata"]["labels"]["sforge-pod"] = name
    p["metadata"]["uid"] = uid or f"uid-{namespace}-{name}"
    c = p["spec"]["containers"][0]
    if image:
        c["image"] = image
    if token is not None:
        c["env"][0]["value"] = token
    elif token is None and not name.startswith("run-"):
        c.pop("env", None)
    p["spec"]["nodeName"] = node
    if node is None:
        p["spec"].pop("nodeName")
    st = p["status"]
    st["phase"] = phase
    cs = st["containerStatuses"][0]
    if terminated is not None:
        cs["state"] = {
            "terminated": {"containerID": cs["containerID"], "startedAt": "2026-12-06T03:00:08Z", **terminated}
        }
        cs["ready"] = False
    elif waiting is not None:
        cs["state"] = {"waiting": waiting}
        cs["ready"] = False
    if phase == "Pending" and waiting is None and terminated is None:
        st.pop("containerStatuses")
    if reason:
        st["reason"] = reason
        st["message"] = message or ""
    return p


def pod_event(pod: str, reason: str, message: str, namespace: str = "sforge", n: int = 0) -> dict[str, Any]:
    e = fixture("event_failed_scheduling.json")
    e["involvedObject"].update(name=pod, namespace=namespace)
    e["metadata"].update(name=f"{pod}.{n:016x}", namespace=namespace)
    e["reason"], e["message"] = reason, message
    return e


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {"kind": "pods"},
        "code": code,
    }


#: the discovery documents kubectl reads first (shapes of `kubectl get --raw /api/v1`, trimmed to
#: the resources used here; https://kubernetes.io/docs/reference/using-api/api-concepts/)
DISCOVERY: dict[str, Any] = {
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake", "platform": "linux/amd64"},
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    },
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods",
                "singularName": "pod",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["create", "delete", "get", "list", "watch"],
                "shortNames": ["po"],
            },
            {
                "name": "pods/exec",
                "singularName": "",
                "namespaced": True,
                "kind": "PodExecOptions",
                "verbs": ["create", "get"],
            },
            {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
            {
                "name": "events",
                "singularName": "event",
                "namespaced": True,
                "kind": "Event",
                "verbs": ["list", "watch"],
            },
        ],
    },
}


class FakeKubeApi:
    """The server's state and controls (see the module); ``url`` once started."""

    def __init__(self, namespaces: tuple[str, ...] = ("sforge",), forbidden: tuple[str, ...] = ()):
        self.cond = threading.Condition()
        self.rv = 1000
        self.pods: dict[str, dict[str, dict[str, Any]]] = {ns: {} for ns in namespaces}
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, ns, type, object)
        self.compacted = 0  # versions before this are gone (410)
        self.too_old = "event"  # how a too-old watch is refused: "event" (ERROR 410 in the stream) | "status"
        self.hold = False  # changes are made but not streamed (the watch misses them)
        self.command: tuple[int, str] = (0, "")
        self.next_watch_status: list[int] = []
        self.forbidden = set(forbidden)
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.logs: dict[tuple[str, str], str] = {}
        self.snapshots: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self.open_streams = 0
        self.watch_starts = 0
        self.server: Optional[ThreadingHTTPServer] = None
        self.conns: list[socket.socket] = []
        self.dead = False
        self.url = ""

    # ---- controls
    def put(self, pod: dict[str, Any]) -> None:
        """Create or replace a pod (ADDED / MODIFIED)."""
        with self.cond:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            self.rv += 1
            pod = copy.deepcopy(pod)
            pod["metadata"]["resourceVersion"] = str(self.rv)
            kind = "MODIFIED" if name in self.pods[ns] else "ADDED"
            self.pods[ns][name] = pod
            self.history.append((self.rv, ns, kind, pod))
            self.cond.notify_all()

    def delete(self, ns: str, name: str) -> Optional[dict[str, Any]]:
        with self.cond:
            pod = self.pods[ns].pop(name, None)
            if pod is not None:
                self.rv += 1
                pod = copy.deepcopy(pod)
                pod["metadata"]["resourceVersion"] = str(self.rv)
                self.history.append((self.rv, ns, "DELETED", pod))
                self.cond.notify_all()
            return pod

    def compact(self) -> None:
        """Forget the history up to now: a watch from an older version gets 410."""
        with self.cond:
            self.compacted = self.rv
            self.history.clear()

    def streams(self, action: str) -> None:
        """``end`` / ``drop`` / ``error410`` / ``bookmark`` every open watch stream."""
        with self.cond:
            self.command = (self.command[0] + 1, action)
            self.cond.notify_all()

    # ---- serving
    def start(self) -> "FakeKubeApi":
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:  # (quiet: the tests read api.requests)
                pass

            def setup(self) -> None:
                super().setup()
                api.conns.append(self.connection)

            def handle_one_request(self) -> None:
                if api.dead:  # (a server gone: the kept-alive connections go with it)
                    self.close_connection = True
                    return
                super().handle_one_request()

            def _json(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_DELETE(self) -> None:
                u = urlparse(self.path)
                api.requests.append(("DELETE", u.path, parse_qs(u.query)))
                parts = u.path.strip("/").split("/")
                if self.headers.get("Content-Length"):
                    self.rfile.read(int(self.headers["Content-Length"]))
                if len(parts) == 6 and parts[4] == "pods":
                    pod = api.delete(parts[3], parts[5])
                    if pod is None:
                        return self._json(404, _status(404, "NotFound", f'pods "{parts[5]}" not found'))
                    return self._json(200, pod)
                self._json(404, _status(404, "NotFound", "not found"))

            def do_POST(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                u = urlparse(self.path)
                q = parse_qs(u.query)
                api.requests.append(("GET", u.path, q))
                parts = u.path.strip("/").split("/")
                if u.path in DISCOVERY:  # what kubectl asks before anything (its discovery)
                    return self._json(200, DISCOVERY[u.path])
                # /api/v1/namespaces/NS/pods[/NAME[/log|exec]] or /events
                if len(parts) < 5 or parts[:3] != ["api", "v1", "namespaces"]:
                    return self._json(404, _status(404, "NotFound", "the server could not find the requested resource"))
                ns, what = parts[3], parts[4]
                if ns in api.forbidden:
                    return self._json(
                        403,
                        _status(
                            403,
                            "Forbidden",
                            f'{what} is forbidden: User "system:serviceaccount:ci:edgetui" cannot list '
                            f'resource "{what}" in API group "" in the namespace "{ns}"',
                        ),
                    )
                if ns not in api.pods:
                    api.pods.setdefault(ns, {})
                if what == "events":
                    items = list(api.events.get(ns, []))
                    return self._json(
                        200,
                        {
                            "kind": "EventList",
                            "apiVersion": "v1",
                            "metadata": {"resourceVersion": str(api.rv)},
                            "items": items,
                        },
                    )
                if what != "pods":
                    return self._json(404, _status(404, "NotFound", "not found"))
                if len(parts) == 7 and parts[6] == "log":
                    text = api.logs.get((ns, parts[5]))
                    if text is None:
                        return self._json(404, _status(404, "NotFound", f'pods "{parts[5]}" not found'))
                    data = text.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if len(parts) == 7 and parts[6] == "exec":
                    return self._json(
                        403,
                        _status(
                            403, "Forbidden", f'pods "{parts[5]}" is forbidden: cannot create resource "pods/exec"'
                        ),
                    )
                if len(parts) == 6:
                    pod = api.pods[ns].get(parts[5])
                    return self._json(200, pod) if pod else self._json(404, _status(404, "NotFound", "not found"))
                if q.get("watch", [""])[0] in ("true", "1"):
                    return self._watch(ns, q)
                return self._list(ns, q)

            def _matches(self, pod: dict[str, Any], q: dict[str, list[str]]) -> bool:
                sel = q.get("labelSelector", [""])[0]
                labels = pod["metadata"].get("labels") or {}
                for term in filter(None, sel.split(",")):
                    k, _, v = term.partition("=")
                    if labels.get(k) != v:
                        return False
                return True

            def _list(self, ns: str, q: dict[str, list[str]]) -> None:
                token = q.get("continue", [""])[0]
                if token:
                    snap_id, _, off = base64.b64decode(token).decode().partition(":")
                    rv, items = api.snapshots[snap_id]
                    offset = int(off)
                else:
                    with api.cond:
                        rv = api.rv
                        items = [copy.deepcopy(p) for _n, p in sorted(api.pods[ns].items()) if self._matches(p, q)]
                    snap_id = str(len(api.snapshots))
                    api.snapshots[snap_id] = (rv, items)
                    offset = 0
                limit = int(q.get("limit", ["0"])[0] or 0) or len(items) or 1
                page = items[offset : offset + limit]
                meta: dict[str, Any] = {"resourceVersion": str(rv)}
                if offset + limit < len(items):
                    meta["continue"] = base64.b64encode(f"{snap_id}:{offset + limit}".encode()).decode()
                    meta["remainingItemCount"] = len(items) - offset - limit
                for p in page:  # list items carry no kind / apiVersion (the list's say it)
                    p.pop("kind", None)
                    p.pop("apiVersion", None)
                self._json(200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page})

            def _chunk(self, obj: dict[str, Any]) -> None:
                data = json.dumps(obj).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _watch(self, ns: str, q: dict[str, list[str]]) -> None:
                api.watch_starts += 1
                since = int(q.get("resourceVersion", ["0"])[0] or 0)
                with api.cond:
                    status = api.next_watch_status.pop(0) if api.next_watch_status else None
                    too_old = since and since < api.compacted
                if status is None and too_old and api.too_old == "status":
                    status = 410
                if status is not None:
                    return self._json(
                        status,
                        _status(status, "Expired", f"too old resource version: {since} ({api.compacted})"),
                    )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if too_old:
                    self._chunk(
                        {
                            "type": "ERROR",
                            "object": _status(410, "Expired", f"too old resource version: {since} ({api.compacted})"),
                        }
                    )
                    self.wfile.write(b"0\r\n\r\n")
                    return
                seen_cmd = api.command[0]
                sent = since
                with api.cond:
                    api.open_streams += 1
                try:
                    while True:
                        with api.cond:
                            while True:
                                if api.command[0] != seen_cmd:
                                    seen_cmd, action = api.command
                                    break
                                pending = [h for h in api.history if h[0] > sent and h[1] == ns and not api.hold]
                                if pending:
                                    action = "events"
                                    break
                                api.cond.wait(0.5)
                        if action == "events":
                            for rv, _ns, kind, obj in pending:
                                sent = rv
                                if self._matches(obj, q):
                                    self._chunk({"type": kind, "object": obj})
                            continue
                        if action == "bookmark":
                            self._chunk(
                                {
                                    "type": "BOOKMARK",
                                    "object": {
                                        "kind": "Pod",
                                        "apiVersion": "v1",
                                        "metadata": {
                                            "resourceVersion": str(api.rv),
                                            "annotations": {"k8s.io/initial-events-end": "true"},
                                        },
                                    },
                                }
                            )
                            sent = max(sent, api.rv) if not api.hold else sent
                            continue
                        if action == "error410":
                            self._chunk(
                                {"type": "ERROR", "object": _status(410, "Expired", "too old resource version")}
                            )
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        if action == "end":
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        if action == "drop":
                            data = b'{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"x'
                            self.wfile.write(f"{len(data) + 40:x}\r\n".encode() + data)
                            self.wfile.flush()
                            self.connection.shutdown(socket.SHUT_RDWR)
                            self.close_connection = True
                            return
                except (BrokenPipeError, ConnectionResetError):  # the client went away
                    return
                finally:
                    with api.cond:
                        api.open_streams -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="fake-kube-api", daemon=True).start()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.dead = True
            self.streams("end")
            self.server.shutdown()
            self.server.server_close()
            for c in list(self.conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:  # (already closed by its handler)
                    pass
            self.server = None

    def kubeconfig(self, path: Path, context: str = "fake", namespace: str = "sforge") -> Path:
        """A kubeconfig naming this server (a bearer token, plain HTTP on 127.0.0.1)."""
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "u", "user": {"token": "fake-token"}}],
                    "contexts": [
                        {"name": context, "context": {"cluster": "fake", "user": "u", "namespace": namespace}}
                    ],
                    "current-context": context,
                }
            )
        )
        return path
