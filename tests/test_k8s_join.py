"""Pods joined to runs by the real supervisor, the pods read through the real lightkube client from
a fake API server on 127.0.0.1 (tests/fake_kube_api.py; no real one can run here): SForge's cut
names are never parsed blindly (two tasks sharing their first 15 characters under one run id)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_kube_api import FakeKubeApi, sforge_pod
from test_live_docker import make_run, settings, wait_for

from edgetui.hosts.cluster_config import ClusterConfig
from edgetui.hosts.config import load_clusters, load_hosts
from edgetui.hosts.pod_watch import PodEngine, k8s_name, work_pod_name
from edgetui.live.supervisor import Supervisor
from edgetui.store.database import open_db

ROOT = Path(__file__).resolve().parents[1]
TASK_A = "database_engine_optimisation"
TASK_B = "database_engine_v2"


@pytest.fixture
def cluster(tmp_path):
    api = FakeKubeApi().start()
    root = tmp_path / "runs"
    root.mkdir()
    for task in (TASK_A, TASK_B):
        td = make_run(root, "r1", task)
        (td / "run_config.json").write_text(json.dumps({"backend": "k8s"}))
    eng = PodEngine(
        [ClusterConfig("c", str(api.kubeconfig(tmp_path / "kc")), None, ("sforge",))],
        backoff_first_s=0.05,
        events_interval_s=0,
    ).start()
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, settings=settings())
    sup.add_cluster(eng)
    yield api, sup
    sup.close()
    conn.close()
    api.close()


def _by_task(runs) -> dict:
    return {r.task_id: r for r in runs}


def test_two_tasks_cut_to_one_pod_name_join_by_the_pods_image(cluster):
    api, sup = cluster
    name = work_pod_name(TASK_A, "r1")
    assert name == work_pod_name(TASK_B, "r1") == "run-database-engine-r1"
    # the pod's image names its task: it joins that run only
    api.put(sforge_pod(name, image=f"reg.example/edgebench.work.{TASK_B}:0a1b2c3d4e5f"))
    runs = wait_for(
        sup, lambda rs: (r := _by_task(rs).get(TASK_B)) is not None and r.container is not None, what="B's pod"
    )
    a, b = _by_task(runs)[TASK_A], _by_task(runs)[TASK_B]
    assert b.container.name == name and b.cluster == "fake/sforge"
    assert not b.container.inferred
    assert a.container is None and a.cluster is None


def test_a_pod_whose_image_does_not_tell_joins_neither_run(cluster):
    api, sup = cluster
    name = work_pod_name(TASK_A, "r1")
    api.put(sforge_pod(name, image="reg.example/some-image:1"))
    runs = wait_for(
        sup,
        lambda rs: any("fits 2 runs" in m for m in sup.messages) and len(rs) == 2,
        what="the ambiguity said",
    )
    assert all(r.container is None for r in runs)


def test_the_hosts_files_clusters_section(tmp_path):
    f = tmp_path / "hosts.toml"
    f.write_text(
        '[hosts.gpu-1]\nssh = "me@10.0.0.1"\nroots = ["/srv/runs"]\n\n'
        '[clusters.pool]\nkubeconfig = "~/.kube/pool.yaml"\ncontext = "pool-admin"\nnamespaces = ["sforge", "sforge-b"]\n\n'
        "[clusters.plain]\n"
    )
    assert [h.name for h in load_hosts(f)] == ["gpu-1"]
    pool, plain = load_clusters(f)
    assert (pool.name, pool.kubeconfig, pool.context, pool.namespaces) == (
        "pool",
        "~/.kube/pool.yaml",
        "pool-admin",
        ("sforge", "sforge-b"),
    )
    assert (plain.kubeconfig, plain.context, plain.namespaces) == (None, None, ("default",))
    f.write_text('[clusters.bad]\nnamespaces = ["Not_A_Namespace"]\n')
    with pytest.raises(ValueError, match=r"hosts.toml: \[clusters.bad\]: namespaces must be a list"):
        load_clusters(f)
    f.write_text('[clusters.bad]\nnamespace = "x"\n')
    with pytest.raises(ValueError, match="unknown key 'namespace'"):
        load_clusters(f)
    assert load_clusters(tmp_path / "none.toml") == []


def test_judge_pods_join_their_submission_exactly_or_inferred_by_a_cut_name(cluster, tmp_path):
    api, sup = cluster
    td = tmp_path / "runs" / "r1" / TASK_A
    sid_short = "3f9c0a1b2d4e"
    sid_long = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"
    for rnd, sid in (("agent-1", sid_short), ("agent-2", sid_long)):
        (td / "submissions" / rnd).mkdir(parents=True)
        (td / "submissions" / rnd / "report.json").write_text(
            json.dumps({"submission_id": sid, "total_tests": 3, "passed": 1, "pass_rate": 1 / 3})
        )
    exact = k8s_name(f"edgebench.judge.{TASK_A}.{sid_short}")
    cut = k8s_name(f"edgebench.judge.{TASK_A}.{sid_long}")
    assert len(cut) == 63 and not cut.endswith(sid_long)  # the end of the id is lost
    api.put(sforge_pod(exact, image=f"reg/edgebench.judge.{TASK_A}:1"))
    runs = wait_for(sup, lambda rs: len(_by_task(rs)[TASK_A].judges) == 1, what="the exact join")
    j = _by_task(runs)[TASK_A].judges[0]
    assert (j.name, j.submission_id, j.inferred) == (exact, sid_short, False)
    # the cut name: joined by its prefix (no other submission shares it), said to be inferred
    api.put(sforge_pod(cut, image=f"reg/edgebench.judge.{TASK_A}:1"))
    runs = wait_for(sup, lambda rs: len(_by_task(rs)[TASK_A].judges) == 2, what="the inferred join")
    j2 = next(j for j in _by_task(runs)[TASK_A].judges if j.name == cut)
    assert j2.submission_id == sid_long and j2.inferred
    assert _by_task(runs)[TASK_B].judges == []


def test_a_finished_run_asleep_wakes_when_its_work_pod_runs(tmp_path):
    """A finished run falls asleep; a running work pod of its name (a re-run in place) wakes it."""
    root = tmp_path / "runs"
    src = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800"
    shutil.copytree(src, root / src.name, symlinks=True)
    api = FakeKubeApi().start()
    eng = PodEngine(
        [ClusterConfig("c", str(api.kubeconfig(tmp_path / "kc")), None, ("sforge",))],
        backoff_first_s=0.05,
        events_interval_s=0,
    ).start()
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, settings=settings(dormant_after_s=0))
    sup.add_cluster(eng)
    try:
        wait_for(sup, lambda rs: bool(sup.dormant), what="the finished run asleep")
        key = next(iter(sup.dormant))
        rs = sup.dormant[key]
        task = rs.info.task_id
        api.put(sforge_pod(work_pod_name(task, rs.info.run_id), image=f"reg/edgebench.work.{task}:1"))
        wait_for(sup, lambda rs: key in sup.runs and key not in sup.dormant, what="the run awake")
    finally:
        sup.close()
        conn.close()
        api.close()
