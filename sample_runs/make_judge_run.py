#!/usr/bin/env python3
"""Record the sample run ``runs/judge-demo-001/judge_demo_sum`` against the REAL SForge judge.

Unlike ``generate.py`` (synthetic, seeded), this script runs things for real and keeps what they wrote:

* ``sforge serve`` from the installed ``sforge`` package (PyPI 1.1.0), on 127.0.0.1 with a free port, its
  own log dir and a tasks dir holding ``tasks/judge_demo_sum.json`` (written by this script, copied to
  ``sample_runs/tasks/``) and a copy of ``tasks/BENCHMARK.yaml``;
* a judge image ``edgebench.judge.judge_demo_sum:<judge.image_tag>`` built here from the host's static
  busybox (``tests/docker_images.py``: no registry) plus a grader ``/opt/judge/grade.sh`` that runs the
  submitted ``solve.sh`` on six cases and prints ``score_sum`` lines;
* run ``judge-demo-001`` registered over HTTP with the admin secret the judge created;
* a scripted agent (no language model) that writes five versions of ``solve.sh`` into a host workspace
  and submits each with the real ``sforge-submit`` script (from ``sforge.harness.evolve_scripts``; bash,
  curl, jq and GNU tar run on the host instead of a work container), plus a host-side auto-eval thread that
  POSTs ``kind=auto`` snapshots with the admin secret, as ``run_agent`` does (at most two ticks);
* the judge grades every archive in its own busybox judge container and writes
  ``submissions/<round>/`` into its log dir.

The judge and this script share one log dir (as ``sforge run`` and ``sforge serve`` do when started from the
same directory), so the task dir ends up complete: ``submissions/`` exactly as the judge wrote it, and around
it the files ``run_agent`` / the CLI would write, written by this script in SForge's formats:
``run_config.json`` (run root and task), ``run_agent.log``, ``_sforge-submit.sh``, ``agent_prompt.md``,
``started_at``, ``agent_output.txt`` (Claude Code stream-json; the ``sforge-submit`` tool results are the
script's real output), ``auto_eval_ticks.log``, ``final_archive.tar.gz``, ``evolve_state.json`` (the
state file the real sforge-submit script kept), ``run_history.json`` (the judge's real admin ``/history``)
and ``final_result.json``. The task dir is then copied to ``sample_runs/runs/judge-demo-001/`` and a truth
file ``sample_runs/_truth/judge-demo-001__judge_demo_sum.json`` is written (true epochs of every transcript
line, every round's times and results).

Usage (needs Docker, ``/bin/busybox`` static, bash, curl, jq, GNU tar and the sforge package)::

    .venv/bin/python sample_runs/make_judge_run.py      # about 2 min; replaces the previous recording

The output differs on every run (real times, real submission ids); the committed copy is one recording.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from docker_images import JUDGE_EXTRAS, build_busybox_image, remove_containers, remove_image  # noqa: E402 - after sys.path is set above

RUN_ID = "judge-demo-001"
TASK_ID = "judge_demo_sum"
BENCH = "edgebench"  # tasks/BENCHMARK.yaml name: judge image / container prefix
MODEL = "scripted-demo"  # there is no language model: the agent is this script
CWD = "/work"
EVAL_INTERVAL = 30  # auto-eval period (s)
MAX_TICKS = 2  # auto-eval ticks kept (keeps the sample small)
AGENT_TIMEOUT = 900
CLAUDE_CODE_VERSION = "2.1.159"

#: the grader baked into the judge image (busybox sh): six cases, points per case, score_sum output
GRADER = r"""#!/bin/sh
# Grader of the edgetui demo task judge_demo_sum (baked into the judge image).
# Runs ./solve.sh on six cases and prints score_sum lines (CASE <id> <OK|WA|RE|CE> score=<points>).
total=0
ok=0
n=0
check() {
    id=$1; pts=$2; want=$3; shift 3
    n=$((n + 1))
    if [ ! -f ./solve.sh ]; then
        echo "CASE $id CE score=0"
        return
    fi
    got=$(sh ./solve.sh "$@" 2>/tmp/stderr_$id)
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "CASE $id RE score=0"
        echo "  exit $rc: $(head -n 1 /tmp/stderr_$id)"
    elif [ "$got" = "$want" ]; then
        echo "CASE $id OK score=$pts"
        total=$((total + pts))
        ok=$((ok + 1))
    else
        echo "CASE $id WA score=0"
        echo "  expected '$want', got '$got'"
    fi
}
check 01 10 5 2 3
check 02 10 6 10 -4
check 03 15 7 7
check 04 15 0
check 05 20 55 1 2 3 4 5 6 7 8 9 10
check 06 30 17 08 09
echo "TOTAL_SCORE $total"
echo "CASES_OK $ok"
echo "CASES_TOTAL $n"
"""
JUDGE_TAG = hashlib.sha1(GRADER.encode()).hexdigest()[:12]

AGENT_QUERY = """# Sum the arguments (edgetui demo task, recorded with the real SForge judge)

Write `solve.sh`, a POSIX shell script: `sh solve.sh <int> <int> ...` prints the sum of its integer
arguments on one line (no arguments: `0`). Arguments are decimal and may be negative or carry leading
zeros (`08` is eight). The judge runs `solve.sh` with the image's `sh` on six hidden cases worth
10/10/15/15/20/30 points; the score is the sum of the points of the cases answered correctly."""

TASK = {
    "task_id": TASK_ID,
    "name": "Sum the integer arguments (edgetui judge demo)",
    "base_image": "python311",
    "platform": "linux/amd64",
    "cwd": CWD,
    "submit_paths": ["solve.sh"],
    "submit_exclude": ["tests/"],
    "internet": True,
    "game_mode": False,
    "category": "edgetui demo (recorded with the real SForge judge, see sample_runs/README.md)",
    "work": {"agent_query": AGENT_QUERY, "image_tag": "busyboxdemo1"},
    "judge": {
        "eval_cmd": "cd /work && sh /opt/judge/grade.sh",
        "eval_timeout": 60,
        "parser": "score_sum",
        "score_direction": "maximize",
        "selection": "score_first",
        "rescale": {"kind": "linear", "lower": 0.0, "upper": 100.0},
        "image_tag": JUDGE_TAG,
    },
}

#: the five versions of solve.sh the scripted agent writes, in order
SOLVE_V1 = """#!/bin/sh
echo $(($1 + $2))
"""
SOLVE_V2 = """#!/bin/sh
# sum of all arguments
for x; do
    s=$((s + x))
done
echo $s
"""
SOLVE_V3 = """#!/bin/sh
# sum of all arguments (python: no shell arithmetic pitfalls)
exec python3 -c 'import sys; print(sum(int(a) for a in sys.argv[1:]))' "$@"
"""
SOLVE_V4 = """#!/bin/sh
# sum of all arguments; 0 without arguments
s=0
for x in "$@"; do
    s=$((s + x))
done
echo "$s"
"""
SOLVE_V5 = """#!/bin/sh
# sum of all arguments; 0 without arguments; decimal even with leading zeros (08 is eight)
s=0
for x in "$@"; do
    sign=+
    case $x in
        -*) sign=-; x=${x#-} ;;
        +*) x=${x#+} ;;
    esac
    while [ ${#x} -gt 1 ] && [ "${x#0}" != "$x" ]; do
        x=${x#0}
    done
    s=$((s $sign x))
done
echo "$s"
"""


# ---------------------------------------------------------------------------- small helpers


def jdump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def jline(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sforge_cli() -> str:
    exe = Path(sys.executable).with_name("sforge")
    if exe.exists():
        return str(exe)
    found = shutil.which("sforge")
    if not found:
        raise SystemExit("the sforge package (sforge==1.1.0) is not installed in this environment")
    return found


class RunLog:
    """``run_agent.log`` in SForge's logging format (host local time, milliseconds)."""

    def __init__(self, path: Path):
        self.fp = open(path, "a", encoding="utf-8")

    def __call__(self, msg: str, level: str = "INFO") -> float:
        t = time.time()
        d = datetime.fromtimestamp(t)
        self.fp.write(d.strftime("%Y-%m-%d %H:%M:%S") + ",%03d - %s - %s\n" % (d.microsecond // 1000, level, msg))
        self.fp.flush()
        return t

    def close(self) -> None:
        self.fp.close()


class Transcript:
    """``agent_output.txt``: Claude Code stream-json lines appended (and flushed) as they happen; keeps the
    true epoch of every line for the truth file."""

    def __init__(self, path: Path, session_id: str):
        self.fp = open(path, "wb")
        self.session = session_id
        self.line_epochs: list[list] = []
        self.offset = 0
        self.tool_uses: dict[str, int] = {}
        self.n_turns = 0
        self.usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        self.context = 9000

    def emit(self, obj: dict) -> tuple[int, float]:
        data = (jline(obj) + "\n").encode()
        t = time.time()
        off = self.offset
        self.fp.write(data)
        self.fp.flush()
        self.offset += len(data)
        self.line_epochs.append([off, round(t, 6)])
        return off, t

    def init(self) -> None:
        self.emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": CWD,
                "session_id": self.session,
                "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite"],
                "mcp_servers": [],
                "model": MODEL,
                "permissionMode": "bypassPermissions",
                "apiKeySource": "none",
                "claude_code_version": CLAUDE_CODE_VERSION,
                "output_style": "default",
                "uuid": str(uuid.uuid4()),
            }
        )

    def _usage(self, out_tokens: int) -> dict:
        # placeholder token counts (no model ran): a growing context read from cache, a few new tokens
        u = {
            "input_tokens": 4,
            "cache_creation_input_tokens": 180,
            "cache_read_input_tokens": self.context,
            "output_tokens": out_tokens,
            "service_tier": "standard",
        }
        self.context += 180 + out_tokens
        return u

    def assistant(self, blocks: list[dict], out_tokens: int = 60) -> list[tuple[int, float]]:
        """One API message, one stream-json line per content block (as ``--verbose`` prints them)."""
        mid = "msg_01" + uuid.uuid4().hex[:22]
        usage = self._usage(out_tokens)
        for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            self.usage[k] += usage[k]
        self.n_turns += 1
        out = []
        for b in blocks:
            if b.get("type") == "tool_use":
                self.tool_uses[b["name"]] = self.tool_uses.get(b["name"], 0) + 1
            out.append(
                self.emit(
                    {
                        "type": "assistant",
                        "message": {
                            "model": MODEL,
                            "id": mid,
                            "type": "message",
                            "role": "assistant",
                            "content": [b],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": usage,
                        },
                        "parent_tool_use_id": None,
                        "session_id": self.session,
                        "uuid": str(uuid.uuid4()),
                    }
                )
            )
            time.sleep(0.3)
        return out

    def tool_result(self, tool_use_id: str, content: str, is_error: bool = False, extra: dict | None = None):
        obj = {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}
                ],
            },
            "parent_tool_use_id": None,
            "session_id": self.session,
            "uuid": str(uuid.uuid4()),
        }
        if extra is not None:
            obj["tool_use_result"] = extra
        return self.emit(obj)

    def result(self, started: float, text: str) -> None:
        dur = int((time.time() - started) * 1000)
        self.emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": dur,
                "duration_api_ms": 0,
                "num_turns": self.n_turns,
                "result": text,
                "session_id": self.session,
                "total_cost_usd": 0.0,
                "usage": dict(self.usage),
                "permission_denials": [],
                "uuid": str(uuid.uuid4()),
            }
        )

    def close(self) -> None:
        self.fp.close()


def toolu() -> str:
    return "toolu_01" + uuid.uuid4().hex[:22]


def targz_of(workspace: Path) -> bytes:
    """``tar czf`` of the submit paths as run_agent's auto-eval / final archive does (GNU tar)."""
    with tempfile.NamedTemporaryFile(suffix=".tar.gz", delete=False) as f:
        out = Path(f.name)
    try:
        excludes = [f"--exclude={e.rstrip('/')}" for e in TASK["submit_exclude"]]
        paths = [p for p in TASK["submit_paths"] if (workspace / p).exists()]
        cmd = (
            ["tar", "czf", str(out), "--exclude=.git", *excludes, "--", *paths]
            if paths
            else ["tar", "czf", str(out), "--files-from", "/dev/null"]
        )
        subprocess.run(cmd, cwd=workspace, check=True)
        return out.read_bytes()
    finally:
        out.unlink(missing_ok=True)


def write_atomic(p: Path, text: str) -> None:
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, p)


# ---------------------------------------------------------------------------- the recording


class Recording:
    def __init__(self, tmp: Path):
        import docker
        import requests

        self.requests = requests
        self.tmp = tmp
        self.engine = docker.from_env(timeout=30)
        self.engine.ping()
        self.tasks = tmp / "tasks"
        self.logs = tmp / "logs"
        self.work = tmp / "work"  # the work container's cwd (/work), on the host
        self.bin = tmp / "bin"
        for d in (self.tasks, self.logs, self.work, self.bin):
            d.mkdir()
        self.run_root = self.logs / "runs" / RUN_ID
        self.td = self.run_root / TASK_ID
        self.td.mkdir(parents=True)
        self.state_file = tmp / "sforge_state.json"
        self.proc = None
        self.image = None
        self.rounds: dict[str, dict] = {}
        self.ticks: list[dict] = []

    # -------------------------------------------------------------- judge
    def start_judge(self) -> None:
        bench_yaml = HERE / "tasks" / "BENCHMARK.yaml"
        (self.tasks / "BENCHMARK.yaml").write_text(
            bench_yaml.read_text() if bench_yaml.exists() else f"name: {BENCH}\nbase_images:\n  python311: {{}}\n"
        )
        (self.tasks / f"{TASK_ID}.json").write_text(jdump(TASK) + "\n")
        extras = dict(JUDGE_EXTRAS)
        extras["opt/judge/grade.sh"] = (GRADER.encode(), 0o755)
        self.image = build_busybox_image(self.engine, f"{BENCH}.judge.{TASK_ID}:{JUDGE_TAG}", extra_files=extras)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "SFORGE_ADMIN_SECRET"}
        env.update(SFORGE_LOG_DIR=str(self.logs), SFORGE_TASKS_DIR=str(self.tasks), PYTHONUNBUFFERED="1")
        self.serve_log = open(self.tmp / "serve.log", "wb")
        self.proc = subprocess.Popen(
            [sforge_cli(), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.tmp,
            env=env,
            stdout=self.serve_log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 60
        while True:
            try:
                if self.requests.get(self.url + "/openapi.json", timeout=1).status_code == 200:
                    break
            except self.requests.RequestException:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit("sforge serve did not start: " + (self.tmp / "serve.log").read_text()[-2000:])
            time.sleep(0.3)
        self.secret = (self.logs / ".judge-admin-secret").read_text().strip()

    def stop_judge(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.serve_log.close()
        remove_containers(self.engine, f"{BENCH}.judge.{TASK_ID}.")
        if self.image:
            remove_image(self.engine, self.image)

    def history(self) -> dict:
        r = self.requests.get(
            self.url + "/api/v1/history", params={"token": self.token, "admin_secret": self.secret}, timeout=10
        )
        r.raise_for_status()
        return r.json()

    # -------------------------------------------------------------- the agent's tools
    def run_bash(self, command: str) -> tuple[str, int]:
        """Run a Bash tool command in the workspace (sforge-submit on PATH, the container's env)."""
        env = {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.tmp),
            "LANG": "C.UTF-8",
            "SFORGE_JUDGE_URL": self.url,
            "SFORGE_TOKEN": self.token,
            "SFORGE_PATCH_DIR": str(self.work),
            "SFORGE_SUBMIT_PATHS": " ".join(TASK["submit_paths"]),
            "SFORGE_SUBMIT_EXCLUDE_FLAGS": " ".join(f"--exclude={e.rstrip('/')}" for e in TASK["submit_exclude"]),
        }
        p = subprocess.run(
            ["bash", "-c", command],
            cwd=self.work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=900,
        )
        return p.stdout.decode("utf-8", "replace").rstrip("\n"), p.returncode

    def bash(self, tr: Transcript, command: str, description: str, timeout_ms: int | None = None) -> dict:
        tid = toolu()
        inp = {"command": command, "description": description}
        if timeout_ms:
            inp["timeout"] = timeout_ms
        ((off, t_call),) = tr.assistant([{"type": "tool_use", "id": tid, "name": "Bash", "input": inp}], 40)
        out, rc = self.run_bash(command)
        content = out if rc == 0 else f"Exit code {rc}\n{out}"
        off_r, t_res = tr.tool_result(
            tid, content, rc != 0, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        )
        return {
            "tool_use_id": tid,
            "output": out,
            "rc": rc,
            "call_epoch": t_call,
            "call_offset": off,
            "result_epoch": t_res,
            "result_offset": off_r,
        }

    def write_file(self, tr: Transcript, name: str, content: str, text: str | None = None) -> None:
        tid = toolu()
        blocks = ([{"type": "text", "text": text}] if text else []) + [
            {
                "type": "tool_use",
                "id": tid,
                "name": "Write",
                "input": {"file_path": f"{CWD}/{name}", "content": content},
            }
        ]
        tr.assistant(blocks, 90)
        existed = (self.work / name).exists()
        write_atomic(self.work / name, content)
        time.sleep(0.2)
        tr.tool_result(
            tid,
            (
                f"The file {CWD}/{name} has been updated successfully."
                if existed
                else f"File created successfully at: {CWD}/{name}"
            ),
        )

    def submit(self, tr: Transcript) -> dict:
        call = self.bash(tr, "sforge-submit", "Submit for evaluation", 600000)
        m = re.search(r"Round: (agent-\d+)", call["output"])
        if not m:
            raise SystemExit("sforge-submit printed no round:\n" + call["output"])
        rnd = m.group(1)
        rep = json.loads((self.td / "submissions" / rnd / "report.json").read_text())
        self.rounds[rnd] = {
            "round": rnd,
            "kind": "agent",
            "submission_id": rep["submission_id"],
            "submit_call_epoch": round(call["call_epoch"], 6),
            "submit_call_offset": call["call_offset"],
            "result_seen_epoch": round(call["result_epoch"], 6),
            "result_offset": call["result_offset"],
            "tool_use_id": call["tool_use_id"],
        }
        time.sleep(0.5)
        return {
            "round": rnd,
            "score": rep["score"],
            "passed": rep["passed"],
            "total": rep["total_tests"],
            "summary": rep["summary"],
        }

    # -------------------------------------------------------------- auto-eval thread (run_agent's, on the host)
    def auto_eval(self, stop: threading.Event) -> None:
        ticks_log = self.td / "auto_eval_ticks.log"
        n = 0
        while n < MAX_TICKS:
            stop.wait(EVAL_INTERVAL)
            if stop.is_set():
                break
            try:
                archive = targz_of(self.work)
                r = self.requests.post(
                    self.url + "/api/v1/submit",
                    data={"token": self.token, "kind": "auto", "admin_secret": self.secret},
                    files={"archive": ("archive.tar.gz", archive, "application/gzip")},
                    timeout=120,
                )
                r.raise_for_status()
                data = r.json()
                t = time.time()
                ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))
                with open(ticks_log, "a") as f:
                    f.write(
                        f"[{ts}] submitted {len(archive)} bytes -> {data.get('submission_id', '?')} "
                        f"round={data.get('round_id', '?')}\n"
                    )
                self.ticks.append(
                    {
                        "round": data.get("round_id"),
                        "submission_id": data.get("submission_id"),
                        "tick_log_epoch": round(t, 6),
                        "bytes": len(archive),
                    }
                )
            except Exception as e:  # noqa: BLE001 - as run_agent: logged, never raised
                ts = time.strftime("%Y-%m-%dT%H:%M:%S")
                with open(ticks_log, "a") as f:
                    f.write(f"[{ts}] error: {e}\n")
            n += 1

    # -------------------------------------------------------------- the run
    def run(self) -> dict:
        from sforge.harness.evolve_scripts import generate_evolve_prompt, generate_submit_script
        from sforge.harness.run_agent import RunResult

        cfg = {
            "task_id": TASK_ID,
            "agent": "claude-code",
            "model": MODEL,
            "effort": None,
            "timeout": AGENT_TIMEOUT,
            "eval_interval": EVAL_INTERVAL,
            "disable_stop_hook": True,
            "disable_auto_eval": False,
            "disable_auto_resume": False,
            "internet": True,
            "judge_url": self.url,
            "work_cpu_limit": None,
            "work_mem_limit": None,
            "judge_cpu_limit": None,
            "judge_mem_limit": None,
            "max_submissions": None,
            "submission_cooldown": None,
        }
        (self.td / "run_config.json").write_text(jdump(cfg))
        (self.run_root / "run_config.json").write_text(
            jdump({"run_id": RUN_ID, "experiment": None, "stagger": None, "tasks": {TASK_ID: cfg}})
        )
        log = RunLog(self.td / "run_agent.log")
        log("Images ready")
        r = self.requests.post(
            self.url + "/api/v1/register",
            json={"task_id": TASK_ID, "run_id": RUN_ID, "admin_secret": self.secret},
            timeout=10,
        )
        r.raise_for_status()
        self.token = r.json()["token"]
        log("Registered session with judge server")
        script = generate_submit_script()
        (self.td / "_sforge-submit.sh").write_text(script)
        # the copy that runs on the host: its two fixed /tmp paths moved into our temp dir
        host_script = script.replace('STATE_FILE="/tmp/sforge_state.json"', f'STATE_FILE="{self.state_file}"').replace(
            "/tmp/_submit_resp.json", str(self.tmp / "_submit_resp.json")
        )
        (self.bin / "sforge-submit").write_text(host_script)
        (self.bin / "sforge-submit").chmod(0o755)
        log("Installed sforge-submit script")
        log("Stop hook disabled by flag")
        stop = threading.Event()
        ticker = threading.Thread(target=self.auto_eval, args=(stop,), daemon=True)
        ticker.start()
        log(f"Host-side auto-eval started (interval={EVAL_INTERVAL}s)")
        prompt = generate_evolve_prompt(
            AGENT_QUERY,
            submit_paths=TASK["submit_paths"],
            internet=True,
            max_submissions=None,
            submission_cooldown=None,
        )
        (self.td / "agent_prompt.md").write_text(prompt)
        log(f"Prompt written ({len(prompt)} bytes)")
        started = time.time()
        local_iso = datetime.fromtimestamp(started).strftime("%Y-%m-%dT%H:%M:%S")
        (self.td / "started_at").write_text(f"{local_iso}\n{started}\n")
        cmd = (
            'claude -p "$(cat /tmp/agent_prompt.md)" --output-format stream-json --verbose '
            f"--dangerously-skip-permissions --model {MODEL}"
        )
        log(f"Running agent: {cmd[:200]}... (timeout={AGENT_TIMEOUT}s)")

        tr = Transcript(self.td / "agent_output.txt", str(uuid.uuid4()))
        self.transcript = tr
        tr.init()
        time.sleep(1.0)
        self.write_file(tr, "solve.sh", SOLVE_V1, "Simplest thing first: add the two arguments.")
        self.bash(tr, "sh solve.sh 2 3", "Try it")
        a = self.submit(tr)
        tr.assistant(
            [
                {
                    "type": "text",
                    "text": f"{a['round']}: score {a['score']:g}, {a['passed']}/{a['total']} "
                    "cases. Only two-argument inputs work; loop over all arguments.",
                }
            ]
        )
        self.write_file(tr, "solve.sh", SOLVE_V2)
        self.bash(tr, "sh solve.sh 1 2 3 4 5 6 7 8 9 10; sh solve.sh 7", "Try several argument counts")
        a = self.submit(tr)
        tr.assistant(
            [
                {
                    "type": "text",
                    "text": f"{a['round']}: score {a['score']:g}, {a['passed']}/{a['total']}. "
                    "Shell arithmetic keeps biting; a Python one-liner avoids it.",
                }
            ]
        )
        self.write_file(tr, "solve.sh", SOLVE_V3)
        a = self.submit(tr)
        tr.assistant(
            [
                {
                    "type": "text",
                    "text": f"{a['round']}: score {a['score']:g}, every case a runtime error: the "
                    "judge image has no python3. Back to sh, printing 0 without "
                    "arguments.",
                }
            ],
            120,
        )
        self.write_file(tr, "solve.sh", SOLVE_V4)
        self.bash(tr, "sh solve.sh; sh solve.sh 10 -4", "Empty and negative input")
        a = self.submit(tr)
        tr.assistant(
            [
                {
                    "type": "text",
                    "text": f"{a['round']}: score {a['score']:g}, {a['passed']}/{a['total']}. The "
                    "last case is a runtime error: `08` is read as octal in $((...)). "
                    "Strip leading zeros before adding.",
                }
            ],
            140,
        )
        self.write_file(tr, "solve.sh", SOLVE_V5)
        self.bash(tr, "sh solve.sh 08 09; sh solve.sh -007 3", "Leading zeros")
        a = self.submit(tr)
        self.bash(tr, "sforge-submit --list", "List submissions")
        final_text = f"All cases pass: {a['round']} scores {a['score']:g} ({a['passed']}/{a['total']})."
        tr.assistant([{"type": "text", "text": final_text}], 30)
        tr.result(started, final_text)
        tr.close()
        runtime = time.time() - started
        segment_end = time.time()
        log(f"Agent finished: runtime={runtime:.1f}s, timed_out=False, resumes=0")
        stop.set()
        ticker.join(timeout=130)
        log("Auto-eval thread stopped")
        final_archive = targz_of(self.work)
        (self.td / "final_archive.tar.gz").write_bytes(final_archive)
        log(f"Final archive: {len(final_archive)} bytes")
        state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {}
        (self.td / "evolve_state.json").write_text(jdump(state))
        deadline = time.time() + 900
        while time.time() < deadline:
            pending = [e for e in self.history().get("entries", []) if e.get("status") in ("running", "queued")]
            if not pending:
                break
            log(f"Draining {len(pending)} pending judge evals...")
            time.sleep(15)
        hist = self.history()
        (self.td / "run_history.json").write_text(jdump(hist))
        best_score = float(hist["best_score"]) if hist.get("best_score") is not None else None
        res = RunResult(
            archive=final_archive,
            best_pass_rate=hist.get("best_pass_rate", 0.0),
            best_score=best_score,
            best_round=hist.get("best_round", ""),
            total_rounds=hist.get("agent_submissions", 0) + hist.get("auto_submissions", 0),
            agent_submissions=hist.get("agent_submissions", 0),
            auto_submissions=hist.get("auto_submissions", 0),
            timed_out=False,
            runtime_seconds=runtime,
            resume_count=0,
        )
        log(
            f"Done: best={res.best_pass_rate:.2%} (round {res.best_round!r}), agent_subs={res.agent_submissions}, "
            f"auto_subs={res.auto_submissions}, resumes=0, runtime={runtime:.1f}s"
        )
        log.close()
        final = {
            "agent": "claude-code",
            "task": TASK_ID,
            "run_id": RUN_ID,
            "model": MODEL,
            "effort": None,
            **res.to_dict(),
        }
        (self.td / "final_result.json").write_text(jdump(final))
        return {
            "started": started,
            "segment_end": segment_end,
            "runtime": runtime,
            "history": hist,
            "final": final,
            "state": state,
        }


# ---------------------------------------------------------------------------- outputs


def truth_of(rec: Recording, out: dict, dest: Path) -> dict:
    """Ground truth in the shape of generate.py's truth files (the fields that apply here)."""
    from sforge.harness.selection import select_best

    hist = out["history"]
    entries = hist["entries"]
    ticks = {t["round"]: t for t in rec.ticks}
    state_at = {e["round"]: e["at"] for e in out["state"].get("submissions", [])}
    rounds = []
    done: list[dict] = []
    best_before = None
    new_bests = 0
    for e in entries:
        sub = dest / "submissions" / e["round"]
        rep = json.loads((sub / "report.json").read_text())
        done.append(e)
        b = select_best(done, TASK["judge"]["score_direction"], TASK["judge"]["selection"])
        new_best = b["best_round"] == e["round"] and b["best_round"] != best_before
        new_bests += new_best
        best_before = b["best_round"]
        r = {
            "round": e["round"],
            "kind": e["round"].split("-")[0],
            "submission_id": e["submission_id"],
            "grading_start_epoch": rep["submitted_at"],
            "grading_end_epoch": round((sub / "report.json").stat().st_mtime, 6),
            "elapsed_hours": round((rep["submitted_at"] - out["started"]) / 3600, 6),
            "score": rep["score"],
            "score_0_100": rep["score_0_100"],
            "pass_rate": rep["pass_rate"],
            "passed": rep["passed"],
            "total_tests": rep["total_tests"],
            "summary": rep["summary"],
            "new_best": bool(new_best),
            "best_so_far": b["best_score"],
            "best_round_so_far": b["best_round"],
        }
        if e["round"] in rec.rounds:
            a = rec.rounds[e["round"]]
            r.update(
                submit_call_epoch=a["submit_call_epoch"],
                submit_call_offset=a["submit_call_offset"],
                result_seen_epoch=a["result_seen_epoch"],
                result_offset=a["result_offset"],
                tool_use_id=a["tool_use_id"],
                evolve_at=state_at.get(e["round"]),
            )
        if e["round"] in ticks:
            r["tick_log_epoch"] = ticks[e["round"]]["tick_log_epoch"]
            r["archive_bytes"] = ticks[e["round"]]["bytes"]
        rounds.append(r)
    best = select_best(entries, TASK["judge"]["score_direction"], TASK["judge"]["selection"])
    offset_s = int(datetime.fromtimestamp(out["started"]).astimezone().utcoffset().total_seconds())
    sign = "+" if offset_s >= 0 else "-"
    tr = rec.transcript
    import sforge

    return {
        "run_id": RUN_ID,
        "task_id": TASK_ID,
        "path": f"runs/{RUN_ID}/{TASK_ID}",
        "layout": "flat (<run_id>/<task>)",
        "ip": "",
        "backend": "docker",
        "agent": "claude-code",
        "model": MODEL,
        "recorded_with": {
            "sforge_version": getattr(sforge, "__version__", None),
            "judge": "sforge serve (real), 127.0.0.1",
            "judge_image": f"{BENCH}.judge.{TASK_ID}:{JUDGE_TAG} (static busybox + /opt/judge/grade.sh, built locally)",
            "agent": "scripted (sample_runs/make_judge_run.py); no language model",
            "sforge_submit": "the real script from sforge.harness.evolve_scripts, run on the host",
        },
        "task": {
            "parser": TASK["judge"]["parser"],
            "selection": TASK["judge"]["selection"],
            "score_direction": TASK["judge"]["score_direction"],
            "rescale": TASK["judge"]["rescale"],
        },
        "exercises": [
            "submissions/ written by the real SForge judge (sforge serve 1.1.0) grading real tar.gz archives "
            "in real judge containers",
            "run_history.json = the judge's real admin /history; evolve_state.json = the real sforge-submit state file",
            "sforge-submit tool results = the real script's output (Round: agent-N)",
            "score_sum parser, score_first, maximize, linear rescale; a regression round (agent-3, all RE)",
            "agent and auto rounds graded concurrently by the judge",
        ],
        "host_utc_offset": f"{sign}{abs(offset_s) // 3600:02d}:{abs(offset_s) % 3600 // 60:02d}",
        "host_utc_offset_seconds": offset_s,
        "started_at_epoch": out["started"],
        "segments": [
            {
                "start_epoch": round(out["started"], 6),
                "end_epoch": round(out["segment_end"], 6),
                "ended_by": "exit",
                "session_id": tr.session,
            }
        ],
        "agent_output": {"bytes": tr.offset, "lines": len(tr.line_epochs), "line_epochs": tr.line_epochs},
        "rounds": rounds,
        "expected": {
            "best_round": best["best_round"],
            "best_score": best["best_score"],
            "best_pass_rate": best["best_pass_rate"],
            "agent_rounds": hist["agent_submissions"],
            "auto_rounds": hist["auto_submissions"],
            "total_rounds": hist["agent_submissions"] + hist["auto_submissions"],
            "new_bests": new_bests,
            "runtime_seconds": out["runtime"],
            "resume_count": 0,
            "infra_error_lines": 0,
            "rounds_without_report": [],
        },
        "transcript": {
            "format": "claude_stream",
            "version": CLAUDE_CODE_VERSION,
            "timestamps": "none",
            "analysis": {
                "lines": len(tr.line_epochs),
                "init_events": 1,
                "result_events": 1,
                "tool_uses": tr.tool_uses,
                "stop_hook_feedback": 0,
                "sforge_submit_calls": len(rec.rounds),
                "sforge_submit_list_calls": 1,
            },
        },
    }


def main() -> int:
    for exe in ("bash", "curl", "jq", "tar"):
        if shutil.which(exe) is None:
            raise SystemExit(f"{exe} is needed on the host (sforge-submit runs there)")
    tmp = Path(tempfile.mkdtemp(prefix="edgetui-judge-run-"))
    rec = Recording(tmp)
    try:
        print(f"judge image {BENCH}.judge.{TASK_ID}:{JUDGE_TAG}; starting sforge serve ...", flush=True)
        rec.start_judge()
        print(f"sforge serve at {rec.url}; recording {RUN_ID}/{TASK_ID} (about 2 min) ...", flush=True)
        out = rec.run()
    finally:
        rec.stop_judge()
    # the secret and the token must not be in any file we keep
    for f in rec.run_root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in (rec.secret, rec.token):
                if s.encode() in data:
                    raise SystemExit(f"{f}: contains a secret; not copied")
    dest_run = HERE / "runs" / RUN_ID
    if dest_run.exists():
        shutil.rmtree(dest_run)
    shutil.copytree(rec.run_root, dest_run)
    (HERE / "tasks").mkdir(exist_ok=True)
    (HERE / "tasks" / f"{TASK_ID}.json").write_text(jdump(TASK) + "\n")
    truth = truth_of(rec, out, dest_run / TASK_ID)
    (HERE / "_truth").mkdir(exist_ok=True)
    (HERE / "_truth" / f"{RUN_ID}__{TASK_ID}.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    size = sum(f.stat().st_size for f in dest_run.rglob("*") if f.is_file())
    e = truth["expected"]
    print(
        f"wrote {dest_run.relative_to(HERE)} ({size} bytes): {e['agent_rounds']} agent + {e['auto_rounds']} auto "
        f"rounds, best {e['best_round']} score {e['best_score']}"
    )
    for r in truth["rounds"]:
        print(
            f"  {r['round']:8} score {r['score']!s:>6}  pass {r['passed']}/{r['total_tests']}  "
            f"{'new best' if r['new_best'] else ''}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
