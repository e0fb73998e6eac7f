"""Ground-truth files of the bundled samples (``_truth/<run_id>__<task_id>.json``) and the analysis
of a Claude transcript they carry.
"""

from __future__ import annotations

import json

from .claude_transcript import PRICING
from .run_folder import RunBase
from .writers import SEED


# ---------------------------------------------------------------------------
# Transcript analysis (for truth files)
# ---------------------------------------------------------------------------


def analyse_claude(data: bytes) -> dict:
    st = {
        "lines": 0,
        "json_lines": 0,
        "noise_lines": [],
        "events": {},
        "init_events": 0,
        "result_events": [],
        "tool_uses": {},
        "tool_results": 0,
        "tool_results_string_content": 0,
        "tool_results_list_content": 0,
        "tool_results_is_error": 0,
        "thinking_blocks": 0,
        "text_blocks": 0,
        "stop_hook_feedback": 0,
        "compact_boundary": 0,
        "subagent_events": 0,
        "assistant_lines": 0,
        "unique_message_ids": 0,
        "message_ids_split_over_several_lines": 0,
        "sforge_submit_calls": 0,
        "sforge_submit_list_calls": 0,
        "user_string_content_events": 0,
    }
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    cost = 0.0
    seen: dict[str, int] = {}
    off = 0
    for raw in data.split(b"\n")[:-1]:
        st["lines"] += 1
        line_off = off
        off += len(raw) + 1
        try:
            ev = json.loads(raw)
        except json.JSONDecodeError:
            st["noise_lines"].append({"byte_offset": line_off, "text": raw.decode()})
            continue
        st["json_lines"] += 1
        key = ev.get("type") + ("/" + ev["subtype"] if ev.get("subtype") else "")
        st["events"][key] = st["events"].get(key, 0) + 1
        if key == "system/init":
            st["init_events"] += 1
        if key == "system/compact_boundary":
            st["compact_boundary"] += 1
        if ev.get("type") == "result":
            st["result_events"].append(
                {
                    "byte_offset": line_off,
                    "is_error": ev["is_error"],
                    "total_cost_usd": ev["total_cost_usd"],
                    "duration_ms": ev["duration_ms"],
                }
            )
        if ev.get("parent_tool_use_id"):
            st["subagent_events"] += 1
        if ev.get("type") == "assistant":
            st["assistant_lines"] += 1
            m = ev["message"]
            if m["id"] in seen:
                seen[m["id"]] += 1
            else:
                seen[m["id"]] = 1
                u = m.get("usage") or {}
                for k in usage:
                    usage[k] += u.get(k, 0) or 0
                if m.get("model") in PRICING:
                    pi, po, pw, pr = PRICING[m["model"]]
                    cost += (
                        u["input_tokens"] * pi
                        + u["output_tokens"] * po
                        + u["cache_creation_input_tokens"] * pw
                        + u["cache_read_input_tokens"] * pr
                    ) / 1e6
            for b in m["content"]:
                if b["type"] == "thinking":
                    st["thinking_blocks"] += 1
                elif b["type"] == "text":
                    st["text_blocks"] += 1
                elif b["type"] == "tool_use":
                    st["tool_uses"][b["name"]] = st["tool_uses"].get(b["name"], 0) + 1
                    cmd = str(b["input"].get("command", ""))
                    if "sforge-submit" in cmd:
                        if "--list" in cmd or " -l" in cmd:
                            st["sforge_submit_list_calls"] += 1
                        else:
                            st["sforge_submit_calls"] += 1
        if ev.get("type") == "user":
            c = ev["message"]["content"]
            if isinstance(c, str):
                st["user_string_content_events"] += 1
                continue
            for b in c:
                if b.get("type") == "tool_result":
                    st["tool_results"] += 1
                    if isinstance(b["content"], list):
                        st["tool_results_list_content"] += 1
                    else:
                        st["tool_results_string_content"] += 1
                    if b.get("is_error"):
                        st["tool_results_is_error"] += 1
                elif b.get("type") == "text" and b["text"].startswith("Stop hook feedback"):
                    st["stop_hook_feedback"] += 1
    st["unique_message_ids"] = len(seen)
    st["message_ids_split_over_several_lines"] = sum(1 for v in seen.values() if v > 1)
    st["usage_totals_deduped_by_message_id"] = usage
    st["cost_usd_from_usage"] = round(cost, 6)
    return st


def write_truth(run: RunBase, common: dict, specific: dict, index: list) -> dict:
    data = (run.tdir / "agent_output.txt").read_bytes()
    truth = {
        "generated_by": "sample_runs/generate.py",
        "synthetic": True,
        "seed": SEED,
        "run_id": run.run_id,
        "task_id": run.task_id,
        "path": run.rel(),
        "layout": "grouped (<ip>/<run_id>/<task>)" if run.ip else "flat (<run_id>/<task>)",
        "ip": run.ip or "",
        "host_utc_offset": run.clock.offset_str,
        "host_utc_offset_seconds": run.clock.offset_min * 60,
        "backend": run.backend,
        "task": {k: run.task["judge"].get(k) for k in ("parser", "selection", "score_direction", "rescale")},
    }
    truth.update(common)
    truth["agent_output"] = {
        "bytes": len(data),
        "lines": len(index),
        "line_epochs_doc": "[byte_offset_of_line_start, true_epoch_when_written]",
        "line_epochs": index,
    }
    truth.update(specific)
    name = f"{run.run_id}__{run.task_id}.json"
    (run.root / "_truth").mkdir(exist_ok=True)
    (run.root / "_truth" / name).write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
    return truth
