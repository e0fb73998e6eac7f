"""Cost of SForge's pods in the live supervisor: a cluster of N pods (default 2,000) served by the
fake API server of the tests (tests/fake_kube_api.py, on 127.0.0.1) through the real lightkube client.

Times in this process:

* the first complete list (chunks of 250, ``continue`` followed) until the cache holds N pods;
* :meth:`PodEngine.refresh` after one pod changed (a MODIFIED event delivered by the watch), the
  converted pods kept (``_info_cache``): median of R rounds;
* the baseline, interleaved round by round in the same process: the same refresh with the cache
  emptied first (every pod converted again, as before the cache).

Prints the figures and the ratio to the baseline. Usage:
``.venv/bin/python bench/bench_pods.py [--pods N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_kube_api import FakeKubeApi, sforge_pod  # noqa: E402 - after sys.path is set above

from edgetui.hosts.cluster_config import ClusterConfig  # noqa: E402 - after sys.path is set above
from edgetui.hosts.pod_watch import PodEngine  # noqa: E402 - after sys.path is set above


def wait(cond, what: str, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.002)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    api = FakeKubeApi().start()
    for i in range(a.pods):
        api.put(sforge_pod(f"run-task{i % 50:02d}-r{i}"))
    kc = api.kubeconfig(Path(tempfile.mkdtemp()) / "kc")
    t0 = time.perf_counter()
    eng = PodEngine([ClusterConfig("b", str(kc), None, ("sforge",))], events_interval_s=0).start()
    ns = eng.namespaces[0]
    wait(lambda: ns.listed, "the first list")
    t_list = time.perf_counter() - t0
    wait(lambda: api.open_streams == 1, "the watch")
    eng.refresh()
    cached, full = [], []
    for r in range(a.rounds):
        for mode in ("cached", "full") if r % 2 == 0 else ("full", "cached"):
            gen = ns.generation
            api.put(sforge_pod(f"run-task00-r{r}", phase="Failed", terminated={"exitCode": r, "reason": "Error"}))
            wait(lambda gen=gen: ns.generation != gen, "the MODIFIED event")
            if mode == "full":
                eng._info_cache = {}
            t = time.perf_counter()
            eng.refresh()
            (cached if mode == "cached" else full).append(time.perf_counter() - t)
            assert eng.by_name[f"run-task00-r{r}"].exit_code == r
    eng.close()
    api.close()
    c, f = statistics.median(cached), statistics.median(full)
    print(f"pods: {a.pods}; first complete list (chunks of 250): {t_list * 1000:.0f} ms")
    print(f"refresh after one pod changed: {c * 1000:.2f} ms (converted pods kept)")
    print(f"baseline, every pod converted again: {f * 1000:.2f} ms")
    print(f"ratio: {c / f:.3f}  (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
