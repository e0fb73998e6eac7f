#!/usr/bin/env python3
"""Check the generated sample runs with SForge's own code (not a test; run it by hand).

    .venv/bin/python sample_runs/check_with_sforge.py

For every `_truth/*.json` it:

* scans `runs/` with `sforge.visualizer.scanner.RunsIndex` (task meta from `tasks/` as the visualizer
  loads it) and compares best round / score / round counts with the truth file;
* parses `agent_output.txt` with the visualizer's trajectory parsers (Claude stream-json or Codex text);
* re-grades every `test_output.txt` with `sforge.harness.grading.grade_output` using the real TaskSpec
  and compares the result (and `rescale_score`) with `report.json`;
* recomputes the policy best of `run_history.json` / `game_history.json` with `sforge.harness.selection`;
* compares `agent_prompt.md`, `_sforge-submit.sh` and `eval.sh` with what the installed sforge generates;
* checks that `started_at` line 1 (local) and line 2 (epoch) agree with the truth's UTC offset and that
  `run_agent.log` timestamps never go backwards.

Exit status 0 when everything matches, 1 otherwise.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sforge.harness.benchmark import load_benchmark
from sforge.harness.evolve_scripts import generate_evolve_prompt, generate_game_prompt, generate_submit_script
from sforge.harness.grading import grade_output
from sforge.harness.score_rescale import rescale_score
from sforge.harness.selection import select_best
from sforge.harness.task_spec import load_all_tasks
from sforge.visualizer.parsers.agent_output import get_trajectory
from sforge.visualizer.scanner import RunsIndex
from sforge.visualizer.server import _load_task_meta

HERE = Path(__file__).resolve().parent
PROBLEMS: list[str] = []


def check(cond, msg):
    if not cond:
        PROBLEMS.append(msg)
        print("   !! " + msg)


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def regrade(spec, sub: Path, rep: dict):
    raw = (sub / "test_output.txt").read_text()
    g = grade_output(spec, raw, rep["submission_id"], rep["timed_out"], rep["runtime_seconds"]).to_dict()
    for k in (
        "total_tests",
        "passed",
        "failed",
        "errors",
        "pass_rate",
        "test_details",
        "valid",
        "summary",
        "details",
        "metrics",
    ):
        check(same(g[k], rep[k]), f"{sub}: {k} differs from sforge grading ({g[k]!r:.80} vs {rep[k]!r:.80})")
    if not (isinstance(rep["score"], float) and math.isnan(rep["score"])):
        check(same(g["score"], rep["score"]), f"{sub}: score {g['score']} vs {rep['score']}")
        if "score_0_100" in rep:
            check(
                same(rescale_score(spec.judge.rescale, g["score"]), rep["score_0_100"]),
                f"{sub}: score_0_100 differs from rescale_score",
            )
    check((sub / "eval.sh").read_text() == spec.eval_script, f"{sub}: eval.sh differs from TaskSpec.eval_script")


def main() -> int:
    tasks_dir = HERE / "tasks"
    specs = {t.task_id: t for t in load_all_tasks(tasks_dir, load_benchmark(tasks_dir))}
    meta = _load_task_meta(tasks_dir)
    index = RunsIndex(HERE / "runs", task_meta=meta)
    runs = {(r.run_id, r.task): r for r in index.list_runs()}
    print(
        f"sforge RunsIndex found {len(runs)} task runs under runs/: "
        + ", ".join(f"{(r.ip + '/') if r.ip else ''}{rid}/{task}" for (rid, task), r in sorted(runs.items()))
    )
    for tf in sorted((HERE / "_truth").glob("*.json")):
        truth = json.loads(tf.read_text())
        rid, task = truth["run_id"], truth["task_id"]
        tdir = HERE / truth["path"]
        spec = specs[task]
        exp = truth["expected"]
        print(f"\n== {truth['path']}")
        run = runs.get((rid, task))
        check(run is not None, f"{rid}/{task}: not found by RunsIndex")
        if run is None:
            continue
        kinds = {}
        for s in run.submissions:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        print(
            f"   scanner: agent={run.agent!r} model={run.model!r} ip={run.ip!r} has_final={run.has_final} "
            f"best_round={run.best_round!r} best_score={run.best_score} best_pass_rate={run.best_pass_rate:.4f} "
            f"best_score_0_100={run.best_score_0_100} total_rounds={run.total_rounds} "
            f"submissions={len(run.submissions)} {kinds} infra_error={run.infra_error} "
            f"runtime={run.runtime_seconds:.1f}s created_at={run.created_at}"
        )
        check(run.best_round == exp["best_round"], f"best_round {run.best_round} != {exp['best_round']}")
        if exp.get("best_score") is not None:
            check(abs(float(run.best_score) - float(exp["best_score"])) < 1e-9, "best_score mismatch")
        check(abs(run.created_at - truth["started_at_epoch"]) < 1e-6, "created_at != truth started_at")
        check(run.ip == truth["ip"], "ip mismatch")
        total = exp.get("total_rounds", exp.get("archived_sessions"))
        check(run.total_rounds == total, f"total_rounds {run.total_rounds} != {total}")
        if "agent_rounds" in exp:
            folders = sum(v for k, v in kinds.items() if k in ("agent", "auto"))
            check(kinds.get("auto", 0) == exp.get("auto_rounds", 0), "auto folder count")
            check(folders == exp["total_rounds"], f"round folders {folders} != {exp['total_rounds']}")
        check(run.infra_error == (exp.get("infra_error_lines", 0) > 0), "infra_error flag")

        # trajectory parsers
        traj = get_trajectory(tdir / "agent_output.txt")
        markers = len(traj.markers)
        subs = sum(1 for ex in traj.exchanges for tc in ex.tool_calls if tc.sub_exchanges)
        print(
            f"   trajectory: {len(traj.exchanges)} exchanges, {traj.tool_use_count} tool calls, "
            f"{markers} stop-hook markers, {subs} tool calls with subagent exchanges, meta model="
            f"{traj.meta.get('model')!r}"
        )
        an = truth.get("transcript", {}).get("analysis")
        if an:
            check(traj.tool_use_count == sum(an["tool_uses"].values()), "tool_use_count vs truth analysis")
            check(markers == an["stop_hook_feedback"], "stop-hook marker count vs truth")

        # sforge-submit results printed in the transcript vs report.json / evolve_state.json
        seen = 0
        for ex in traj.exchanges:
            for tc in ex.tool_calls:
                if "sforge-submit" not in str(tc.input.get("command", "")) or not tc.has_result:
                    continue
                m = re.search(r"Round: (agent-\d+)", tc.result_content)
                if not m or "Results" not in tc.result_content:
                    continue
                rp = tdir / "submissions" / m.group(1) / "report.json"
                seen += 1
                if not rp.exists():  # grading raised: the API report is the empty EvalReport
                    check(
                        "Score:" not in tc.result_content and "Pass rate:" not in tc.result_content,
                        f"{m.group(1)}: failed grading should print no score",
                    )
                    continue
                rep = json.loads(rp.read_text())
                sm = re.search(r"Score:\s+(\S+)", tc.result_content)
                check((sm is None) == (rep["score"] is None), f"{m.group(1)}: Score line presence")
                if sm:
                    check(float(sm.group(1)) == rep["score"], f"{m.group(1)}: printed score {sm.group(1)}")
                pm = re.search(r"Passed:\s+(\d+)/(\d+)", tc.result_content)
                if rep["total_tests"]:
                    check(
                        pm and (int(pm.group(1)), int(pm.group(2))) == (rep["passed"], rep["total_tests"]),
                        f"{m.group(1)}: printed Passed line",
                    )
        state_p = tdir / "evolve_state.json"
        n_state = 0
        if state_p.exists():
            for e in json.loads(state_p.read_text()).get("submissions", []):
                rep_p = tdir / "submissions" / e["round"] / "report.json"
                if rep_p.exists():
                    rep = json.loads(rep_p.read_text())
                    check(e["at"] >= int(rep["submitted_at"]), f"{e['round']}: evolve_state at before grading start")
                    check(e["pass_rate"] == rep["pass_rate"], f"{e['round']}: evolve_state pass_rate")
                n_state += 1
        print(
            f"   {seen} sforge-submit results in the transcript match report.json; "
            f"{n_state} evolve_state entries checked"
        )

        # re-grade every report
        n_rep = n_missing = 0
        for sub in sorted((tdir / "submissions").iterdir()):
            rep_p = sub / "report.json"
            if sub.name.startswith("game-"):
                continue
            if not rep_p.exists():
                n_missing += 1
                check(sub.name in exp.get("rounds_without_report", []), f"{sub.name}: unexpected missing report")
                continue
            regrade(spec, sub, json.loads(rep_p.read_text()))
            n_rep += 1
        print(f"   regraded {n_rep} reports with sforge grade_output; {n_missing} round folder(s) without report.json")

        # histories
        hist_p = tdir / ("game_history.json" if spec.game_mode else "run_history.json")
        if hist_p.exists():
            hist = json.loads(hist_p.read_text())
            best = select_best(hist["entries"], spec.judge.score_direction, spec.judge.selection)
            check(
                best["best_round"] == hist["best_round"] and same(best["best_score"], hist["best_score"]),
                f"{hist_p.name}: best fields disagree with sforge.selection",
            )
            running = [e["round"] for e in hist["entries"] if e.get("status") == "running"]
            print(
                f"   {hist_p.name}: {len(hist['entries'])} entries, best {hist['best_round']} "
                f"(sforge.selection agrees: {best['best_round'] == hist['best_round']}), running={running}"
            )
        fr = json.loads((tdir / "final_result.json").read_text())
        check(fr["best_round"] == exp["best_round"], "final_result best_round")

        # generated texts
        if spec.game_mode:
            want = generate_game_prompt(spec.work.agent_query, internet=spec.internet)
        else:
            cfg = json.loads((tdir / "run_config.json").read_text()) if (tdir / "run_config.json").exists() else {}
            want = generate_evolve_prompt(
                spec.work.agent_query,
                submit_paths=spec.submit_paths,
                internet=spec.internet,
                max_submissions=cfg.get("max_submissions"),
                submission_cooldown=cfg.get("submission_cooldown"),
            )
        if (tdir / "run_config.json").exists():
            check((tdir / "agent_prompt.md").read_text() == want, "agent_prompt.md differs from sforge's prompt")
        if (tdir / "_sforge-submit.sh").exists():
            check((tdir / "_sforge-submit.sh").read_text() == generate_submit_script(), "_sforge-submit.sh differs")

        # clocks
        local_iso, epoch = (tdir / "started_at").read_text().splitlines()
        tz = timezone(timedelta(seconds=truth["host_utc_offset_seconds"]))
        check(
            datetime.fromtimestamp(float(epoch), tz).strftime("%Y-%m-%dT%H:%M:%S") == local_iso,
            "started_at line 1 does not match line 2 in the truth's UTC offset",
        )
        prev = None
        for line in (tdir / "run_agent.log").read_text().splitlines():
            if line[:4].isdigit() and line[19:20] == ",":
                ts = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                check(prev is None or ts >= prev, f"run_agent.log goes backwards at {line[:23]}")
                prev = ts
        offs = truth["agent_output"]["line_epochs"]
        check(all(a[1] <= b[1] for a, b in zip(offs, offs[1:])), "truth line epochs not monotonic")
        check(offs[-1][0] < (tdir / "agent_output.txt").stat().st_size, "truth byte offsets out of range")
    print()
    if PROBLEMS:
        print(f"{len(PROBLEMS)} problem(s)")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
