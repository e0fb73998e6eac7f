"""Pod-backed runs through the real app: Textual Pilot over EdgeTUIApp in live mode, the real
supervisor and the real lightkube client watching a fake Kubernetes API server on 127.0.0.1
(tests/fake_kube_api.py: no real API server can run here, issue 40). A suite of pods comes and
goes; the runs screen's host column, statuses and alarms follow; the delete action reaches the API."""

from __future__ import annotations

import json

import pytest

from fake_kube_api import FakeKubeApi, pod_event, sforge_pod
from test_live_docker import make_run
from waits import pilot_wait_for

from edgetui.hosts.cluster_config import ClusterConfig
from edgetui.hosts.pod_watch import PodEngine
from edgetui.views.app import EdgeTUIApp, LiveConfig
from edgetui.views.screens.confirm import ConfirmScreen
from edgetui.views.screens.hosts import HostsScreen, host_cells
from edgetui.views.screens.live_parts import live_status_text
from edgetui.views.screens.runs import RunsScreen
from edgetui.views.widgets.runs_table import RunsTable


async def _until(pilot, pred, timeout: float = 20.0, what: str = "condition"):
    return await pilot_wait_for(pilot, pred, timeout, what, 0.2, ignore=(Exception,))


def _rows(screen) -> list[str]:
    t = screen.query_one(RunsTable)
    return [" ".join(str(getattr(c, "plain", c)) for c in t.get_row_at(i)) for i in range(t.row_count)]


def _row(screen, run_id: str) -> str:
    return next((r for r in _rows(screen) if f" {run_id} " in f" {r} "), "")


def _live(app, run_id: str):
    return next((r for r in app.supervisor.last_runs if r.run_id == run_id), None)


@pytest.fixture
def api():
    a = FakeKubeApi(("sforge",), forbidden=("locked",)).start()
    yield a
    a.close()


@pytest.mark.asyncio
async def test_pods_come_and_go_and_the_runs_screen_follows(tmp_path, api, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "edgetui").mkdir(parents=True)
    (tmp_path / "config" / "edgetui" / "alarms.toml").write_text("container_grace_s = 0\n")
    root = tmp_path / "runs"
    root.mkdir()
    for rid in ("k1", "k2", "k3"):
        td = make_run(root, rid, "gitlet")
        (td / "run_config.json").write_text(json.dumps({"backend": "k8s", "task_id": "gitlet", "run_id": rid}))
    api.put(sforge_pod("run-gitlet-k1", token="a" * 32))
    api.put(
        sforge_pod(
            "run-gitlet-k2",
            phase="Pending",
            node=None,
            waiting={"reason": "ImagePullBackOff", "message": 'Back-off pulling image "reg/edgebench.work.gitlet:1"'},
        )
    )
    api.put(sforge_pod("run-gitlet-k3"))
    api.events["sforge"] = [
        pod_event("run-gitlet-k3", "FailedScheduling", "0/3 nodes are available: 3 Insufficient memory.")
    ]
    kc = api.kubeconfig(tmp_path / "kubeconfig")
    app = EdgeTUIApp(
        tmp_path / "live.duckdb",
        live=LiveConfig(
            [root],
            home=True,
            interval=0.3,
            docker=False,
            pods=lambda wake, hosts: PodEngine(
                [ClusterConfig("c", str(kc), None, ("sforge", "locked"))], on_change=wake, events_interval_s=0.2
            ),
        ),
        on_empty=lambda p: None,
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs screen")
        screen = app.screen
        # the host column says context/namespace for pod-backed runs
        await _until(
            pilot,
            lambda: all("fake/sforge" in _row(screen, r) for r in ("k1", "k2", "k3")),
            what="the pods joined to the runs",
        )
        assert "running" in _row(screen, "k1")
        k1 = _live(app, "k1")
        assert k1.cluster == "fake/sforge" and k1.container.node == "node-a" and k1.container.phase == "Running"
        # the cluster's words raised as alarms: ImagePullBackOff (waiting reason), FailedScheduling (event)
        await _until(pilot, lambda: "pod_event" in _live(app, "k2").active_alarms, what="ImagePullBackOff alarm")
        await _until(pilot, lambda: "pod_event" in _live(app, "k3").active_alarms, what="FailedScheduling alarm")
        msgs = [a.message for a in _live(app, "k3").alarms]
        assert any("FailedScheduling: 0/3 nodes are available: 3 Insufficient memory." in m for m in msgs)
        assert any("ImagePullBackOff" in a.message for a in _live(app, "k2").alarms)
        # the work pod is OOM-killed: the run says so
        api.put(
            sforge_pod(
                "run-gitlet-k1",
                phase="Failed",
                token="a" * 32,
                terminated={"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-12-06T03:30:00Z"},
            )
        )
        await _until(pilot, lambda: "oom" in _live(app, "k1").active_alarms, what="the OOM alarm")
        assert _live(app, "k1").container.exit_code == 137
        # the live run screen's status line says it in the cluster's terms
        line = live_status_text(_live(app, "k1"), 0.0, 160).plain
        assert "exited exit 137 OOM" in line and "Failed" in line and "on node-a (fake/sforge)" in line
        # its log, for the pager (o); a shell needs kubectl (none here: said, not run)
        api.logs[("sforge", "run-gitlet-k1")] = "agent started\nKilled\n"
        rk = _live(app, "k1").run_key
        log = app.live_actions.file_path(rk, "pod.log")
        assert log is not None and open(log).read() == "agent started\nKilled\n"
        assert app.live_actions.file_path(_live(app, "k1").run_key, "no-such-file") is None
        app.supervisor.cluster.kubectl = ""
        with pytest.raises(RuntimeError, match="kubectl is not installed"):
            app.live_actions.shell_argv(rk)
        # k3's pod is deleted while the watch misses it (the stream drops): the relist finds it gone
        api.hold = True
        api.delete("sforge", "run-gitlet-k3")
        api.compact()
        api.streams("drop")
        await _until(pilot, lambda: _live(app, "k3").status == "gone", what="k3 gone after the relist")
        api.hold = False
        ns = app.supervisor.cluster.namespaces[0]
        assert [(d.name, d.how) for d in ns.deletions] == [("run-gitlet-k3", "relist")]
        # the hosts view: the namespace up, the forbidden one said as such
        await pilot.press("H")
        await _until(pilot, lambda: isinstance(app.screen, HostsScreen), what="hosts view")
        await _until(
            pilot,
            lambda: {r.name: r.kind for r in app.screen.rows}.get("fake/locked") == "forbidden",
            what="the forbidden namespace row",
        )
        cells = {r.name: host_cells(r, 0.0) for r in app.screen.rows}
        assert cells["fake/sforge"][1].endswith("up") and cells["fake/sforge"][5] == "3"
        await pilot.press("escape")
        # delete k2's pod from the runs screen (x, confirmed): the API gets the DELETE
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="back to the runs")
        t = screen.query_one(RunsTable)
        for _ in range(t.row_count):
            if "k2" in _rows(screen)[t.cursor_row].split():
                break
            await pilot.press("down")
        await pilot.press("x")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        await pilot.press("y")
        await _until(
            pilot,
            lambda: any(m == "DELETE" and p.endswith("/pods/run-gitlet-k2") for m, p, _q in api.requests),
            what="the DELETE request",
        )
        await _until(pilot, lambda: _live(app, "k2").container.state == "gone", what="k2's pod gone")
        assert _live(app, "k2").operator_action == "stop" and "k2" in _row(screen, "k2")
