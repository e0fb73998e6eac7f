"""Run 5 of the bundled samples: a tiny legacy run (integer round folders, old stop hook that
evaluated).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from .claude_transcript import Claude, PRICING
from .gitlet_run import GL_CWD, GL_QUERY, gl_grade, gl_pytest_output, gl_statuses, gl_task, gl_unlock
from .judge_rounds import Judge
from .run_folder import RunBase, jqv
from .sforge_texts import CLAUDE_RUN
from .truth import analyse_claude, write_truth
from .writers import Clock, SEED, TextFile, epoch_of, jdump, q6, tokens_of


# ---------------------------------------------------------------------------
# Run 5: tiny legacy run (integer round folders, old stop hook that evaluated)
# ---------------------------------------------------------------------------


class LegacyRun(RunBase):
    RUN_ID = "legacy-evolve-0115"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(480), "docker", SEED + 505)
        self.model = "claude-sonnet-4-5"
        self.container = f"sforge.evolve.{self.task_id}.{self.RUN_ID}"

    def build(self):
        R, L = self.R, self.log
        t0 = epoch_of(2026, 1, 15, 10, 2, 40, 480) + 0.611
        t = t0
        L.info(t, "Images ready")
        t += 1.3
        L.info(t, f"Container started: {self.container}")
        t += 24.0
        L.info(t, "Agent installation complete")
        t += 0.8
        L.info(t, "Installed evolve stop hook (evaluates on stop)")
        t += 0.6
        prompt = "## Iterative Evaluation Mode (legacy)\n\n---\n\n" + GL_QUERY + "\n"
        self.write("agent_prompt.md", prompt)
        L.info(t, f"Prompt written ({len(prompt)} bytes)")
        started = q6(t + 0.002)
        self.write("started_at", f"{self.clock.iso_s(started)}\n{started!r}\n")
        self.started = started
        cmd = f"{CLAUDE_RUN} --model {self.model}"
        L.info(started + 0.001, f"Running agent: {cmd[:200]}... (timeout=3600s)")
        out = TextFile()
        cl = Claude(
            self.ids,
            R,
            out,
            model=self.model,
            version="1.0.128",
            cwd=GL_CWD,
            tools=["Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write", "TodoWrite"],
            user_ts=False,
        )
        PRICING.setdefault(self.model, (3.0, 15.0, 3.75, 0.30))
        cl.start_segment(started + 0.03, self.ids.uuid(), tokens_of(prompt))
        cl.init(2.4)
        unlock = gl_unlock(random.Random(SEED + 506))
        rounds, daemon, best, best_n = [], [], 0.0, 0
        judge = Judge(self.task, self.clock, "docker", self.ids, R, self.tdir)
        for n, hh in enumerate([0.28, 0.55, 0.83], 1):
            while (cl.t - started) / 3600 < hh:
                tid = cl.api(
                    [
                        (
                            "tool",
                            "Edit",
                            {
                                "file_path": f"{GL_CWD}/gitlet/commands.py",
                                "old_string": "    return None",
                                "new_string": "    return ids",
                            },
                        )
                    ],
                    latency=(20.0, 60.0),
                )[0]
                cl.tool_result(tid, f"The file {GL_CWD}/gitlet/commands.py has been updated successfully.", dt=0.1)
            cl.api([("text", "Implementation step done; stopping for evaluation.")])
            st = gl_statuses(unlock, hh * 2.4, R)
            runtime = R.uniform(9.0, 15.0)
            info = judge.grade(
                str(n),
                "agent",
                cl.t + 0.5,
                4100 + 300 * n,
                runtime,
                gl_pytest_output(st, runtime),
                gl_grade(st),
                allowed_files=["gitlet/__init__.py", "gitlet/commands.py"],
            )
            rep = json.loads((self.tdir / "submissions" / str(n) / "report.json").read_text())
            rep.pop("score_0_100")  # pre-rescale harness
            (self.tdir / "submissions" / str(n) / "report.json").write_text(jdump(rep))
            best = max(best, rep["pass_rate"])
            pct = math.floor(rep["pass_rate"] * 1000) / 10
            fb = (
                f"Stop hook feedback:\n[/tmp/evolve-stop-hook.sh]: Submitting round {n} for evaluation...\n"
                f"Pass rate: {pct}%\nPassed: {rep['passed']}/{rep['total_tests']}\n"
                f"Best score: {math.floor(best * 1000) / 10}% (round {best_n})\nContinue improving the implementation."
            )
            cl.user_text(fb, dt=info["completed_epoch"] - cl.t + 0.5, synthetic=False)
            rounds.append(
                {
                    "round": str(n),
                    "folder_kind": "legacy integer (visualizer treats as agent)",
                    "submitted_at": info["grading_start_epoch"],
                    "pass_rate": rep["pass_rate"],
                    "stop_hook_feedback_epoch": q6(cl.t),
                }
            )
            daemon.append(
                f"{self.clock.iso_s(info['grading_start_epoch']).replace('T', ' ')} auto-eval: snapshot {n} queued"
            )
        cl.api([("text", "Stopping: implementation is at a good state.")])
        cl.result("Stopping: implementation is at a good state.")
        t_end = cl.t + 0.2
        runtime = t_end - (started + 0.03)
        L.info(t_end + 0.001, f"Agent finished: runtime={runtime:.1f}s, timed_out=False, resumes=0")
        L.info(t_end + 2.1, f"Removing container {self.container}...")
        L.info(t_end + 2.6, f"Container {self.container} removed.")
        self.write("run_agent.log", L.text())
        self.write("auto_eval_daemon.log", "".join(x + "\n" for x in daemon))
        data, index = out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        state = {
            "best_pass_rate": jqv(best),
            "best_score": None,
            "best_round": str(max(range(1, 4), key=lambda i: rounds[i - 1]["pass_rate"])),
            "submissions": [
                {
                    "kind": "agent",
                    "round": r["round"],
                    "at": int(r["stop_hook_feedback_epoch"]),
                    "pass_rate": jqv(r["pass_rate"]),
                    "score": None,
                }
                for r in rounds
            ],
        }
        self.write("evolve_state.json", jdump(state))
        hist = {"best_pass_rate": best, "best_round": state["best_round"], "best_score": None}
        self.final_result("claude-code", self.model, hist, 3, 3, 0, False, runtime, 0, 0, legacy=True)
        self.rounds, self.runtime = rounds, runtime
        return {
            "rounds": rounds,
            "expected": {
                "best_round": state["best_round"],
                "best_pass_rate": best,
                "total_rounds": 3,
                "integer_round_folders": ["1", "2", "3"],
                "runtime_seconds": runtime,
            },
            "transcript": {
                "format": "claude-code stream-json (old 1.0.x shape)",
                "claude_code_version": "1.0.128",
                "analysis": analyse_claude(data),
                "note": "stop-hook feedback carries the OLD evaluating-hook text with pass rates",
            },
        }


def build_legacy(root: Path) -> dict:
    run = LegacyRun(root, gl_task())
    spec = run.build()
    common = {
        "agent": "claude-code",
        "model": run.model,
        "started_at_epoch": run.started,
        "exercises": [
            "legacy integer round folders 1/2/3 (no run_history.json, no run_config.json)",
            "reports without score_0_100",
            "auto_eval_daemon.log instead of auto_eval_ticks.log",
            "old stop hook feedback that contains 'Submitting round N for evaluation' and pass rates",
            "final_result.json without effort/resume_count",
            "sforge.evolve.* container name",
        ],
    }
    return write_truth(run, common, spec, run.index)
