"""Which runs are signed as images of remote roots is said by the caller (ingest_paths' ``images``,
the supervisor's roots given with their host), not by a process-wide list that a Mirror's
construction changed for every later signature (issue 35, item 3)."""

import shutil
from pathlib import Path

from edgetui.hosts.local import LocalHost
from edgetui.hosts.mirror import Mirror
from edgetui.hosts.signature import image_prefixes, in_image, tree_signature
from edgetui.live.supervisor import Supervisor
from edgetui.store.database import open_db

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs" / "runs"


def _a_run(top: Path) -> Path:
    run = next(p for p in SAMPLES.iterdir() if p.is_dir() and (p / "run_config.json").exists())
    shutil.copytree(run, top / run.name)
    return next(p for p in (top / run.name).iterdir() if p.is_dir())


def test_a_mirror_made_elsewhere_does_not_change_a_signature(tmp_path):
    task_dir = _a_run(tmp_path / "runs")
    before = tree_signature(LocalHost(), str(task_dir)).digest
    Mirror(LocalHost(), "/srv/runs", tmp_path / "runs")  # another mirror's image at the same place
    assert tree_signature(LocalHost(), str(task_dir)).digest == before  # before: signed without inodes
    assert tree_signature(LocalHost(), str(task_dir), image=True).digest != before  # said explicitly


def test_image_prefixes_and_the_supervisor_roots(tmp_path):
    prefixes = image_prefixes([tmp_path / "img", str(tmp_path / "img") + "/"])
    assert prefixes == (str(tmp_path / "img") + "/",)
    assert in_image(tmp_path / "img" / "run" / "task", prefixes)
    assert not in_image(tmp_path / "img2" / "run" / "task", prefixes) and not in_image(tmp_path, ())
    conn = open_db(tmp_path / "db.duckdb")
    try:
        sup = Supervisor(conn, [tmp_path / "local", (tmp_path / "img", "box")], docker_client=None)
        assert sup.image_roots == prefixes  # only the root given with its host
        sup.close()
    finally:
        conn.close()
