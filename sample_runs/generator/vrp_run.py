"""Run 3 of the bundled samples: Codex (human-readable ``codex exec`` output), 2 hours, grouped layout."""

from __future__ import annotations

import math
import random
from pathlib import Path

from .judge_rounds import Judge, grade_legacy
from .run_folder import AutoEval, NPM_OUT_CODEX, RunBase, jqv, run_config, write_task
from .sforge_texts import (
    CODEX_CONFIG_CMD,
    CODEX_RESUME,
    CODEX_RUN,
    NODE_INSTALL_CMD,
    evolve_prompt,
    submit_header_lines,
    submit_list_lines,
    submit_result_lines,
    submit_round_lines,
)
from .truth import write_truth
from .writers import Clock, SEED, TextFile, epoch_of, jdump, jq_num, q6, tiny_targz


# ---------------------------------------------------------------------------
# Run 3: Codex (human-readable `codex exec` output), 2 hours, grouped layout
# ---------------------------------------------------------------------------

VRP_CWD = "/workspace/vrp"
VRP_QUERY = """# Capacitated vehicle routing (synthetic task description)

Write a solver for the capacitated vehicle routing problem with time windows. `python solve.py
<instance> <out>` must write a feasible set of routes for one instance within 20 seconds. The judge runs
20 hidden instances (100-400 customers) and sums the total route length (lower is better); an
infeasible or late answer is charged twice the baseline length for that instance.

Put your code in `solver/` and `solve.py`. `check.py <instance> <routes>` validates and scores a
solution locally on the public instances in `instances/`."""


def vrp_task() -> dict:
    return {
        "task_id": "vrp_route_planner",
        "name": "Capacitated vehicle routing with time windows",
        "base_image": "python311",
        "platform": "linux/amd64",
        "cwd": VRP_CWD,
        "submit_paths": ["solver", "solve.py"],
        "submit_exclude": ["tests/", "instances/"],
        "internet": True,
        "game_mode": False,
        "category": "Combinatorial Optimization",
        "work": {"agent_query": VRP_QUERY, "image_tag": "c9a0e1f7b253"},
        "judge": {
            "eval_cmd": (
                "cd /workspace/vrp && python /opt/judge/run_cases.py --solver 'python solve.py' "
                "--cases /opt/judge/cases --time-limit 20"
            ),
            "eval_timeout": 600,
            "parser": "score_sum",
            "score_direction": "minimize",
            "selection": "score_first",
            "rescale": {
                "kind": "piecewise_min",
                "baseline": 41000.0,
                "rank30": 33500.0,
                "rank1": 29800.0,
                "super_anchor": 28900.0,
            },
            "image_tag": "1e4d7b9c0a36",
        },
    }


class CodexOut:
    """Builds `codex exec` human-readable output with the true time of every line."""

    def __init__(self, out: TextFile):
        self.out = out
        self.t = 0.0
        self.counts = {"headers": 0, "user": 0, "codex": 0, "exec": 0, "exec_failed": 0, "thinking": 0}

    def lines(self, text: str, t: float | None = None):
        for ln in text.split("\n"):
            self.out.add(ln, self.t if t is None else t)

    def header(self, version, workdir, model, session, first=False):
        if first:
            self.lines("Reading additional input from stdin...")
        self.lines(
            f"OpenAI Codex v{version} (research preview)\n--------\nworkdir: {workdir}\nmodel: {model}\n"
            f"provider: openai\napproval: never\nsandbox: danger-full-access\nreasoning effort: high\n"
            f"reasoning summaries: auto\nsession id: {session}\n--------"
        )
        self.counts["headers"] += 1

    def user(self, text):
        self.lines("user\n" + text)
        self.counts["user"] += 1

    def thinking(self, title, dt):
        self.t += dt
        self.lines(f"thinking\n**{title}**")
        self.counts["thinking"] += 1

    def codex(self, text, dt):
        self.t += dt
        self.lines("codex\n" + text)
        self.counts["codex"] += 1

    def exec(self, cmd, output, dur, code=0, dt=1.0):
        import shlex

        self.t += dt
        self.lines(f"exec\n/bin/bash -lc {shlex.quote(cmd)} in {VRP_CWD}")
        self.t += dur
        status = f" succeeded in {int(dur * 1000)}ms:" if code == 0 else f" exited {code} in {int(dur * 1000)}ms:"
        self.lines(status + ("\n" + output if output else ""))
        self.counts["exec"] += 1
        if code:
            self.counts["exec_failed"] += 1


class VRPRun(RunBase):
    RUN_ID = "gpt55-codex-20260402131500"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(-240), "docker", SEED + 303, ip="10.0.0.7")
        self.model = "gpt-5.5"
        self.timeout, self.interval, self.max_subs = 7200, 1800, 12
        R = random.Random(SEED + 304)
        self.base = [round(R.uniform(1500, 2600), 1) for _ in range(20)]
        self.agent_n = 0
        self.state = {"best_pass_rate": 0, "best_score": None, "best_round": "", "submissions": []}
        self.version = 0
        self.killed = False
        self.t_kill = float("inf")
        self.rejections = []

    def h(self, t):
        return (t - self.started) / 3600.0

    def archive(self):
        files = [
            ("solve.py", "import sys\nfrom solver.search import solve\n\nsolve(sys.argv[1], sys.argv[2])\n"),
            ("solver/__init__.py", ""),
            (
                "solver/search.py",
                f"# solver version {self.version}\n"
                + "\n".join(f"PARAM_{i} = {1 + (self.version * 7 + i) % 13}" for i in range(8 + self.version % 5))
                + "\n\ndef solve(instance, out):\n    routes = construct(instance)\n"
                "    routes = local_search(routes, rounds=PARAM_0 * 100)\n    write(out, routes)\n",
            ),
        ]
        if self.version >= 4:
            files.append(
                (
                    "solver/alns.py",
                    "# adaptive large neighbourhood search\n"
                    + "\n".join(f"def destroy_{i}(routes, k):\n    return routes[:-k]" for i in range(self.version)),
                )
            )
        return sorted(files)

    def case_results(self, h, R, broken=False):
        # ratio to baseline improves over time; one construction bug gives WA cases early on
        ratio = (0.745 + 0.235 * math.exp(-h / 0.45)) * R.choice([1.0, 1.0, 1.0, 1.012, 1.025, 1.04])
        rows = []
        for i, b in enumerate(self.base):
            r = ratio * R.uniform(0.985, 1.03)
            st = "OK"
            if broken and i in (3, 11, 17):
                st = "WA"
            elif h < 0.25 and i in (7,):
                st = "TLE"
            score = round(b * r, 1) if st == "OK" else round(2 * b, 1)
            rows.append((f"{i:04d}", st, score))
        return rows

    def grade(self, rid, kind, t_post, broken=False):
        R = self.R
        rows = self.case_results(self.h(t_post), R, broken)
        total = round(sum(s for _, _, s in rows), 1)
        ok = sum(1 for _, st, _ in rows if st == "OK")
        body = [f"CASE {cid} {st} score={jq_num(s)}" for cid, st, s in rows]
        text = (
            "\n".join(
                [
                    "+ echo '>>>>> Start Test Output'",
                    ">>>>> Start Test Output",
                    "+ cd /workspace/vrp",
                    "+ python /opt/judge/run_cases.py --solver 'python solve.py' --cases /opt/judge/cases "
                    "--time-limit 20",
                ]
                + body
                + [
                    f"TOTAL_SCORE {jq_num(total)}",
                    f"CASES_OK {ok}",
                    f"CASES_TOTAL {len(rows)}",
                    "+ EXIT_CODE=0",
                    "+ echo '>>>>> End Test Output'",
                    ">>>>> End Test Output",
                    "+ echo 'Exit code: 0'",
                    "Exit code: 0",
                ]
            )
            + "\n"
        )
        res = [
            {"name": f"case_{cid}", "status": "PASSED"}
            if st == "OK"
            else {"name": f"case_{cid}_{st}", "status": "FAILED"}
            for cid, st, _ in rows
        ]
        graded = grade_legacy(res, score=total)
        data = tiny_targz(self.archive())
        info = self.judge.grade(
            rid,
            kind,
            t_post,
            len(data),
            R.uniform(28.0, 61.0),
            text,
            graded,
            allowed_files=[f for f, _ in self.archive()],
            archive_bytes=data,
        )
        info["outcome"] = "broken (3 WA cases)" if broken else "graded"
        return info

    def fire_auto(self, rid, t_post):
        return self.grade(rid, "auto", t_post)

    def submit(self, broken=False):
        co, R = self.co, self.R
        t_call = co.t + R.uniform(2.0, 6.0)
        t_post = t_call + R.uniform(0.4, 1.0)
        if t_post > self.t_kill:
            self.killed = True
            return None
        data = tiny_targz(self.archive())
        header = submit_header_lines(len(data))
        if self.agent_n >= self.max_subs:
            detail = f"Submission budget exhausted ({self.max_subs}/{self.max_subs} used)"
            out = "\n".join(header + [detail, f"SUBMISSION LIMIT REACHED: {detail}"])
            co.exec("sforge-submit", out, t_post + 0.05 - t_call, code=1, dt=t_call - co.t)
            self.rejections.append({"reason": "budget", "call_epoch": q6(t_call), "post_epoch": q6(t_post)})
            return {"rejected": True}
        self.auto.flush(t_post, self.fire_auto)
        self.agent_n += 1
        rid = f"agent-{self.agent_n}"
        info = self.grade(rid, "agent", t_post, broken)
        info["submit_call_epoch"] = q6(t_call)
        t_ret = info["grading_start_epoch"] + R.uniform(0.005, 0.03)
        k = math.ceil((info["completed_epoch"] - t_ret) / 10.02)
        t_seen = t_ret + k * 10.02 + R.uniform(0.01, 0.06)
        if t_seen + 0.2 > self.t_kill:
            self.killed = True
            info["result_seen_epoch"] = None
            co.t = t_seen
            return info
        rep = info["api_report"]
        at = int(t_seen)
        rate, score = jqv(rep["pass_rate"]), jqv(rep["score"])
        self.state["submissions"].append({"kind": "agent", "round": rid, "at": at, "pass_rate": rate, "score": score})
        if rate > self.state["best_pass_rate"]:
            self.state.update(best_pass_rate=rate, best_round=rid, best_score=score)
        info["result_seen_epoch"] = q6(t_seen)
        info["evolve_at"] = at
        out = "\n".join(header + submit_round_lines(rid, self.max_subs - self.agent_n) + submit_result_lines(rid, rep))
        co.exec("sforge-submit", out.rstrip("\n"), t_seen + 0.15 - t_call, dt=t_call - co.t)
        self.last = info
        return info

    def work(self, n):
        co, R = self.co, self.RC
        for _ in range(n):
            k = R.choices(["read", "patch", "check", "thinking"], [30, 35, 25, 10])[0]
            if k == "read":
                f = R.choice(
                    [
                        "solver/search.py",
                        "solve.py",
                        "check.py",
                        "solver/alns.py" if self.version >= 4 else "solver/search.py",
                    ]
                )
                out = "\n".join(
                    f"{i:4d}  "
                    + R.choice(
                        [
                            "routes = construct(instance)",
                            "def two_opt(route):",
                            "    best = cost(route)",
                            "for v in vehicles:",
                            "    if load + d > cap: break",
                            "return routes",
                        ]
                    )
                    for i in range(1, R.randint(8, 30))
                )
                co.exec(f"nl -ba {f} | sed -n '1,80p'", out, R.uniform(0.01, 0.05), dt=R.uniform(3.0, 12.0))
            elif k == "patch":
                self.version += 1 if R.random() < 0.35 else 0
                co.codex(
                    R.choice(
                        [
                            "Tightening the insertion heuristic: evaluate only the 12 nearest routes.",
                            "Adding an or-opt move to the local search.",
                            "Caching pairwise distances as a flat array; the solver was spending 30% in dict lookups.",
                            "Relaxing time-window slack checks to O(1) with forward slack.",
                            "Switching the acceptance rule to simulated annealing with a short schedule.",
                        ]
                    ),
                    R.uniform(6.0, 25.0),
                )
                co.exec(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: solver/search.py\n@@\n-    rounds=200\n"
                    "+    rounds=400\n*** End Patch\nEOF",
                    "Success. Updated the following files:\nM solver/search.py",
                    R.uniform(0.02, 0.1),
                    dt=R.uniform(2.0, 8.0),
                )
            elif k == "check":
                inst = R.choice(["c101", "r204", "rc108", "c208", "r112"])
                if R.random() < 0.08:
                    co.exec(
                        f"python solve.py instances/{inst}.txt /tmp/{inst}.out && python check.py instances/{inst}.txt /tmp/{inst}.out",
                        'Traceback (most recent call last):\n  File "/workspace/vrp/solver/search.py", line 88, in '
                        "two_opt\n    a, b = route[i], route[i + 1]\nIndexError: list index out of range",
                        R.uniform(1.0, 4.0),
                        code=1,
                        dt=R.uniform(3.0, 9.0),
                    )
                else:
                    co.exec(
                        f"python solve.py instances/{inst}.txt /tmp/{inst}.out && python check.py instances/{inst}.txt /tmp/{inst}.out",
                        f"feasible: yes\nvehicles: {R.randint(9, 19)}\ndistance: {R.uniform(800, 1900):.1f}\n"
                        f"time: {R.uniform(4.0, 19.0):.1f}s",
                        R.uniform(5.0, 20.0),
                        dt=R.uniform(3.0, 9.0),
                    )
            else:
                co.thinking(
                    R.choice(
                        [
                            "Comparing construction heuristics",
                            "Checking time-window feasibility",
                            "Planning the next improvement",
                            "Estimating runtime headroom",
                        ]
                    ),
                    R.uniform(5.0, 20.0),
                )
            if co.t > self.t_kill:
                self.killed = True
                return

    def build(self):
        R = self.R
        task = self.task
        cfg = run_config(
            self.task_id,
            "codex",
            self.model,
            self.timeout,
            self.interval,
            True,
            "http://host.docker.internal:8080",
            max_submissions=self.max_subs,
        )
        self.write_configs(cfg)
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], True, self.max_subs, None)
        t0 = epoch_of(2026, 4, 2, 13, 15, 2, -240) + 0.271
        s = self.setup(
            t0,
            agent="codex",
            install_cmds=[NODE_INSTALL_CMD, "sudo -E npm install -g @openai/codex@0.130.0", CODEX_CONFIG_CMD],
            install_outs=["", NPM_OUT_CODEX.format(s=9), ""],
            stale_chain="SFORGE_" + self.ids.hexn(12),
            eval_interval=self.interval,
            prompt=prompt,
        )
        self.started = s["started_at"]
        self.judge = Judge(task, self.clock, "docker", self.ids, R, self.tdir)
        self.auto = AutoEval(self, s["t_ae"], self.interval, extract=(0.6, 1.4))
        self.out = TextFile()
        co = self.co = CodexOut(self.out)
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {CODEX_RUN[:200]}... (timeout={self.timeout:.0f}s)")
        seg1 = t + 0.03
        co.t = seg1 + R.uniform(0.4, 0.9)
        sess = (
            "019d"
            + self.ids.hexn(4)
            + "-"
            + self.ids.hexn(4)
            + "-7"
            + self.ids.hexn(3)
            + "-"
            + self.ids.hexn(4)
            + "-"
            + self.ids.hexn(12)
        )
        co.header("0.130.0", VRP_CWD, self.model, sess, first=True)
        co.user(prompt.rstrip("\n"))
        co.thinking("Inspecting the workspace", R.uniform(3.0, 8.0))
        co.codex("I'll look at the instance format and the local checker first.", R.uniform(2.0, 5.0))
        co.exec(
            "ls -la && head -20 instances/c101.txt && sed -n '1,60p' check.py",
            "total 28\ndrwxr-xr-x 1 agent agent 4096 .\n-rw-r--r-- 1 agent agent 2710 check.py\n"
            "drwxr-xr-x 1 agent agent 4096 instances\n-rw-r--r-- 1 agent agent  183 solve.py\n"
            "drwxr-xr-x 1 agent agent 4096 solver\nC101\nVEHICLE NUMBER CAPACITY\n  25 200\nCUSTOMER ...",
            0.034,
            dt=R.uniform(1.0, 3.0),
        )
        self.work(6)
        co.codex("A savings-based construction plus 2-opt is in place; submitting a baseline.", R.uniform(3.0, 9.0))
        self.submit()
        plan = [0.24, 0.36, 0.5, 0.63, 0.78, 1.08, 1.22, 1.36, 1.5, 1.64, 1.77, 1.86]  # last one is rejected
        seg1_end = self.started + 0.95 * 3600

        def follow(plan, until):
            while plan and co.t < until and not self.killed:
                while self.h(co.t) < plan[0] and co.t < until and not self.killed:
                    self.work(1)
                if self.killed or co.t >= until:
                    return
                plan.pop(0)
                r = self.submit(broken=(self.agent_n == 3))
                if r and r.get("rejected"):
                    co.codex(
                        "The submission budget is used up (12/12). From here on I can only improve locally; "
                        "the auto-evaluation still snapshots the files, so I keep them runnable.",
                        R.uniform(3.0, 8.0),
                    )
                elif r and self.last:
                    rep = self.last["api_report"]
                    if self.last["outcome"].startswith("broken"):
                        msg = (
                            f"{self.last['round']} has three WA cases: the new route-merge step can violate "
                            "capacity when two routes share a depot slot. Reverting the merge guard."
                        )
                    else:
                        msg = (
                            f"{self.last['round']}: total {jq_num(rep['score'])}, "
                            f"{self.max_subs - self.agent_n} submissions left. "
                            + R.choice(
                                [
                                    "Keeping it.",
                                    "Not better than the best; reverting.",
                                    "Small gain.",
                                    "Runtime is fine, quality is the bottleneck.",
                                ]
                            )
                        )
                    co.codex(msg, R.uniform(3.0, 8.0))

        follow(plan, seg1_end)
        while co.t < seg1_end:
            self.work(1)
        co.codex(
            "I have a working ALNS solver with a stable score and several submissions left. Summary of the "
            "current state: construction by savings, ALNS with 4 destroy operators, 2-opt/or-opt repair.",
            R.uniform(4.0, 9.0),
        )
        co.lines(f"tokens used\n{R.randint(180000, 260000):,}")
        t_exit = co.t + 0.3
        e1 = t_exit - seg1
        remaining = self.timeout - e1
        self.log.info(t_exit + 0.001, f"Agent exited after {e1:.1f}s, will resume")
        self.log.info(t_exit + 0.002, f"Resuming agent (attempt 1/100, {remaining:.0f}s left): {CODEX_RESUME[:200]}...")
        seg2 = t_exit + 0.03
        self.t_kill = seg2 + int(remaining) + 0.22
        co.t = seg2 + R.uniform(0.5, 1.0)
        co.header("0.130.0", VRP_CWD, self.model, sess)
        co.user("Continue working.")
        co.codex("Continuing. Checking the submission history first.", R.uniform(3.0, 7.0))
        view = self.judge.agent_view(self.run_id, "score_first", "minimize", co.t + 3)
        co.exec("sforge-submit --list", "\n".join(submit_list_lines(view)).rstrip("\n"), 0.31, dt=R.uniform(2.0, 4.0))
        self.list_epoch = q6(co.t)
        follow(plan, float("inf"))
        while not self.killed and co.t < self.t_kill:
            self.work(1)
        self.out.items = [it for it in self.out.items if it[1] <= self.t_kill]
        runtime = e1 + (self.t_kill - seg2)
        L = self.log
        t = self.t_kill + 0.01
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=1")
        self.auto.stop(t, self.fire_auto)
        L.info(t + 0.001, "Auto-eval thread stopped")
        archive = tiny_targz(self.archive())
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(0.7, 1.3)
        L.info(t, f"Final archive: {len(archive)} bytes")
        self.write("evolve_state.json", jdump(self.state))
        t += R.uniform(0.3, 0.7)
        L.info(t, "Work container processes stopped")
        while True:
            t += R.uniform(0.005, 0.02)
            hist = self.judge.history(self.run_id, "score_first", "minimize", at=t)
            pend = [e for e in hist["entries"] if e["status"] == "running"]
            if not pend:
                break
            L.info(t, f"Draining {len(pend)} pending judge evals...")
            t += 15.0
        t += 0.02
        hist = self.judge.history(self.run_id, "score_first", "minimize", at=t)
        self.write("run_history.json", jdump(hist))
        L.info(
            t + 0.002,
            f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
            f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
            f"resumes=1, runtime={runtime:.1f}s",
        )
        t += 0.01
        L.info(t, f"Stopping container {self.container}...")
        t += R.uniform(10.1, 10.5)
        L.info(t, f"Removing container {self.container}...")
        t += R.uniform(0.2, 0.5)
        L.info(t, f"Container {self.container} removed.")
        self.write("run_agent.log", self.log.text())
        self.auto.write()
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        self.final_result(
            "codex",
            self.model,
            hist,
            hist["agent_submissions"] + hist["auto_submissions"],
            hist["agent_submissions"],
            hist["auto_submissions"],
            True,
            runtime,
            len(archive),
            1,
        )
        self.runtime, self.hist = runtime, hist
        self.seg_times = [(seg1, t_exit), (seg2, self.t_kill)]

    def truth(self) -> dict:
        rounds, best, nb = [], None, 0
        for info in self.judge.rounds:
            rep = info["report"]
            s = rep["score"]
            new = best is None or s < best
            if new:
                best, nb = s, nb + 1
            rounds.append(
                {
                    "round": info["round"],
                    "kind": info["kind"],
                    "submission_id": info["submission_id"],
                    "submit_call_epoch": info.get("submit_call_epoch"),
                    "post_epoch": info["post_epoch"],
                    "grading_start_epoch": info["grading_start_epoch"],
                    "grading_end_epoch": info["grading_end_epoch"],
                    "completed_epoch": info["completed_epoch"],
                    "result_seen_epoch": info.get("result_seen_epoch"),
                    "evolve_at": info.get("evolve_at"),
                    "tick_log_epoch": info.get("tick_log_epoch"),
                    "elapsed_hours": round(self.h(info["grading_start_epoch"]), 4),
                    "score": s,
                    "score_0_100": rep["score_0_100"],
                    "pass_rate": rep["pass_rate"],
                    "new_best": new,
                    "best_so_far": best,
                    "archive_bytes": info["archive_size"],
                    "outcome": info["outcome"],
                }
            )
        return {
            "segments": [
                {"start_epoch": q6(a), "end_epoch": q6(b), "ended_by": how}
                for (a, b), how in zip(
                    self.seg_times,
                    [
                        "exit (turn finished), auto-resumed with `codex exec resume --last`",
                        "timeout (killed by harness)",
                    ],
                )
            ],
            "rounds": rounds,
            "rejected_submissions": self.rejections,
            "sforge_submit_list_calls": [self.list_epoch],
            "expected": {
                "best_round": self.hist["best_round"],
                "best_score": self.hist["best_score"],
                "best_pass_rate": self.hist["best_pass_rate"],
                "agent_rounds": sum(1 for r in rounds if r["kind"] == "agent"),
                "auto_rounds": sum(1 for r in rounds if r["kind"] == "auto"),
                "total_rounds": len(rounds),
                "new_bests": nb,
                "score_direction": "minimize",
                "max_submissions": self.max_subs,
                "runtime_seconds": self.runtime,
                "resume_count": 1,
                "timed_out": True,
            },
            "transcript": {
                "format": "codex exec human-readable text (codex 0.130.0)",
                "counts": self.co.counts,
                "timestamps": "none",
            },
        }


def build_vrp(root: Path) -> dict:
    task = vrp_task()
    write_task(root, task)
    run = VRPRun(root, task)
    run.build()
    common = {
        "agent": "codex",
        "model": run.model,
        "started_at_epoch": run.started,
        "exercises": [
            "Codex human-readable transcript (two headers after a resume)",
            "3-level layout runs/<ip>/<run_id>/<task>/",
            "score_sum parser, minimize, piecewise_min rescale",
            "max_submissions=12: '(remaining submissions: N)' and SUBMISSION LIMIT REACHED",
            "real (tiny) submission.tar.gz files whose sizes match the logs",
            "host UTC offset -04:00",
        ],
    }
    return write_truth(run, common, run.truth(), run.index)
