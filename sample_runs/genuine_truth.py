#!/usr/bin/env python3
"""Write ``genuine/_truth/<run_id>__<task>.json``: SForge's own visualizer view of each genuine run
(``sforge.visualizer.scanner``), the truth the tests hold edgetui to.

usage: python sample_runs/genuine_truth.py sample_runs/genuine   (with the sforge package installed)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sforge.visualizer.scanner import RunsIndex
from sforge.visualizer.server import _load_task_meta


def main(out: Path) -> None:
    idx = RunsIndex(out / "runs", task_meta=_load_task_meta(out / "tasks"))
    truth = out / "_truth"
    truth.mkdir(exist_ok=True)
    for r in idx.list_runs():
        kinds: dict[str, int] = {}
        for s in r.submissions:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        view = {
            "made_by": "the real SForge 1.1.0 harness with a scripted agent CLI (sample_runs/real_sforge)",
            "run_id": r.run_id,
            "task": r.task,
            "has_final": r.has_final,
            "aborted": r.aborted,
            "infra_error": r.infra_error,
            "best_round": r.best_round,
            "best_pass_rate": r.best_pass_rate,
            "best_score": r.best_score,
            "total_rounds": r.total_rounds,
            "submissions_by_kind": kinds,
            "n_submissions": len(r.submissions),
        }
        (truth / f"{r.run_id}__{r.task}.json").write_text(json.dumps(view, indent=1, sort_keys=True) + "\n")
        print(f"{r.run_id}/{r.task}: best {r.best_round} ({r.best_pass_rate}, {r.best_score})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
