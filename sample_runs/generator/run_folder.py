"""The scaffolding of one generated ``<run_id>/<task_id>`` folder: ``run_config.json``, the harness's
``run_agent.log`` start and end, the auto-eval thread's ticks, and the task JSON.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from .sforge_texts import CODEX_CONFIG_APPEND, SFORGE_SUBMIT_SH, STOP_HOOK_SH, claude_settings_json, codex_hooks_json
from .writers import Clock, Ids, RunLog, jdump, q6


# ---------------------------------------------------------------------------
# Shared run scaffolding
# ---------------------------------------------------------------------------


def jqv(x):
    """A number after a round trip through jq (integral floats print as ints)."""
    if isinstance(x, float) and math.isfinite(x) and x == int(x):
        return int(x)
    return x


def run_config(task_id, agent, model, timeout, eval_interval, internet, judge_url, *, work_cpu=None,
               work_mem=None, judge_cpu=None, judge_mem=None, max_submissions=None, cooldown=None,
               api_base_url=None, api_key=False, extra_env=None, disable_auto_eval=False) -> dict:
    d = {"task_id": task_id, "agent": agent, "model": model, "effort": None, "timeout": timeout,
         "eval_interval": eval_interval, "disable_stop_hook": False, "disable_auto_eval": disable_auto_eval,
         "disable_auto_resume": False, "internet": internet, "judge_url": judge_url,
         "work_cpu_limit": work_cpu, "work_mem_limit": work_mem, "judge_cpu_limit": judge_cpu,
         "judge_mem_limit": judge_mem, "max_submissions": max_submissions, "submission_cooldown": cooldown}
    if api_base_url:
        d["api_base_url"] = api_base_url
    if api_key:
        d["api_key"] = "<redacted>"
    if extra_env:
        d["extra_env"] = extra_env
    return d


NPM_OUT_CLAUDE = ("\nadded 3 packages in {s}s\n\n2 packages are looking for funding\n  run `npm fund` for details\n"
                  "npm notice\nnpm notice New major version of npm available! 10.8.2 -> 11.4.2\n"
                  "npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.4.2\n"
                  "npm notice To update run: npm install -g npm@11.4.2\nnpm notice\n")
NPM_OUT_CODEX = "\nadded 1 package in {s}s\n"


class RunBase:
    """Common writer for one <run_id>/<task_id> directory plus its truth record."""

    def __init__(self, root: Path, run_id: str, task: dict, clock: Clock, backend: str, seed: int,
                 ip: str | None = None):
        self.root, self.run_id, self.task, self.clock, self.backend = root, run_id, task, clock, backend
        self.task_id = task["task_id"]
        self.ip = ip
        self.run_root = root / "runs" / ip / run_id if ip else root / "runs" / run_id
        self.tdir = self.run_root / self.task_id
        self.tdir.mkdir(parents=True, exist_ok=True)
        self.R = random.Random(seed)          # timing / scores
        self.RC = random.Random(seed + 7)     # text content
        self.ids = Ids(seed + 13)
        self.log = RunLog(clock)
        self.container = f"sforge.run.{self.task_id}.{run_id}"
        self.notes: list[str] = []

    def rel(self) -> str:
        return str(self.tdir.relative_to(self.root))

    def write(self, name: str, text: str):
        (self.tdir / name).write_text(text)

    def write_configs(self, cfg: dict, experiment: str | None = None, stagger=None, experiment_yaml: str | None = None):
        self.cfg = cfg
        self.write("run_config.json", jdump(cfg))
        (self.run_root / "run_config.json").write_text(jdump(
            {"run_id": self.run_id, "experiment": experiment, "stagger": stagger, "tasks": {self.task_id: cfg}}))
        if experiment_yaml:
            (self.run_root / "experiment.yaml").write_text(experiment_yaml)

    def setup(self, t0: float, *, agent: str, install_cmds: list[str], install_outs: list[str], game=False,
              internet=True, judge_url="http://host.docker.internal:8080", stale_chain: str | None = None,
              eval_interval=0, prompt: str = "", net_ip="172.17.0.3") -> dict:
        """run_agent.log lines up to 'Running agent'. Returns key times."""
        R, L = self.R, self.log
        t = t0
        if stale_chain:
            L.info(t, f"Removing stale iptables chain: {stale_chain}")
            t += R.uniform(0.2, 0.5)
        t += R.uniform(0.05, 0.4)
        L.info(t, "Images ready")
        t += R.uniform(0.03, 0.12)
        L.info(t, "Registered session with judge server")
        if not internet:
            t += R.uniform(0.01, 0.05)
            L.info(t, "Resolved api.anthropic.com -> ['160.79.104.10']")
            t += 0.001
            L.info(t, "Network isolation enabled: preflight passed")
        t += R.uniform(18.0, 42.0) if self.backend == "k8s" else R.uniform(0.8, 2.2)
        L.info(t, f"Container started: {self.container} (judge_url={judge_url})")
        for i, cmd in enumerate(install_cmds):
            t += 0.002
            L.info(t, f"Install step {i + 1}/{len(install_cmds)}: {cmd}")
            dur = R.uniform(9.0, 16.0) if i == 0 else R.uniform(14.0, 31.0) if i == 1 else R.uniform(0.2, 0.6)
            t += dur
            L.info(t, f"Install step {i + 1} done ({dur:.1f}s)")
        self.write("install_output.txt", "\n".join(install_outs))
        t += 0.003
        L.info(t, "Agent installation complete")
        if not game:
            self.write("_sforge-submit.sh", SFORGE_SUBMIT_SH)
            t += R.uniform(0.3, 0.9)
            L.info(t, "Installed sforge-submit script")
        if agent.startswith("codex"):
            self.write("_codex-stop-hook.sh", "#!/bin/bash\ncat >/dev/null\n"
                       "echo '{\"decision\":\"block\",\"reason\":\"Do not stop. Continue working on the implementation.\"}'\n")
            t += R.uniform(0.3, 0.9)
            L.info(t, "Installed Codex stop hook")
            self.write("_codex_hooks.json", codex_hooks_json())
            self.write("_codex_config_append.toml", CODEX_CONFIG_APPEND)
            t += R.uniform(0.4, 1.2)
            L.info(t, "Configured Codex hooks")
        else:
            self.write("_stop-hook.sh", STOP_HOOK_SH)
            t += R.uniform(0.3, 0.9)
            L.info(t, "Installed Claude Code stop hook")
            self.write("_claude_settings.json", claude_settings_json())
            t += R.uniform(0.4, 1.2)
            L.info(t, "Configured Claude Code settings with hooks")
        t_ae = None
        if not game and eval_interval:
            t += 0.001
            t_ae = t
            L.info(t, f"Host-side auto-eval started (interval={eval_interval}s)")
        if not internet:
            t += R.uniform(0.01, 0.05)
            L.info(t, "Resolved api.anthropic.com -> ['160.79.104.10']")
            t += R.uniform(0.6, 1.4)
            self.chain = "SFORGE_" + self.ids.hexn(12)
            L.info(t, f"Network isolation applied: chain={self.chain}, ip={net_ip}, ip6=None, allowed=2 endpoints")
        self.write("agent_prompt.md", prompt)
        t += R.uniform(0.3, 1.1)
        L.info(t, f"Prompt written ({len(prompt)} bytes)")
        t += R.uniform(0.001, 0.004)
        started = q6(t)
        self.write("started_at", f"{self.clock.iso_s(started)}\n{started!r}\n")
        return {"t": t, "t_ae": t_ae, "started_at": started}

    def final_result(self, agent, model, hist_or_best: dict, total, agent_subs, auto_subs, timed_out, runtime,
                     archive_size, resumes, *, legacy=False) -> dict:
        d = {"agent": agent, "task": self.task_id, "run_id": self.run_id, "model": model}
        if not legacy:
            d["effort"] = None
        d.update({"best_pass_rate": hist_or_best["best_pass_rate"], "best_round": hist_or_best["best_round"],
                  "total_rounds": total, "agent_submissions": agent_subs, "auto_submissions": auto_subs,
                  "timed_out": timed_out, "runtime_seconds": runtime, "archive_size_bytes": archive_size})
        if not legacy:
            d["resume_count"] = resumes
        if hist_or_best.get("best_score") is not None:
            d["best_score"] = float(hist_or_best["best_score"])
        self.write("final_result.json", jdump(d))
        return d


class AutoEval:
    """Host-side auto-eval thread: ticks every `interval` s after the previous tick finished."""

    def __init__(self, run: RunBase, t_start: float, interval: int, extract=(1.0, 2.6)):
        self.run, self.interval, self.extract = run, interval, extract
        self.next_start = t_start + interval
        self.R = random.Random(run.R.random())
        self.n = 0
        self.lines: list[str] = []
        self.ticks: list[dict] = []
        self.stopped_at: float | None = None

    def pending_post(self) -> float:
        if not hasattr(self, "_dur") or self._dur_for != self.next_start:
            self._dur = self.R.uniform(*self.extract)
            self._dur_for = self.next_start
        return self.next_start + self._dur

    def flush(self, upto: float, fire) -> None:
        """Run every tick whose POST happens before `upto`. fire(round, t_post) -> judge info."""
        while self.stopped_at is None or self.pending_post() < self.stopped_at:
            t_post = self.pending_post()
            if t_post > upto:
                return
            self.n += 1
            rid = f"auto-{self.n}"
            info = fire(rid, t_post)
            t_resp = info["grading_start_epoch"] + self.R.uniform(0.005, 0.04)
            self.lines.append(f"[{self.run.clock.iso_s(t_resp)}] submitted {info['archive_size']} bytes -> "
                              f"{info['submission_id']} round={rid}")
            info["tick_log_epoch"] = q6(t_resp)
            info["tick_start_epoch"] = q6(self.next_start)
            self.ticks.append(info)
            self.next_start = t_resp + self.interval
        return

    def stop(self, t: float, fire):
        self.flush(t, fire)
        self.stopped_at = t

    def write(self):
        self.run.write("auto_eval_ticks.log", "".join(s + "\n" for s in self.lines))


def write_task(root: Path, task: dict):
    (root / "tasks" / f"{task['task_id']}.json").write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n")
