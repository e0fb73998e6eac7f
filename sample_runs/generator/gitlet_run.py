"""Run 2 of the bundled samples: a 3-hour pass-rate task (pytest_v, pass_rate_first), docker, no
internet.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from edgetui.replay.selection import select_best

from .claude_transcript import CLAUDE_TOOLS, Claude, bash_tur, read_result
from .judge_rounds import Judge, grade_legacy, report_dict
from .run_folder import AutoEval, NPM_OUT_CLAUDE, RunBase, jqv, run_config, write_task
from .sforge_texts import (
    CLAUDE_RESUME,
    CLAUDE_RUN,
    NODE_INSTALL_CMD,
    eval_script,
    evolve_prompt,
    submit_header_lines,
    submit_result_lines,
    submit_round_lines,
)
from .truth import analyse_claude, write_truth
from .writers import Clock, RunLog, SEED, TextFile, epoch_of, jdump, q6, tiny_targz, tokens_of


# ---------------------------------------------------------------------------
# Run 2: 3-hour pass-rate task (pytest_v, pass_rate_first), docker, no internet
# ---------------------------------------------------------------------------

GL_CWD = "/workspace/gitlet"
GL_TESTS = {
    "test_init": [
        "test_init_creates_gitlet_dir",
        "test_init_twice_fails",
        "test_init_initial_commit",
        "test_init_initial_commit_timestamp",
        "test_init_master_branch",
        "test_init_no_staged_files",
    ],
    "test_add": [
        "test_add_new_file",
        "test_add_missing_file",
        "test_add_identical_file_unstages",
        "test_add_after_rm",
        "test_add_binary_file",
        "test_add_nested_path",
        "test_add_overwrites_stage",
        "test_add_empty_file",
    ],
    "test_commit": [
        "test_commit_basic",
        "test_commit_empty_message",
        "test_commit_nothing_staged",
        "test_commit_parent_pointer",
        "test_commit_blob_dedup",
        "test_commit_rm_tracked",
        "test_commit_hash_stable",
        "test_commit_serialization_roundtrip",
        "test_commit_many_files",
        "test_commit_message_unicode",
    ],
    "test_log": [
        "test_log_linear",
        "test_log_format",
        "test_global_log_all_commits",
        "test_find_by_message",
        "test_find_no_match",
        "test_log_after_merge_shows_merged",
    ],
    "test_checkout": [
        "test_checkout_file_head",
        "test_checkout_file_commit",
        "test_checkout_short_id",
        "test_checkout_branch",
        "test_checkout_untracked_in_way",
        "test_checkout_same_branch",
        "test_checkout_missing_branch",
        "test_reset_to_commit",
    ],
    "test_branch": [
        "test_branch_create",
        "test_branch_duplicate",
        "test_rm_branch",
        "test_rm_current_branch",
        "test_branch_pointer_moves",
        "test_status_lists_branches",
        "test_branch_from_detached",
        "test_branch_names_sorted",
    ],
    "test_merge": [
        "test_merge_fast_forward",
        "test_merge_ancestor",
        "test_merge_no_conflict",
        "test_merge_conflict_markers",
        "test_merge_conflict_message",
        "test_merge_untracked_in_way",
        "test_merge_uncommitted_changes",
        "test_merge_split_point_criss_cross",
        "test_merge_deleted_in_other",
        "test_merge_self",
    ],
    "test_status": [
        "test_status_clean",
        "test_status_staged",
        "test_status_removed",
        "test_status_modified_not_staged",
    ],
    "test_remote": ["test_add_remote", "test_push", "test_fetch", "test_pull"],
}
GL_ALL = [(f, t) for f, ts in GL_TESTS.items() for t in ts]
GL_QUERY = """# Gitlet: a miniature version-control system (synthetic task description)

Implement `gitlet`, a small Git-like version-control system, as the Python package `gitlet/` in this
repository (`python -m gitlet <command> [args]`). Commands: init, add, commit, rm, log, global-log, find,
status, checkout (file / commit file / branch), branch, rm-branch, reset, merge (with conflict markers and
split-point detection, including criss-cross histories), and the remote commands add-remote, push, fetch
and pull between two repositories on the same filesystem.

Object storage is content-addressed (SHA-1 of the serialized object) under `.gitlet/`. Output formats and
error messages must match the specification in `SPEC.md` exactly. The judge runs a hidden pytest suite of
64 tests; your score is the pass rate."""


def gl_task() -> dict:
    return {
        "task_id": "gitlet_vcs",
        "name": "Gitlet version-control system",
        "base_image": "python311",
        "platform": "linux/amd64",
        "cwd": GL_CWD,
        "submit_paths": ["gitlet"],
        "submit_exclude": ["tests/"],
        "internet": False,
        "game_mode": False,
        "category": "Software Engineering",
        "work": {"agent_query": GL_QUERY, "image_tag": "0d7e3f5a9c21"},
        "judge": {
            "eval_cmd": "cd /workspace/gitlet && python -m pytest -v tests/ -p no:cacheprovider",
            "eval_timeout": 1800,
            "parser": "pytest_v",
            "selection": "pass_rate_first",
            "image_tag": "6b2a91d04e7f",
        },
    }


def gl_unlock(R: random.Random) -> dict:
    """Elapsed hour at which each test starts to pass (some never do)."""
    order = {
        "test_init": 0.15,
        "test_add": 0.35,
        "test_commit": 0.6,
        "test_log": 0.9,
        "test_status": 1.0,
        "test_checkout": 1.3,
        "test_branch": 1.5,
        "test_merge": 2.0,
        "test_remote": 2.45,
    }
    out = {}
    for f, t in GL_ALL:
        base = order[f] + R.uniform(-0.12, 0.35)
        if t in ("test_merge_split_point_criss_cross", "test_pull", "test_checkout_untracked_in_way"):
            base = 99.0
        if t == "test_merge_conflict_markers":
            base = 2.7
        out[f"tests/{f}.py::{t}"] = base
    return out


def gl_statuses(unlock: dict, h: float, R: random.Random) -> list[tuple[str, str]]:
    out = []
    for name, u in unlock.items():
        if "test_remote" in name and h < 1.45:
            st = "ERROR"
        elif h >= u and not (h - u < 0.25 and R.random() < 0.12):
            st = "PASSED"
        else:
            st = "FAILED"
        out.append((name, st))
    return out


def gl_pytest_output(statuses, runtime, *, hang_after: int | None = None) -> str:
    """pytest -v output inside eval.sh's markers (whole output = test_output.txt)."""
    L = [
        "+ echo '>>>>> Start Test Output'",
        ">>>>> Start Test Output",
        "+ cd /workspace/gitlet",
        "+ python -m pytest -v tests/ -p no:cacheprovider",
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0 -- /usr/local/bin/python",
        "rootdir: /workspace/gitlet",
        "collecting ... collected 64 items",
        "",
    ]
    n = len(statuses)
    for i, (name, st) in enumerate(statuses):
        if hang_after is not None and i >= hang_after:
            L.append(f"{name} ")
            return "\n".join(L)  # killed by the eval timeout: no END marker
        pct = f"[{int(100 * (i + 1) / n):3d}%]"
        L.append(f"{name} {st}".ljust(72) + " " + pct)
    bad = [(nm, st) for nm, st in statuses if st != "PASSED"]
    if bad:
        L += [
            "",
            "==================================== ERRORS ===================================="
            if any(st == "ERROR" for _, st in bad)
            else "=================================== FAILURES ===================================",
        ]
        for nm, st in bad[:4]:
            short = nm.split("::")[1]
            L += [
                f"_{'_' * 20} {'ERROR at setup of ' if st == 'ERROR' else ''}{short} {'_' * 20}",
                "",
                "    def " + short + "(repo):" if st == "FAILED" else "    @pytest.fixture",
                ">       assert run(repo, 'status') == expected"
                if st == "FAILED"
                else ">       from gitlet.remote import Remote",
                "E       AssertionError: output mismatch"
                if st == "FAILED"
                else "E       ModuleNotFoundError: No module named 'gitlet.remote'",
                "",
            ]
        L.append("=========================== short test summary info ============================")
        for nm, st in bad:
            L.append(
                f"{st} {nm} - "
                + (
                    "AssertionError: output mismatch"
                    if st == "FAILED"
                    else "ModuleNotFoundError: No module named 'gitlet.remote'"
                )
            )
    np_ = sum(1 for _, s in statuses if s == "PASSED")
    nf = sum(1 for _, s in statuses if s == "FAILED")
    ne = sum(1 for _, s in statuses if s == "ERROR")
    parts = ([f"{nf} failed"] if nf else []) + [f"{np_} passed"] + ([f"{ne} errors"] if ne else [])
    summ = f" {', '.join(parts)} in {runtime - 0.8:.2f}s "
    L.append(summ.center(80, "="))
    L += [
        "+ EXIT_CODE=" + ("1" if bad else "0"),
        "+ echo '>>>>> End Test Output'",
        ">>>>> End Test Output",
        "+ echo 'Exit code: " + ("1" if bad else "0") + "'",
        "Exit code: " + ("1" if bad else "0"),
    ]
    return "\n".join(L) + "\n"


def gl_grade(statuses, hang_after=None) -> dict:
    if hang_after is not None:
        statuses = statuses[:hang_after]
    res = [{"name": n, "status": "PASSED"} for n, s in statuses if s == "PASSED"]
    res += [{"name": n, "status": "FAILED"} for n, s in statuses if s == "FAILED"]
    res += [{"name": n, "status": "ERROR"} for n, s in statuses if s == "ERROR"]
    return grade_legacy(res)


OOM_NOISE = """
<--- Last few GCs --->

[412:0x6f3c0a0]  4127815 ms: Mark-Compact (reduce) 4041.2 (4138.5) -> 4029.8 (4140.3) MB, 1893.41 / 0.00 ms  (average mu = 0.112, current mu = 0.031) allocation failure; scavenge might not succeed


<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----

 1: 0xb8d0a3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [claude]
 2: 0xf06460 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [claude]
 3: 0xf06747 v8::internal::V8::FatalProcessOutOfMemory(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [claude]
 4: 0x1118c55  [claude]
 5: 0x1130ad8 v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags) [claude]
 6: 0x1106bf1 v8::internal::HeapAllocator::AllocateRawWithLightRetrySlowPath(int, v8::internal::AllocationType, v8::internal::AllocationOrigin, v8::internal::AllocationAlignment) [claude]
Aborted (core dumped)"""

DOCKER_RM_TRACEBACK = """Traceback (most recent call last):
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/api/client.py", line 275, in _raise_for_status
    response.raise_for_status()
  File "/opt/sforge/.venv/lib/python3.11/site-packages/requests/models.py", line 1024, in raise_for_status
    raise HTTPError(http_error_msg, response=self)
requests.exceptions.HTTPError: 409 Client Error: Conflict for url: http+docker://localhost/v1.47/containers/{cid}?v=False&link=False&force=True

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/sforge/.venv/lib/python3.11/site-packages/sforge/harness/backend/docker_backend.py", line 178, in cleanup_container
    container.remove(force=True)
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/models/containers.py", line 367, in remove
    return self.client.api.remove_container(self.id, **kwargs)
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/api/container.py", line 1037, in remove_container
    self._raise_for_status(res)
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/api/client.py", line 277, in _raise_for_status
    raise create_api_error_from_http_exception(e) from e
docker.errors.APIError: 409 Client Error for http+docker://localhost/v1.47/containers/{cid}?v=False&link=False&force=True: Conflict ("removal of container {cid} is already in progress")"""

JUDGE_CREATE_TRACEBACK = """Unexpected error: 500 Server Error for http+docker://localhost/v1.47/containers/create?name=edgebench.judge.gitlet_vcs.{sid}: Internal Server Error ("failed to create task for container: mkdir /var/lib/docker/overlay2/{h}/merged: no space left on device")
Traceback (most recent call last):
  File "/opt/sforge/.venv/lib/python3.11/site-packages/sforge/harness/run_evaluation.py", line 170, in judge_submission
    handle = backend.create_container(
  File "/opt/sforge/.venv/lib/python3.11/site-packages/sforge/harness/backend/docker_backend.py", line 96, in create_container
    container = self._client.containers.create(image, name=name, **kwargs)
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/models/containers.py", line 935, in create
    resp = self.client.api.create_container(**create_kwargs)
  File "/opt/sforge/.venv/lib/python3.11/site-packages/docker/api/client.py", line 277, in _raise_for_status
    raise create_api_error_from_http_exception(e) from e
docker.errors.APIError: 500 Server Error for http+docker://localhost/v1.47/containers/create?name=edgebench.judge.gitlet_vcs.{sid}: Internal Server Error ("failed to create task for container: mkdir /var/lib/docker/overlay2/{h}/merged: no space left on device")"""


class GitletRun(RunBase):
    RUN_ID = "7c1e94d2a0b3"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(120), "docker", SEED + 202)
        self.model = "claude-opus-4-8"
        self.timeout, self.interval = 10800, 900
        self.agent_n = 0
        self.state = {"best_pass_rate": 0, "best_score": None, "best_round": "", "submissions": []}
        self.pending_text = None
        self.killed = False
        self.t_kill = float("inf")
        self.failed_round_at = 7  # agent-7: judge could not create its container
        self.unlock = gl_unlock(self.R)

    def h(self, t):
        return (t - self.started) / 3600.0

    def grade(self, rid, kind, t_post, *, hang=False):
        R = self.R
        h = self.h(t_post)
        size = int(5200 + 900 * min(h, 3.0) + R.randint(-60, 60))
        if kind == "agent" and self.agent_n == self.failed_round_at:
            sid = None
            info = self.judge.grade(rid, kind, t_post, size, 0.0, None, None, allowed_files=[], failure="PLACEHOLDER")
            sid = info["submission_id"]
            log = self.tdir / "submissions" / rid / "run_instance.log"
            txt = log.read_text().replace("PLACEHOLDER", JUDGE_CREATE_TRACEBACK.format(sid=sid, h=self.ids.hexn(64)))
            log.write_text(txt)
            info["outcome"] = "grading raised (judge container create failed): no report.json"
            return info
        st = gl_statuses(self.unlock, h, R)
        if hang:
            hang_at = 56
            # the last change also broke a few checkout/branch tests
            for j in R.sample(range(30, 46), 5):
                st[j] = (st[j][0], "FAILED")
            runtime = float(self.task["judge"]["eval_timeout"]) + R.uniform(0.02, 0.2)
            text = gl_pytest_output(st, runtime, hang_after=hang_at)
            graded = gl_grade(st, hang_after=hang_at)
            info = self.judge.grade(
                rid,
                kind,
                t_post,
                size,
                runtime,
                text,
                graded,
                allowed_files=self.files(),
                timed_out=True,
                nan_score=True,
            )
            info["outcome"] = "eval timed out (hung test); report carries a NaN score token"
            return info
        runtime = R.uniform(9.0, 19.0)
        info = self.judge.grade(
            rid, kind, t_post, size, runtime, gl_pytest_output(st, runtime), gl_grade(st), allowed_files=self.files()
        )
        info["outcome"] = "graded"
        return info

    def files(self):
        base = [
            "gitlet/__init__.py",
            "gitlet/__main__.py",
            "gitlet/objects.py",
            "gitlet/repo.py",
            "gitlet/commands.py",
            "gitlet/merge.py",
        ]
        if self.agent_n > 12:
            base.append("gitlet/remote.py")
        return sorted(base)

    def fire_auto(self, rid, t_post):
        return self.grade(rid, "auto", t_post)

    def step(self, tool, inp, result, *, exec_s=(0.05, 0.3), is_error=False, tur=None, pre=()):
        tid = self.cl.api(list(pre) + [("tool", tool, inp)], latency=(4.0, 16.0))[0]
        dt = self.R.uniform(*exec_s) if isinstance(exec_s, tuple) else exec_s
        self.cl.tool_result(tid, result, is_error=is_error, dt=dt, tur=tur)

    def pre(self, p=0.3):
        out = []
        if self.RC.random() < p:
            out.append(
                (
                    "thinking",
                    self.RC.choice(
                        [
                            "The failing names point at the merge split-point logic; criss-cross histories need a proper LCA.",
                            "Status output ordering must be lexicographic; check the spec again.",
                            "Commit ids must be stable across runs: serialize with sorted keys and no timestamps in floats.",
                            "Remote tests error at setup — the module gitlet.remote does not exist yet.",
                            "Keep the package importable at all times because of the periodic auto-evaluation.",
                        ]
                    ),
                )
            )
        if self.pending_text:
            out.append(("text", self.pending_text))
            self.pending_text = None
        return out

    def local_pytest(self):
        R = self.RC
        h = self.h(self.cl.t)
        st = gl_statuses(self.unlock, h, R)
        sub = R.choice(list(GL_TESTS))
        sel = [(n, s) for n, s in st if f"/{sub}.py" in n]
        lines = [f"{n} {s}" for n, s in sel]
        np_ = sum(1 for _, s in sel if s == "PASSED")
        nf = len(sel) - np_
        summ = (
            f"{nf} failed, {np_} passed in {R.uniform(0.4, 3.0):.2f}s"
            if nf
            else f"{np_} passed in {R.uniform(0.4, 3.0):.2f}s"
        )
        out = "\n".join(lines + ["=" * 10 + f" {summ} " + "=" * 10])
        err = nf > 0
        content = ("Exit code 1\n" + out) if err else out
        self.step(
            "Bash",
            {
                "command": f"cd {GL_CWD} && python -m pytest -v tests/{sub}.py -x -q",
                "description": f"Run {sub} locally",
            },
            content,
            exec_s=(3.0, 30.0),
            is_error=err,
            pre=self.pre(),
            tur=("Error: " + content) if err else bash_tur(out),
        )

    def action(self):
        R = self.RC
        k = R.choices(["read", "edit", "pytest", "write"], [30, 40, 25, 5])[0]
        mod = R.choice(self.files())
        path = f"{GL_CWD}/{mod}"
        if k == "read":
            code = [
                f"def cmd_{w}(repo, *args):" if i % 6 == 0 else f"    {w}_ids = sorted(repo.{w}())"
                for i, w in enumerate(
                    R.sample(
                        ["add", "commit", "log", "status", "merge", "checkout", "branch", "reset", "find", "rm"], 6
                    )
                )
            ]
            start = R.randint(1, 120)
            self.step(
                "Read",
                {"file_path": path, "offset": start, "limit": 40},
                read_result(code, start),
                pre=self.pre(),
                tur={
                    "type": "text",
                    "file": {
                        "filePath": path,
                        "content": "\n".join(code),
                        "numLines": len(code),
                        "startLine": start,
                        "totalLines": start + 60,
                    },
                },
            )
        elif k == "edit":
            old = f"    return {R.choice(['None', 'ids', 'sorted(ids)', 'msg', 'split'])}"
            self.step(
                "Edit",
                {"file_path": path, "old_string": old, "new_string": old + "  # spec 4.2"},
                f"The file {path} has been updated successfully.",
                pre=self.pre(),
            )
        elif k == "pytest":
            self.local_pytest()
        else:
            content = "\n".join([f"def helper_{i}(repo):\n    return repo.head()" for i in range(5)])
            self.step(
                "Write",
                {"file_path": path, "content": content},
                f"File created successfully at: {path}",
                pre=self.pre(),
                tur={"type": "create", "filePath": path, "content": content},
            )

    def submit(self, *, hang=False):
        cl, R = self.cl, self.R
        tid = cl.api(
            self.pre(0.1)
            + [
                (
                    "tool",
                    "Bash",
                    {"command": "sforge-submit", "description": "Submit for evaluation", "timeout": 600000},
                )
            ]
        )[0]
        t_call = cl.t
        t_post = t_call + R.uniform(0.5, 1.2)
        if t_post > self.t_kill:
            self.killed = True
            return None
        self.auto.flush(t_post, self.fire_auto)
        self.agent_n += 1
        rid = f"agent-{self.agent_n}"
        info = self.grade(rid, "agent", t_post, hang=hang)
        info["submit_call_epoch"] = q6(t_call)
        info["tool_use_id"] = tid
        t_ret = info["grading_start_epoch"] + R.uniform(0.005, 0.03)
        k = max(1, math.ceil((info["completed_epoch"] - t_ret) / 10.02))
        t_seen = t_ret + k * 10.02 + R.uniform(0.01, 0.06)
        if t_seen > self.t_kill:
            self.killed = True
            cl.t = t_seen
            info["result_seen_epoch"] = None
            return info
        rep = info["api_report"]
        at = int(t_seen)
        rate, score = jqv(rep["pass_rate"]), jqv(rep["score"])
        self.state["submissions"].append({"kind": "agent", "round": rid, "at": at, "pass_rate": rate, "score": score})
        if rate > self.state["best_pass_rate"]:
            self.state.update(best_pass_rate=rate, best_round=rid, best_score=score)
        info["result_seen_epoch"] = q6(t_seen)
        info["evolve_at"] = at
        size = info["archive_size"]
        content = "\n".join(
            submit_header_lines(size) + submit_round_lines(rid, None) + submit_result_lines(rid, rep)
        ).strip("\n")
        cl.tool_result(tid, content, dt=t_seen + R.uniform(0.1, 0.3) - cl.t, tur=bash_tur(content))
        if rep["total_tests"] == 0:
            self.pending_text = (
                f"{rid} came back with no results at all (0 tests, no summary) — that looks like a "
                "judge-side failure, not my code. The local suite passes the same tests as before; "
                "I'll keep going and resubmit after the next change."
            )
        else:
            self.pending_text = f"{rid}: {rep['passed']}/{rep['total_tests']} passing. " + self.RC.choice(
                [
                    "Next: the merge conflict cases.",
                    "Next: status ordering.",
                    "Next: checkout edge cases.",
                    "Next: remote commands.",
                    "Next: criss-cross split points.",
                ]
            )
        return info

    def loop(self, seg_end):
        while not self.killed and self.cl.t < min(seg_end, self.t_kill):
            h = self.h(self.cl.t)
            if not self.stop_done and h > 2.2:
                self.stop_done = True
                self.cl.api(
                    self.pre(0.0)
                    + [
                        (
                            "text",
                            "All planned commands are implemented and the suite is at a good pass rate. Stopping here.",
                        )
                    ]
                )
                self.cl.stop_hook()
                self.pending_text = "Continuing with the remaining failures."
                continue
            if h > 2.93 and not self.final_done:
                self.final_done = True
                self.cl.t = max(self.cl.t, self.t_kill - 190)
                self.submit(hang=True)
                continue
            for _ in range(self.RC.randint(12, 24)):
                self.action()
                if self.cl.t >= seg_end:
                    return
            self.submit()

    def build(self):
        R = self.R
        task = self.task
        cfg = run_config(
            self.task_id,
            "claude-code",
            self.model,
            self.timeout,
            self.interval,
            False,
            "http://host.docker.internal:8080",
        )
        self.write_configs(cfg)
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], False)
        t0 = epoch_of(2026, 5, 6, 14, 20, 7, 120) + 0.512
        stale = "SFORGE_" + self.ids.hexn(12)
        s = self.setup(
            t0,
            agent="claude-code",
            install_cmds=[NODE_INSTALL_CMD, "sudo -E npm install -g @anthropic-ai/claude-code@2.1.159"],
            install_outs=["", NPM_OUT_CLAUDE.format(s=19)],
            internet=False,
            stale_chain=stale,
            eval_interval=self.interval,
            prompt=prompt,
        )
        self.started = s["started_at"]
        self.judge = Judge(task, self.clock, "docker", self.ids, R, self.tdir)
        self.auto = AutoEval(self, s["t_ae"], self.interval, extract=(0.7, 1.6))
        self.out = TextFile()
        tools = [t for t in CLAUDE_TOOLS if t not in ("WebSearch", "WebFetch")]
        self.cl = Claude(self.ids, R, self.out, model=self.model, version="2.1.159", cwd=GL_CWD, tools=tools)
        self.stop_done = self.final_done = False
        cmd = f"{CLAUDE_RUN} --model {self.model} --disallowedTools WebSearch,WebFetch"
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {cmd[:200]}... (timeout={self.timeout:.0f}s)")
        seg1 = t + 0.03
        self.cl.start_segment(seg1, self.ids.uuid(), tokens_of(prompt))
        self.cl.init(R.uniform(2.0, 3.0))
        self.pending_text = "I'll read the spec and the skeleton first."
        self.step(
            "Bash",
            {"command": f"cd {GL_CWD} && ls -R | head -40 && wc -l SPEC.md", "description": "Survey repository"},
            "gitlet\ngitlet/__init__.py\ngitlet/__main__.py\nSPEC.md\ntests\n412 SPEC.md",
            pre=self.pre(0.0),
            tur=bash_tur("gitlet\ngitlet/__init__.py\ngitlet/__main__.py\nSPEC.md\ntests\n412 SPEC.md"),
        )
        seg1_end = self.started + 1.15 * 3600
        self.loop(seg1_end)
        # Node heap exhaustion kills the CLI: no result event, raw noise lines, then resume
        for ln in OOM_NOISE.split("\n"):
            self.cl.t += 0.0005
            self.cl.raw(ln)
        t_exit = self.cl.t + 0.2
        self.cl.end_segment(t_exit, "crash (Node heap OOM), resumed")
        e1 = t_exit - seg1
        remaining = self.timeout - e1
        self.log.info(t_exit + 0.001, f"Agent exited after {e1:.1f}s, will resume")
        rcmd = f"{CLAUDE_RESUME} --model {self.model} --disallowedTools WebSearch,WebFetch"
        self.log.info(t_exit + 0.002, f"Resuming agent (attempt 1/100, {remaining:.0f}s left): {rcmd[:200]}...")
        seg2 = t_exit + 0.03
        self.t_kill = seg2 + int(remaining) + 0.27
        self.cl.start_segment(seg2, self.ids.uuid(), 12, resumed_ctx=self.cl.ctx[None])
        self.cl.init(R.uniform(2.5, 3.5))
        self.pending_text = "The previous process died (out of memory). Resuming: re-running the suite locally first."
        self.local_pytest()
        self.loop(float("inf"))
        self.out.items = [it for it in self.out.items if it[1] <= self.t_kill]
        self.cl.end_segment(self.t_kill, "timeout (killed)")
        runtime = e1 + (self.t_kill - seg2)
        L = self.log
        t = self.t_kill + 0.01
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=1")
        self.auto.stop(t, self.fire_auto)
        L.info(t + 0.001, "Auto-eval thread stopped")
        archive = tiny_targz([(f, f"# {f} (synthetic)\n") for f in self.files()])
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(0.8, 1.6)
        L.info(t, f"Final archive: {len(archive)} bytes")
        self.write("evolve_state.json", jdump(self.state))
        t += R.uniform(0.3, 0.7)
        L.info(t, "Work container processes stopped")
        deadline = t + 900
        drain = 0
        while t < deadline:
            t += R.uniform(0.005, 0.02)
            hist = self.judge.history(self.run_id, "pass_rate_first", "maximize", at=t)
            pend = [e for e in hist["entries"] if e["status"] == "running"]
            if not pend:
                break
            L.info(t, f"Draining {len(pend)} pending judge evals...")
            drain += 1
            t += 15.0
        else:
            L.warning(t, "Drain timed out after 15 min; some reports may be missing.")
        t += 0.02
        hist = self.judge.history(self.run_id, "pass_rate_first", "maximize", at=t)
        self.write("run_history.json", jdump(hist))
        L.info(
            t + 0.002,
            f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
            f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
            f"resumes=1, runtime={runtime:.1f}s",
        )
        t += 0.01
        L.info(t, f"Network isolation cleaned up: chain={self.chain}")
        t += 0.01
        L.info(t, f"Stopping container {self.container}...")
        t += R.uniform(10.1, 10.5)
        L.info(t, f"Removing container {self.container}...")
        t += R.uniform(0.3, 0.8)
        cid = self.ids.hexn(64)
        L.error(
            t,
            f"Failed to remove container {self.container}: 409 Client Error for "
            f"http+docker://localhost/v1.47/containers/{cid}?v=False&link=False&force=True: Conflict "
            f'("removal of container {cid} is already in progress")\n' + DOCKER_RM_TRACEBACK.format(cid=cid),
        )
        self.t_history = t
        self.write("run_agent.log", self.log.text())
        self.auto.write()
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        self.final_result(
            "claude-code",
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
        # an operator re-graded the final archive afterwards with `sforge eval` (ignored by the visualizer)
        self.manual_eval(t + 1800)
        self.runtime, self.drain, self.hist = runtime, drain, hist
        self.seg_times = [(seg1, t_exit), (seg2, self.t_kill)]

    def manual_eval(self, t):
        d = self.tdir / "submissions" / "manual-1"
        d.mkdir(parents=True)
        st = gl_statuses(self.unlock, 3.0, random.Random(5))
        runtime = 13.42
        rep = report_dict(self.task_id, self.run_id, gl_grade(st), False, runtime, q6(t), None)
        log = RunLog(self.clock)
        log.info(t + 0.9, "Judge container started: " + self.ids.hexn(64))
        log.info(t + 0.92, "Archive saved (" + str(len(tiny_targz([("gitlet/__init__.py", "")]))) + " bytes)")
        log.info(t + 1.4, "Archive extracted: 7 file(s) allowed, 0 rejected")
        log.info(t + 1.5, "Running eval script...")
        log.info(t + 1.5 + runtime, f"Test runtime: {runtime:.2f}s, timed_out: False")
        log.info(
            t + 1.52 + runtime,
            f"Result: {rep['passed']}/{rep['total_tests']} passed (pass_rate={rep['pass_rate']:.2%})",
        )
        (d / "run_instance.log").write_text(log.text())
        (d / "eval.sh").write_text(eval_script(self.task["judge"]["eval_cmd"]))
        (d / "test_output.txt").write_text(gl_pytest_output(st, runtime))
        (d / "report.json").write_text(jdump(rep))

    def truth(self) -> dict:
        rounds = []
        for info in self.judge.rounds:
            rep = info.get("report")
            rounds.append(
                {
                    "round": info["round"],
                    "kind": info["kind"],
                    "submission_id": info["submission_id"],
                    "submit_call_epoch": info.get("submit_call_epoch"),
                    "tool_use_id": info.get("tool_use_id"),
                    "post_epoch": info["post_epoch"],
                    "grading_start_epoch": info["grading_start_epoch"],
                    "grading_end_epoch": info["grading_end_epoch"],
                    "completed_epoch": info["completed_epoch"],
                    "result_seen_epoch": info.get("result_seen_epoch"),
                    "evolve_at": info.get("evolve_at"),
                    "tick_log_epoch": info.get("tick_log_epoch"),
                    "elapsed_hours": round(self.h(info["grading_start_epoch"]), 4),
                    "has_report": info["has_report"],
                    "pass_rate": rep["pass_rate"] if rep else 0.0,
                    "passed": rep["passed"] if rep else 0,
                    "total_tests": rep["total_tests"] if rep else 0,
                    "score": (
                        "NaN"
                        if rep and isinstance(rep["score"], float) and math.isnan(rep["score"])
                        else (rep["score"] if rep else None)
                    ),
                    "timed_out": rep["timed_out"] if rep else False,
                    "outcome": info["outcome"],
                    "report_written_after_run_end": info["grading_end_epoch"] > self.t_history,
                }
            )
        disk = [r["history"] for r in self.judge.rounds]
        best_disk = select_best(disk, "maximize", "pass_rate_first")
        return {
            "segments": [
                {"start_epoch": q6(a), "end_epoch": q6(b), "ended_by": how, "session_id": sg["session_id"]}
                for (a, b), how, sg in zip(
                    self.seg_times,
                    ["crash (Node heap OOM, no result event), auto-resumed", "timeout (killed by harness)"],
                    self.cl.segments,
                )
            ],
            "rounds": rounds,
            "expected": {
                "best_round": self.hist["best_round"],
                "best_pass_rate": self.hist["best_pass_rate"],
                "best_round_recomputed_from_disk": best_disk.best_round,
                "agent_rounds": sum(1 for r in rounds if r["kind"] == "agent"),
                "auto_rounds": sum(1 for r in rounds if r["kind"] == "auto"),
                "total_rounds": len(rounds),
                "rounds_without_report": [r["round"] for r in rounds if not r["has_report"]],
                "nan_score_rounds": [r["round"] for r in rounds if r["score"] == "NaN"],
                "rounds_running_in_run_history": [e["round"] for e in self.hist["entries"] if e["status"] == "running"],
                "manual_rounds_to_ignore": ["manual-1"],
                "runtime_seconds": self.runtime,
                "resume_count": 1,
                "timed_out": True,
                "infra_error_lines": 1,
                "drain_log_lines": self.drain,
                "drain_timed_out": True,
            },
        }


def build_gitlet(root: Path) -> dict:
    task = gl_task()
    write_task(root, task)
    run = GitletRun(root, task)
    run.build()
    spec = run.truth()
    data = (run.tdir / "agent_output.txt").read_bytes()
    spec["transcript"] = {
        "format": "claude-code stream-json",
        "claude_code_version": "2.1.159",
        "analysis": analyse_claude(data),
        "user_event_timestamps": "present (container clock == host clock, skew 0)",
        "assistant_event_timestamps": "absent",
    }
    common = {
        "agent": "claude-code",
        "model": run.model,
        "started_at_epoch": run.started,
        "exercises": [
            "pass-rate task (pytest_v, pass_rate_first) with per-test results",
            "auto-resume after a Node OOM crash (noise lines, no result event, second init)",
            "infra ERROR + traceback in run_agent.log (docker container removal)",
            "round folder without report.json (judge container could not be created)",
            "report.json with a NaN score token and timed_out=true, written after the run ended",
            "drain timed out: run_history.json keeps a running entry",
            "internet disabled (iptables chain lines, --disallowedTools)",
            "manual-1 folder from a later `sforge eval` (to be ignored)",
        ],
    }
    return write_truth(run, common, spec, run.index)
