"""Containers of the watched runs: joining work, judge and game containers to runs, their states and
resource samples, the judge pollers, the gradings in flight and the operator's stop / kill / shell
(a part of :class:`edgetui.live.supervisor.Supervisor`; core: no Textual).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from edgetui.events import Kind
from edgetui.hosts.docker_watch import DockerWatch, work_names
from edgetui.hosts.container_info import ContainerInfo
from edgetui.live.judge import JudgePoller
from edgetui.live.run_state import RoundState, RunState
from edgetui.live.watch_context import WatchContext


#: the name under which a pod-backed run's work pod log is offered (``o``: opened in the pager)
POD_LOG = "pod.log"

#: the key of the cluster's engine among :attr:`ContainerJoin.engines` (no host has this name)
CLUSTER_KEY = "\x00k8s"


def grading_judges(rs: RunState) -> list[ContainerInfo]:
    """Judge containers of ``rs`` still grading: running, and their submission's report.json not
    written yet (SForge's containers ignore SIGTERM and are killed ~15 s after the report: a
    judge whose report is written is done)."""
    done_ids: set[str] = set()
    done_sids: set[str] = set()
    for rd in rs.rounds.values():
        if rd.has_report:
            done_ids.update(c[:12] for c in rd.container_ids)
            if rd.sid:
                done_sids.add(rd.sid)
    return [
        j
        for j in rs.judges
        if j.state == "running" and j.id[:12] not in done_ids and not (j.submission_id and j.submission_id in done_sids)
    ]


class ContainerJoin:
    """The engines (the local ``docker``, remote hosts' ``engines``) and judge pollers (``judge``
    for ``judge_url``, remote hosts' ``judges``), and what they say of the runs of ``ctx``.
    ``wake`` is called when an operator's action should be seen by a refresh at once."""

    def __init__(
        self,
        ctx: WatchContext,
        docker: Optional[DockerWatch],
        judge: Optional[JudgePoller],
        wake: Callable[[], None],
    ):
        self.ctx = ctx
        self.docker = docker
        self.judge = judge
        self.wake = wake
        #: remote hosts' engines and judge pollers by host name (add_engine / add_judge; edgetui.hosts)
        self.engines: dict[str, Any] = {}
        self.judges: dict[str, JudgePoller] = {}
        self.operator: dict[str, str] = {}  # container id/name -> "stop" | "kill" asked, not yet seen
        self.judges_on: set[str] = set()  # hosts of the engines that listed a judge container of a watched run
        self.unattributed: list[ContainerInfo] = []  # judge/game containers not joined to a run
        #: SForge's pods on Kubernetes (edgetui.hosts.pod_watch.PodEngine; add_cluster), or None
        self.cluster: Any = None
        self._log_dir: Optional[Path] = None  # pod logs read for the pager

    def add_cluster(self, engine) -> None:
        """Join the pods of ``engine`` (a :class:`~edgetui.hosts.pod_watch.PodEngine`) to the runs
        whose backend is ``k8s`` or whose work pod it lists, wherever their files are (this machine
        or an SSH host): only the containers moved to the cluster."""
        self.cluster = engine
        self.engines[CLUSTER_KEY] = engine

    def pod_log_file(self, run_key: str) -> Optional[Path]:
        """The work pod's log of ``run_key`` read now into a file of ours (the pager's), or None:
        no pod-backed run, or its namespace not up (never a wait on a cluster that is down)."""
        rs = self.ctx.runs.get(run_key)
        cl = self.cluster
        c = rs.container if rs is not None else None
        if cl is None or c is None or c.phase is None or c.state == "gone" or cl.state_of(c.host) != "up":
            return None
        try:
            text = cl.pod_log(c.name)
        except RuntimeError as e:  # said in the notes; the file is offered as not there
            self.ctx.note(str(e))
            return None
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="edgetui-pod-logs-"))
        p = self._log_dir / f"{c.name}.log"
        p.write_text(text, encoding="utf-8", errors="replace")
        return p

    def close(self) -> None:
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def _on_cluster(self, rs: RunState) -> bool:
        cl = self.cluster
        return cl is not None and (
            rs.info.backend == "k8s" or cl.work_container(rs.info.task_id, rs.info.run_id) is not None
        )

    # ---- engines: the local one and one per remote host (edgetui.hosts.remote_engine)
    def add_engine(self, host_name: str, engine) -> None:
        """Join the containers of ``engine`` (a :class:`~edgetui.hosts.remote_engine.RemoteEngine`,
        or anything with DockerWatch's interface) to the runs found under the roots of ``host_name``
        (and to those only); the local engine keeps the other runs."""
        self.engines[host_name] = engine

    def engine_of(self, rs: RunState):
        """The engine whose containers belong to ``rs``: its host's remote engine, else the local one."""
        if self.cluster is not None and self._on_cluster(rs):
            return self.cluster
        if self.engines:
            eng = self.engines.get(self.ctx.root_host.get(rs.key, ""))
            if eng is not None:
                return eng
        return self.docker

    def engines_ok(self, docker_ok: bool) -> dict:
        """Availability by ``id(engine)``: the local engine's from this refresh's listing, each
        remote engine's from its own thread's last listing (no I/O here)."""
        ok = {id(e): e.refresh() for e in self.engines.values()}
        if self.docker is not None:
            ok[id(self.docker)] = docker_ok
        return ok

    def listed_ids(self, engines_ok: dict) -> dict:
        """Short ids of the live containers of each available engine, by ``id(engine)``."""
        listed: dict[int, set[str]] = {}
        for eng in [self.docker, *self.engines.values()]:
            if eng is not None and engines_ok.get(id(eng)):
                listed[id(eng)] = {
                    c.id[:12]
                    for c in list(eng.containers.values())
                    if c.state in ("running", "created", "restarting", "paused")
                }
        return listed

    def _engine_groups(self) -> list:
        """(engine, its runs) for the local engine (when enabled) and every remote engine."""
        groups: dict[int, tuple] = {}
        if self.docker is not None:
            groups[id(self.docker)] = (self.docker, [])
        for eng in self.engines.values():
            groups.setdefault(id(eng), (eng, []))
        for rs in self.ctx.runs.values():
            eng = self.engine_of(rs)
            if eng is not None:
                groups[id(eng)][1].append(rs)
        return list(groups.values())

    def _engine_for_container(self, name_or_id: str):
        """The engine to act on ``name_or_id`` with: the engine of the run it is joined to (names
        repeat across hosts: siblings of one run on several machines), else the first engine
        listing it, else the local one."""
        if self.engines:
            for rs in list(self.ctx.runs.values()):
                for c in [rs.container, *rs.judges, *rs.games]:
                    if c is not None and (
                        c.name == name_or_id
                        or c.id == name_or_id
                        or (len(name_or_id) >= 12 and c.id.startswith(name_or_id))
                    ):
                        return self.engine_of(rs)
        for eng in self.engines.values():
            if eng.has(name_or_id):
                return eng
        return self.docker

    # ---- actions for the views
    def stop_container(self, name_or_id: str, timeout: int = 10) -> str:
        """Stop a container (``docker stop``, on the engine listing it: a remote host's over its SSH
        connection); returns a one-line outcome, never raises.

        The run whose work container this is shows as aborted with the flag
        ``stopped`` and raises no container_exit / container_gone alarm (the
        operator asked for it); the request is recorded as a container_state event."""
        eng = self._engine_for_container(name_or_id)
        if eng is None:
            return f"could not stop {name_or_id}: no engine lists it" if self.engines else "docker is disabled"
        return self._operator_act(name_or_id, "stop", lambda: eng.stop_container(name_or_id, timeout), eng)

    def kill_container(self, name_or_id: str) -> str:
        """Kill a container (``docker kill``); returns a one-line outcome, never raises (as :meth:`stop_container`,
        flag ``killed``)."""
        eng = self._engine_for_container(name_or_id)
        if eng is None:
            return f"could not kill {name_or_id}: no engine lists it" if self.engines else "docker is disabled"
        return self._operator_act(name_or_id, "kill", lambda: eng.kill_container(name_or_id), eng)

    def _operator_act(self, name_or_id: str, kind: str, fn: Callable[[], str], eng=None) -> str:
        self.operator[name_or_id] = kind  # before acting: the exit may be listed at once
        out = str(fn() or "")
        if out.startswith("could not"):
            self.operator.pop(name_or_id, None)
        kick = getattr(eng, "kick", None)
        if kick is not None:  # a remote engine lists in its own thread: now, not at its next interval
            kick()
        self.wake()
        return out

    def shell_command(self, container: str) -> list[str]:
        """argv for an interactive shell in ``container`` (``docker exec -it <id> bash|sh``; on a
        remote host ``ssh -t <host> docker exec -it …``, a second login by the system ssh)."""
        eng = self._engine_for_container(container)
        if eng is None:
            return ["docker", "exec", "-it", container, "sh"]
        return eng.shell_command(container)

    def _container_event(self, rs: RunState, c: ContainerInfo, state: str, now: float) -> None:
        data = {
            "id": c.id,
            "name": c.name,
            "role": c.role,
            "state": state,
            "exit_code": c.exit_code,
            "oom_killed": c.oom_killed,
            "host": c.host,
        }
        if c.submission_id:
            data["submission_id"] = c.submission_id
        extra = f" (exit {c.exit_code})" if state in ("exited", "dead") and c.exit_code is not None else ""
        if c.oom_killed:
            extra += " OOM-killed"
        self.ctx.events.record(
            rs, Kind.CONTAINER_STATE, now, f"{c.role} container {c.name}: {state}{extra}", data, c.id
        )

    def _operator_seen(self, rs: RunState, c: ContainerInfo, now: float) -> None:
        """Attach a pending operator stop/kill of container ``c`` to its run (recorded once)."""
        if not self.operator:
            return
        for ref in list(self.operator):
            if ref == c.name or (len(ref) >= 12 and c.id.startswith(ref)):
                kind = rs.operator_action = self.operator.pop(ref)
                self.ctx.events.record(
                    rs,
                    Kind.CONTAINER_STATE,
                    now,
                    f"work container {c.name}: {kind} asked by the operator",
                    {"id": c.id, "name": c.name, "role": "work", "state": c.state, "operator": kind, "host": c.host},
                    c.id,
                )

    def join(self, now: float, ok: Optional[dict] = None) -> None:
        """Join each engine's containers to its runs (``ok``: availability by ``id(engine)``; the
        engines not listed there, or listed False, are skipped)."""
        unattributed: list[ContainerInfo] = []
        for dw, runs in self._engine_groups():
            if ok is None or ok.get(id(dw)):
                unattributed += self._join_engine(dw, runs, now)
        self.unattributed = unattributed

    def _join_engine(self, dw, runs: list, now: float) -> list:
        by_name = dw.by_name
        local = dw is self.docker
        # pods: the engine finds a run's work pod (SForge cuts task ids in pod names: two tasks
        # sharing their first 15 characters under one run id share a name; a pod whose image does
        # not tell them apart, claimed by two runs, is joined to neither)
        finder = getattr(dw, "work_container", None)
        pods: dict[str, Optional[ContainerInfo]] = {}
        if finder is not None:
            claims: dict[str, int] = {}
            for rs in runs:
                p = finder(rs.info.task_id, rs.info.run_id)
                pods[rs.key] = p
                if p is not None:
                    claims[p.id] = claims.get(p.id, 0) + 1
            for key, p in pods.items():
                if p is not None and p.inferred and claims[p.id] > 1:
                    pods[key] = None
                    self.ctx.note(f"pod {p.name}: its name fits {claims[p.id]} runs and its image none: not joined")
        # work containers, by the names each run's container would have
        for rs in runs:
            if rs.info.backend == "e2b":
                continue  # managed sandboxes: no container of this run on any engine (never "gone")
            c = None
            if finder is not None:
                c = pods.get(rs.key)
            else:
                for n in work_names(rs.info.task_id, rs.info.run_id):
                    c = by_name.get(n)
                    if c is not None:
                        break
            if (
                c is not None
                and local
                and rs.loc.host != self.ctx.host
                and any(
                    r.loc.host == self.ctx.host
                    and r.info.task_id == rs.info.task_id
                    and r.info.run_id == rs.info.run_id
                    for r in self.ctx.runs.values()
                    if r is not rs
                )
            ):
                c = None  # the local run of that name owns it
            if c is not None:
                c = c.model_copy()
                c.task_id, c.run_id = rs.info.task_id, rs.info.run_id
                if c.id != rs.container_seen_id and rs.container_seen_id is not None:
                    rs.operator_action = None  # a new container (auto-resume, re-run)
                self._operator_seen(rs, c, now)
                prev = rs.container_state
                if (
                    c.id != rs.container_seen_id
                    or prev != c.state
                    or (c.oom_killed and not (rs.container and rs.container.oom_killed))
                ):
                    if c.state in ("exited", "dead"):
                        if prev not in ("exited", "dead") or c.id != rs.container_seen_id:
                            rs.container_ended_t = now
                    else:
                        rs.container_ended_t = None
                    self._container_event(rs, c, c.state, now)
                rs.container_seen_id = c.id
                rs.container_state = c.state
                if rs.container is not None and rs.container.id == c.id:
                    c.cpu_percent, c.mem_bytes = rs.container.cpu_percent, rs.container.mem_bytes
                rs.container = c
                if c.image_id and c.image_id not in rs.work_images:
                    rs.work_images.append(c.image_id)
                if rs.token is None:
                    tok = dw.token_of(c.id)
                    if tok:
                        rs.token = tok
                        self.ctx.rec.add_secret(tok)
            elif rs.container_seen_id is not None and rs.container_state != "gone":
                gone = rs.container or ContainerInfo(
                    id=rs.container_seen_id,
                    name=dw.work_name(rs.info.task_id, rs.info.run_id)
                    if finder is not None
                    else work_names(rs.info.task_id, rs.info.run_id)[0],
                    role="work",
                    host=self.ctx.host,
                )
                gone = gone.model_copy(update={"state": "gone", "cpu_percent": None, "mem_bytes": None})
                self._operator_seen(rs, gone, now)  # a pod the operator deleted is never listed again
                rs.container = gone
                rs.container_state = "gone"
                rs.container_ended_t = now
                self._container_event(rs, gone, "gone", now)
        # judge containers: by the container ids in run_instance.log, else the submission id
        by_cid: dict[str, tuple[RunState, RoundState]] = {}
        by_sid: dict[str, tuple[RunState, Optional[str]]] = {}
        for rs in runs:
            for rd in rs.rounds.values():
                for cid in rd.container_ids:
                    by_cid[cid[:12]] = (rs, rd)
                if rd.sid:
                    by_sid[rd.sid] = (rs, rd.name)
            for sid, rnd in rs.tick_sids.items():
                by_sid.setdefault(sid, (rs, rnd))
        judges: dict[str, list[ContainerInfo]] = {}
        games: dict[str, list[ContainerInfo]] = {}
        unattributed: list[ContainerInfo] = []
        judge_owner = getattr(dw, "judge_owner", None)
        windows: list[tuple] = []
        if judge_owner is not None:  # pods: a submission by its sanitised, maybe cut, name and its time
            for rs in runs:
                limit = float(rs.task.eval_timeout or 600) + 900.0
                sids = {rd.sid: rd.first_seen for rd in rs.rounds.values() if rd.sid}
                for sid, rnd in rs.tick_sids.items():  # (auto rounds: the tick log's ids, before any report)
                    rd0 = rs.rounds.get(rnd) if rnd else None
                    sids.setdefault(sid, rd0.first_seen if rd0 is not None else rs.first_seen)
                for sid, t0 in sids.items():
                    windows.append((rs, rs.info.task_id, sid, t0 - 900.0, t0 + limit))
        for c in list(dw.containers.values()):
            if c.role == "judge":
                hit = by_cid.get(c.id[:12])
                owner = hit[0] if hit else None
                if owner is None and c.submission_id in by_sid:
                    cand = by_sid[c.submission_id][0]
                    if cand.info.task_id == c.task_id:
                        owner = cand
                if owner is None and judge_owner is not None and c.submission_id is None:
                    m = judge_owner(c, windows)
                    if m is not None:
                        owner = m[0]
                        c = c.model_copy(
                            update={"submission_id": m[1], "task_id": owner.info.task_id, "inferred": m[2]}
                        )
                if owner is None:
                    unattributed.append(c)
                else:
                    judges.setdefault(owner.key, []).append(c)
            elif c.role == "game":
                owner = None
                if c.submission_id in by_sid:
                    owner = by_sid[c.submission_id][0]
                else:
                    cands = [
                        r
                        for r in runs
                        if r.info.task_id == c.task_id
                        and not r.finished
                        and (r.task.game_mode or any(rd.kind == "game" for rd in r.rounds.values()))
                    ]
                    if len(cands) == 1:
                        owner = cands[0]
                if owner is None:
                    unattributed.append(c)
                else:
                    games.setdefault(owner.key, []).append(c)
        for rs in runs:
            new_j = judges.get(rs.key, [])
            new_g = games.get(rs.key, [])
            seen = {}
            if new_j:
                self.judges_on.add(dw.host)
            for c in new_j:
                if c.image_id and c.image_id not in rs.judge_images:
                    rs.judge_images.append(c.image_id)
            for c in new_j + new_g:
                seen[c.id] = c.state
                if rs.judge_states.get(c.id) != c.state:
                    self._container_event(rs, c, c.state, now)
            for cid in rs.judge_states:
                if cid not in seen:
                    old = next((c for c in rs.judges + rs.games if c.id == cid), None)
                    if old is not None:
                        self._container_event(rs, old.model_copy(update={"state": "gone"}), "gone", now)
            rs.judge_states = seen
            rs.judges, rs.games = new_j, new_g
        return unattributed

    def sample_stats(self, now: float, ok: Optional[dict] = None) -> None:
        for dw, runs in self._engine_groups():
            if ok is None or ok.get(id(dw)):
                self._sample_engine(dw, runs, now)

    def _sample_engine(self, dw, runs: list, now: float) -> None:
        targets = {
            rs.container.id: rs.key
            for rs in runs
            if rs.container is not None and rs.container.state == "running" and not rs.deleted
        }
        samples = dw.sample(targets)
        for cid, smp in samples.items():
            rs = self.ctx.runs.get(targets.get(cid, ""))
            if rs is None or rs.container is None:
                continue
            rs.container.cpu_percent = smp.get("cpu_percent")
            rs.container.mem_bytes = smp.get("mem_bytes")
            if smp.get("mem_limit_bytes") and not rs.container.mem_limit_bytes:
                rs.container.mem_limit_bytes = smp.get("mem_limit_bytes")
            rs.cpu_percent, rs.mem_bytes = smp.get("cpu_percent"), smp.get("mem_bytes")
            cpu = smp.get("cpu_percent")
            mem = smp.get("mem_bytes")
            summ = f"cpu {cpu:.0f}%" if cpu is not None else "cpu ?"
            summ += f", mem {mem / 2**20:.0f} MiB" if mem is not None else ""
            self.ctx.events.record(
                rs,
                Kind.RESOURCE_SAMPLE,
                now,
                summ,
                {
                    "container": rs.container.name,
                    "id": cid,
                    "cpu_percent": cpu,
                    "mem_bytes": mem,
                    "mem_limit_bytes": smp.get("mem_limit_bytes"),
                    "sampled_at": smp.get("t"),
                },
                "stats:" + cid,
            )

    # ================================================================== judge
    def add_judge(self, host_name: str, poller) -> None:
        """Poll the runs found under the roots of ``host_name`` with ``poller`` (a
        :class:`~edgetui.live.judge.JudgePoller`, e.g. on that host's judge URL forwarded over its
        SSH connection, :mod:`edgetui.hosts.forward`) instead of the ``judge_url`` poller."""
        self.judges[host_name] = poller

    def judge_of(self, rs: RunState):
        """The judge poller of ``rs``: its host's (:meth:`add_judge`), else the ``judge_url`` one."""
        p = self.judges.get(self.ctx.root_host.get(rs.key, "")) if self.judges else None
        return p or self.judge

    def poll_judges(self, now: float) -> None:
        by_poller: dict[int, tuple] = {}
        for rs in self.ctx.runs.values():
            if not (rs.token and not rs.deleted and not rs.finished):
                continue
            p = self.judge_of(rs)
            if p is not None:
                by_poller.setdefault(id(p), (p, {}))[1][rs.key] = rs.token
        for p in [self.judge, *self.judges.values()]:
            if p is not None:
                by_poller.setdefault(id(p), (p, {}))
        for p, tokens in by_poller.values():
            if getattr(p, "holding", False):  # its admin secret is still being read (a remote host's)
                continue
            self._apply_views(p.poll(tokens))

    def _apply_views(self, views: dict) -> None:
        for key, view in views.items():
            rs = self.ctx.runs.get(key)
            if rs is not None and view.ok:
                before = rs.history.best_round if rs.history is not None else None
                rs.history = view
                if rs.task.assumed and view.best_round and view.best_round != before:
                    rs.dirty_files = True  # the judge's best checks the assumed policy (finalize_run)

    # ================================================================== gradings
    def grading_state(self, rs: RunState, now: float, docker_ok: bool, all_ids: set[str]) -> None:
        s = self.ctx.settings
        live_ids = {c.id[:12] for c in rs.judges if c.state in ("running", "created", "restarting", "paused")}
        limit = float(rs.task.eval_timeout or 600) + 900.0
        for rd in rs.rounds.values():
            if rd.kind in ("game", "manual") or rd.has_report:
                rd.in_flight = False
                if rd.has_report:
                    rd.failed = None
                continue
            judge_up = any(cid[:12] in live_ids or cid[:12] in all_ids for cid in rd.container_ids) or (
                rd.sid is not None  # a judge pod: joined by its submission (no Docker id in run_instance.log)
                and any(
                    j.phase is not None and j.submission_id == rd.sid and j.state in ("running", "created")
                    for j in rs.judges
                )
            )
            failed = None
            if judge_up:
                rd.judge_gone_since = None
                rd.judge_seen = True
            elif docker_ok and rd.judge_seen:  # seen on this engine, now gone (a judge on another engine
                # or cluster is never seen here: only its log and the stale rule apply)
                if rd.judge_gone_since is None:
                    rd.judge_gone_since = now
                if now - rd.judge_gone_since >= s.grading_grace_s:
                    failed = rd.log_error or "judge container gone without report.json"
            if (
                failed is None
                and rd.log_terminal
                and rd.terminal_seen is not None
                and not judge_up
                and now - rd.terminal_seen >= s.grading_grace_s
            ):
                failed = rd.log_error or "judge finished without report.json"
            eng = self.engine_of(rs)
            if (
                failed is None
                and not judge_up
                and not rd.judge_seen
                and docker_ok
                and rs.info.backend != "e2b"  # its judges are sandboxes: never listed by an engine
                and eng is not None
                and eng.host in self.judges_on
                and (eng is not self.docker or rs.loc.host == self.ctx.host)
                and now - rd.first_seen >= s.grading_start_grace_s
            ):
                failed = rd.log_error or (
                    f"no judge container appeared in {int(now - rd.first_seen)} s and no report.json"
                )
            if failed is None and not judge_up and now - rd.first_seen > limit:
                failed = rd.log_error or f"no report.json after {int(now - rd.first_seen)} s"
            if failed is not None and rd.failed is None:
                rd.failed = failed
                rs.dirty_files = True
            rd.in_flight = failed is None and rd.failed is None
