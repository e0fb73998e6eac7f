"""The bundled sample runs: which runs ``generate.py`` writes into ``sample_runs/``, in what order,
and which of the folder's outputs it owns (deletes and rewrites).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .game_run import build_game
from .gitlet_run import build_gitlet
from .gw_run import GWRun, gw_task
from .legacy_run import build_legacy
from .readme import write_readme
from .run_folder import write_task
from .truth import analyse_claude, write_truth
from .vrp_run import build_vrp

# Every top-level output the generator owns (deleted and rewritten on each run).
OWNED = ("tasks", "runs", "_truth", "README.md")
# Inside OWNED, the outputs of make_judge_run.py (a run recorded with the real SForge judge, not
# generated): left in place when the generator clears and rewrites its own outputs.
KEEP = ("runs/judge-demo-001", "tasks/judge_demo_sum.json", "_truth/judge-demo-001__judge_demo_sum.json")


def build_gw(root: Path) -> dict:
    task = gw_task()
    write_task(root, task)
    run = GWRun(root, task)
    spec = run.build()
    data = (run.tdir / "agent_output.txt").read_bytes()
    spec["transcript"]["analysis"] = analyse_claude(data)
    spec["transcript"]["events"] = [e for e in spec["transcript"]["events"] if e["epoch"] <= run.t_kill]
    for k in ("stats",):
        spec["transcript"].pop(k, None)
    spec["transcript"].pop("usage_totals", None)
    common = {
        "agent": "claude-code",
        "model": run.model,
        "started_at_epoch": run.started,
        "exercises": [
            "12-hour score task (structured_json, score_first, linear rescale)",
            "k8s backend (pod names, __SFORGE_EXIT__ marker, container clock skew)",
            "auto-resume after an API error (second init in the same file)",
            "cooldown rejection, --list, shell-tool timeout, drain at the end",
        ],
    }
    return write_truth(run, common, spec, run.index)


BENCHMARK_YAML = """# synthetic benchmark metadata so that sforge.harness.task_spec can load these tasks
name: edgebench
base_images:
  python311_sci:
    image: python:3.11-slim
    setup_cmds:
      - pip install numpy scipy healpy pyyaml
  python311:
    image: python:3.11-slim
    setup_cmds:
      - pip install pytest
"""

#: (name, function(root) -> truth), in the order the runs are written (and numbered in the README)
BUILDERS = [
    ("gw", build_gw),
    ("gitlet", build_gitlet),
    ("vrp", build_vrp),
    ("game", build_game),
    ("legacy", build_legacy),
]


def _clear(p: Path, rel: str) -> None:
    """Delete ``p`` (a file or a tree) except the paths in KEEP (relative to the samples folder)."""
    if rel in KEEP or not (p.exists() or p.is_symlink()):
        return
    if p.is_dir() and not p.is_symlink():
        if any(k.startswith(rel + "/") for k in KEEP):
            for child in p.iterdir():
                _clear(child, f"{rel}/{child.name}")
        else:
            shutil.rmtree(p)
    else:
        p.unlink()


def write_samples(root: Path, only: set[str] = frozenset()) -> None:
    """Delete and rewrite the OWNED outputs under ``root`` (except KEEP); with ``only``, write only
    those runs (by BUILDERS name) and no README."""
    for name in OWNED:
        _clear(root / name, name)
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    (root / "tasks" / "BENCHMARK.yaml").write_text(BENCHMARK_YAML)
    truths = []
    for name, fn in BUILDERS:
        if only and name not in only:
            continue
        truths.append(fn(root))
    if not only:
        write_readme(root, truths)
