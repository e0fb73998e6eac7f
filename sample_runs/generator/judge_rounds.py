"""The judge's side of a generated run: grading replicas and one ``submissions/<round>/`` folder per
graded round, in the order and shape of SForge's ``judge_submission()``.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from edgetui.replay.rescale import rescale
from edgetui.replay.selection import select_best

from .sforge_texts import eval_script, k8s_name
from .writers import Clock, Ids, RunLog, jdump, q6


# ---------------------------------------------------------------------------
# Grading replicas (sforge.harness.grading); selection and rescale are the project's own
# (edgetui.replay.selection, edgetui.replay.rescale: SForge's semantics, tested against it)
# ---------------------------------------------------------------------------


def report_dict(task_id, sid, g: dict, timed_out, runtime, submitted_at, score_0_100) -> dict:
    """EvalReport.to_dict() key order."""
    return {
        "task_id": task_id,
        "submission_id": sid,
        "total_tests": g["total_tests"],
        "passed": g["passed"],
        "failed": g["failed"],
        "errors": g["errors"],
        "pass_rate": g["pass_rate"],
        "score": g["score"],
        "score_0_100": score_0_100,
        "timed_out": timed_out,
        "runtime_seconds": runtime,
        "test_details": g["test_details"],
        "valid": g["valid"],
        "summary": g["summary"],
        "details": g["details"],
        "metrics": g["metrics"],
        "submitted_at": submitted_at,
    }


def grade_structured(data: dict) -> dict:
    raw = data.get("details", [])
    details = [{"name": d.get("name", ""), "status": d.get("status", ""), "message": d.get("message"),
                "score": d.get("score"), "weight": d.get("weight")} for d in raw]
    if raw:
        passed = sum(1 for d in raw if d.get("status") == "PASSED")
        failed = sum(1 for d in raw if d.get("status") == "FAILED")
        errors = sum(1 for d in raw if d.get("status") == "ERROR")
        total = len(raw)
    else:
        passed, failed = data.get("passed", 0), data.get("failed", 0)
        errors, total = data.get("errors", 0), data.get("total_tests", 0)
    pr = data.get("pass_rate")
    if pr is None:
        pr = passed / total if total > 0 else 0.0
    return {"total_tests": total, "passed": passed, "failed": failed, "errors": errors, "pass_rate": pr,
            "score": data.get("score"), "test_details": [], "valid": data.get("valid", True),
            "summary": data.get("summary"), "details": details, "metrics": data.get("metrics", {})}


def grade_legacy(results: list[dict], score=None) -> dict:
    """results already in parser order (named passed, failed, error)."""
    total = len(results)
    passed = sum(1 for r in results if r["status"] == "PASSED")
    failed = sum(1 for r in results if r["status"] == "FAILED")
    errors = sum(1 for r in results if r["status"] == "ERROR")
    if total:
        summary = f"{passed}/{total} tests passed"
        bad = [r["name"] for r in results if r["status"] != "PASSED"]
        if bad:
            summary += f". Failed: {', '.join(bad[:10])}"
            if len(bad) > 10:
                summary += f" (+{len(bad) - 10} more)"
    else:
        summary = "No tests found"
    return {"total_tests": total, "passed": passed, "failed": failed, "errors": errors,
            "pass_rate": passed / total if total else 0.0, "score": score,
            "test_details": [dict(r) for r in results], "valid": True, "summary": summary,
            "details": [{"name": r["name"], "status": r["status"], "message": None, "score": None,
                         "weight": None} for r in results],
            "metrics": {}}


EMPTY_GRADE = {"total_tests": 0, "passed": 0, "failed": 0, "errors": 0, "pass_rate": 0.0, "score": None,
               "test_details": [], "valid": True, "summary": None, "details": [], "metrics": {}}


def history_entry(sid, task_id, round_id, rep: dict | None, status="completed") -> dict:
    e = {"type": "submission", "status": status, "submission_id": sid, "task_id": task_id, "round": round_id}
    if rep is not None:
        e.update({"pass_rate": rep["pass_rate"], "score": rep["score"], "passed": rep["passed"],
                  "failed": rep["failed"], "total_tests": rep["total_tests"], "valid": rep["valid"],
                  "summary": rep["summary"]})
    return e


def api_report(rep: dict) -> dict:
    r = dict(rep)
    r.pop("score_0_100", None)
    return r


# ---------------------------------------------------------------------------
# Judge side: one folder per graded round
# ---------------------------------------------------------------------------


class Judge:
    """Writes submissions/<round>/ exactly in the order and shape of judge_submission()."""

    def __init__(self, task: dict, clock: Clock, backend: str, ids: Ids, R: random.Random,
                 task_dir: Path, benchmark="edgebench"):
        self.task, self.clock, self.backend, self.ids, self.R = task, clock, backend, ids, R
        self.task_dir = task_dir
        self.benchmark = benchmark
        self.rounds: list[dict] = []          # creation order (= judge history order)

    def container_name(self, sid):
        return f"{self.benchmark}.judge.{self.task['task_id']}.{sid}"

    def grade(self, round_id: str, kind: str, t_post: float, archive_size: int, eval_runtime: float,
              test_output: str | None, graded: dict | None, *, allowed_files: list[str],
              timed_out=False, failure: str | None = None, nan_score=False, archive_bytes: bytes | None = None
              ) -> dict:
        R = self.R
        sid = self.ids.hexn(12)
        d = self.task_dir / "submissions" / round_id
        d.mkdir(parents=True, exist_ok=True)
        log = RunLog(self.clock)
        submitted_at = q6(t_post + R.uniform(0.04, 0.35))
        t = submitted_at
        name = self.container_name(sid)
        info = {"round": round_id, "kind": kind, "submission_id": sid, "post_epoch": q6(t_post),
                "grading_start_epoch": submitted_at, "archive_size": archive_size}
        if failure:
            t += R.uniform(0.3, 0.9)
            log.error(t, failure)
            t += 0.01
            (d / "run_instance.log").write_text(log.text())
            info.update(grading_end_epoch=q6(t), completed_epoch=q6(t + 0.01), report=None, has_report=False)
            rep_api = dict(report_dict(self.task["task_id"], sid, EMPTY_GRADE, False, 0.0, submitted_at, None))
            rep_api.pop("score_0_100")
            info["api_report"] = rep_api
            info["history"] = history_entry(sid, self.task["task_id"], round_id, rep_api)
            self.rounds.append(info)
            return info
        t += R.uniform(4.0, 11.0) if self.backend == "k8s" else R.uniform(0.6, 1.6)
        cid = self.ids.uuid() if self.backend == "k8s" else self.ids.hexn(64)
        log.info(t, f"Judge container started: {cid}")
        t += R.uniform(0.005, 0.03)
        if archive_bytes is not None:
            (d / "submission.tar.gz").write_bytes(archive_bytes)
        log.info(t, f"Archive saved ({archive_size} bytes)")
        t += R.uniform(0.2, 0.7)
        (d / "allowed_files.txt").write_text("\n".join(allowed_files) + "\n")
        log.info(t, f"Archive extracted: {len(allowed_files)} file(s) allowed, 0 rejected")
        t += R.uniform(0.05, 0.2)
        (d / "eval.sh").write_text(eval_script(self.task["judge"]["eval_cmd"]))
        log.info(t, "Running eval script...")
        t += eval_runtime + R.uniform(0.01, 0.05)
        (d / "test_output.txt").write_text(test_output)
        log.info(t, f"Test runtime: {eval_runtime:.2f}s, timed_out: {timed_out}")
        s100 = rescale(graded["score"], self.task["judge"].get("rescale"))
        if nan_score:
            graded = dict(graded, score=math.nan)
            s100 = None
        rep = report_dict(self.task["task_id"], sid, graded, timed_out, eval_runtime, submitted_at, s100)
        t += R.uniform(0.002, 0.02)
        (d / "report.json").write_text(jdump(rep))
        log.info(t, f"Result: {rep['passed']}/{rep['total_tests']} passed (pass_rate={rep['pass_rate']:.2%})")
        t_end = t
        t += 0.001
        if self.backend == "k8s":
            pod = k8s_name(name)
            log.info(t, f"Deleting pod {pod}...")
            t += R.uniform(15.1, 16.4)
            log.info(t, f"Pod {pod} deleted.")
        else:
            log.info(t, f"Stopping container {name}...")
            t += R.uniform(10.1, 10.6)
            log.info(t, f"Removing container {name}...")
            t += R.uniform(0.05, 0.3)
            log.info(t, f"Container {name} removed.")
        (d / "run_instance.log").write_text(log.text())
        info.update(grading_end_epoch=q6(t_end), completed_epoch=q6(t + 0.002), report=rep, has_report=True,
                    api_report=api_report(rep))
        info["history"] = history_entry(sid, self.task["task_id"], round_id, info["api_report"])
        self.rounds.append(info)
        return info

    def history(self, run_id, policy, direction, at: float | None = None) -> dict:
        """Admin view of /history at time `at` (None = everything finished)."""
        entries = []
        for r in self.rounds:
            if at is not None and r["post_epoch"] > at:
                continue
            if at is not None and r["completed_epoch"] > at:
                entries.append({"type": "submission", "status": "running", "submission_id": r["submission_id"],
                                "task_id": self.task["task_id"], "round": r["round"]})
            else:
                entries.append(r["history"])
        best = select_best(entries, direction, policy)
        return {"run_id": run_id, "best_score": best.best_score, "best_pass_rate": best.best_pass_rate,
                "best_round": best.best_round,
                "agent_submissions": sum(1 for e in entries if (e.get("round") or "").startswith("agent-")),
                "auto_submissions": sum(1 for e in entries if (e.get("round") or "").startswith("auto-")),
                "entries": entries}

    def agent_view(self, run_id, policy, direction, at: float) -> dict:
        full = self.history(run_id, policy, direction, at)
        entries = [e for e in full["entries"] if not (e.get("round") or "").startswith("auto-")]
        best = select_best(entries, direction, policy)
        return {"run_id": run_id, "best_score": best.best_score, "best_pass_rate": best.best_pass_rate,
                "best_round": best.best_round,
                "agent_submissions": sum(1 for e in entries if e.get("type") == "submission"),
                "auto_submissions": 0, "entries": entries}
