"""A run whose content carries terminal control sequences and markup, for the terminal-safety tests.

Copied from the sample run ``judge-demo-001/judge_demo_sum`` with every sequence of
:data:`SEQUENCES` planted in the run folder's name, the task folder's name, the transcript's text,
a tool's output, a tool's name, the model and a log line.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_runs" / "runs" / "judge-demo-001"

#: one of each: what must never reach a terminal from run content
SEQUENCES = {
    "osc52": "\x1b]52;c;SGVsbG8=\x07",  # clipboard write
    "osc0": "\x1b]0;PWNED-TITLE\x1b\\",  # window title
    "osc8": "\x1b]8;;http://127.0.0.1/x\x1b\\link\x1b]8;;\x1b\\",  # hyperlink
    "clear": "\x1b[2J",
    "cursor": "\x1b[5;5H\x1b[3A",
    "c1_csi": "\x9b2J",  # 8-bit CSI
    "c1_osc": "\x9d0;C1-TITLE\x9c",  # 8-bit OSC ... ST
    "c1_nel": "\x85",
    "bidi": "\u202e\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
    "c0": "\x07\x08\x0b\x0c\x0e\x7f",
}
PAYLOAD = "".join(SEQUENCES.values())
#: what the payload is shown as (its plain-text neighbours in the planted strings)
MARK = "ZQX"

#: run content that must show as typed, never be read as markup
RUN_FOLDER = "[@click=app.quit]run["  # with the task folder "]": the run key "[@click=app.quit]run[/]"
TASK_FOLDER = "]"
MARKUP_KEY = f"{RUN_FOLDER}/{TASK_FOLDER}"


def planted(name: str) -> str:
    return f"{MARK}{name}{PAYLOAD}{name}{MARK}"


def build(root: Path, run_folder: str, task_folder: str) -> Path:
    """The sample run at ``root/run_folder/task_folder`` with the payload planted; returns the run folder."""
    run = root / run_folder
    shutil.copytree(SAMPLE, run)
    task = run / task_folder
    (run / "judge_demo_sum").rename(task)
    cfg = json.loads((task / "run_config.json").read_text())
    cfg["model"] = planted("model")
    (task / "run_config.json").write_text(json.dumps(cfg))
    top = json.loads((run / "run_config.json").read_text())
    if "model" in top:
        top["model"] = planted("model")
    (run / "run_config.json").write_text(json.dumps(top))
    lines = (task / "agent_output.txt").read_text().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else None
        if msg is not None:
            if "model" in msg:
                msg["model"] = planted("model")
            for part in msg.get("content") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text":
                    part["text"] = planted("text") + "\n" + part["text"] + "\n[b]bold?[/b] [link=http://x]l[/link]"
                elif part.get("type") == "tool_use":
                    part["name"] = planted("tool")
                    if isinstance(part.get("input"), dict) and "command" in part["input"]:
                        part["input"]["command"] = planted("cmd")
                elif part.get("type") == "tool_result":
                    part["content"] = planted("output") + "\n" + str(part.get("content"))
        if obj.get("type") == "system" and "model" in obj:
            obj["model"] = planted("model")
        out.append(json.dumps(obj, ensure_ascii=False))  # (C1 and bidi characters raw; JSON escapes C0)
    out.insert(3, planted("rawline"))  # not JSON: kept as a parse-error event with its raw bytes
    (task / "agent_output.txt").write_text("\n".join(out) + "\n")
    log = (task / "run_agent.log").read_text().splitlines()
    log.insert(2, re.sub(r" - INFO - .*", lambda _m: " - ERROR - " + planted("log"), log[1]))
    (task / "run_agent.log").write_text("\n".join(log) + "\n")
    return run


def hostile_folder() -> str:
    """A run folder name carrying the payload (no ``/``, no NUL) and a newline."""
    return planted("run").replace("/", "_") + "\nsecond-line"
