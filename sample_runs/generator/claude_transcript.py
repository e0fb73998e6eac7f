"""Claude Code stream-json transcript writer (``agent_output.txt``) of the generated Claude runs.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import json
import random

from .sforge_texts import STOP_HOOK_FEEDBACK
from .writers import Ids, TextFile, jline, q6, tokens_of, utc_iso_ms


# ---------------------------------------------------------------------------
# Claude Code stream-json simulator
# ---------------------------------------------------------------------------

PRICING = {  # $/Mtok: input, output, cache write (5m), cache read  (synthetic price table)
    "claude-opus-4-8": (15.0, 75.0, 18.75, 1.50),
    "glm-5.1": (1.0, 3.2, 1.0, 0.20),
}
CLAUDE_TOOLS = ["Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit",
                "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell", "Skill", "SlashCommand"]


class Claude:
    """Emits Claude Code `--output-format stream-json --verbose` lines with true times.

    * one API message = several lines sharing message.id, each repeating the usage;
    * `timestamp` on user events (2.1.14x+ behaviour) and optionally on assistant events;
    * container clock skew applied to those timestamps only.
    """

    def __init__(self, ids: Ids, R: random.Random, out: TextFile, *, model: str, version: str, cwd: str,
                 tools: list[str], user_ts=True, asst_ts=False, skew=0.0, api_key_source="ANTHROPIC_API_KEY",
                 subagent_tool="Task"):
        self.ids, self.R, self.out = ids, R, out
        self.model, self.version, self.cwd, self.tools = model, version, cwd, tools
        self.user_ts, self.asst_ts, self.skew = user_ts, asst_ts, skew
        self.api_key_source = api_key_source
        self.subagent_tool = subagent_tool
        self.t = 0.0
        self.session = ""
        self.ctx: dict = {}
        self.pending: dict = {}
        self.seg: dict | None = None
        self.segments: list[dict] = []
        self.stats = {"init": 0, "assistant_lines": 0, "user_lines": 0, "result": 0, "thinking_blocks": 0,
                      "text_blocks": 0, "tool_uses": {}, "tool_results": 0, "tool_results_list_content": 0,
                      "tool_results_error": 0, "stop_hook_feedback": 0, "compact_boundary": 0,
                      "subagent_events": 0, "noise_lines": 0, "message_ids": 0}
        self.totals = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 0, "cost_usd": 0.0}
        self.events: list[dict] = []   # notable events for the truth file

    # -- plumbing ----------------------------------------------------------
    def emit(self, obj):
        self.out.add(jline(obj), self.t)

    def raw(self, text: str):
        self.out.add(text, self.t)
        self.stats["noise_lines"] += 1

    def ts(self) -> str:
        return utc_iso_ms(self.t + self.skew)

    def start_segment(self, t: float, session_id: str, prompt_tokens: int, resumed_ctx: int = 0):
        self.t = t
        self.session = session_id
        self.seg = {"start": t, "api_ms": 0.0, "turns": 0, "in": 0, "out": 0, "cw": 0, "cr": 0, "cost": 0.0}
        self.ctx = {None: 0}
        self.pending = {None: 15800 + prompt_tokens + resumed_ctx}

    def init(self, delay: float):
        self.t += delay
        self.stats["init"] += 1
        self.emit({"type": "system", "subtype": "init", "cwd": self.cwd, "session_id": self.session,
                   "tools": self.tools, "mcp_servers": [], "model": self.model,
                   "permissionMode": "bypassPermissions",
                   "slash_commands": ["compact", "context", "cost", "init", "output-style:new", "pr-comments",
                                      "release-notes", "todos", "review", "security-review"],
                   "apiKeySource": self.api_key_source, "claude_code_version": self.version,
                   "output_style": "default", "agents": ["general-purpose", "statusline-setup", "output-style-setup"],
                   "skills": [], "plugins": [], "uuid": self.ids.uuid()})
        self.events.append({"kind": "init", "epoch": q6(self.t), "session_id": self.session})

    # -- API messages ------------------------------------------------------
    def api(self, blocks: list, parent: str | None = None, latency=(2.0, 7.0), synthetic_error: str | None = None
            ) -> list[str]:
        """blocks: ("thinking", text) | ("text", text) | ("tool", name, input). Returns tool ids."""
        R = self.R
        self.ctx.setdefault(parent, 0)
        self.pending.setdefault(parent, 0 if parent is None else 11800)   # subagent system prompt + tools
        out_tok = 0
        for b in blocks:
            if b[0] in ("thinking", "text"):
                out_tok += tokens_of(b[1])
            else:
                out_tok += tokens_of(json.dumps(b[2])) + 12
        cw = self.pending[parent]
        cr = self.ctx[parent]
        inp = R.randint(1, 9)
        usage = {"input_tokens": inp, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr,
                 "cache_creation": {"ephemeral_5m_input_tokens": cw, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": out_tok, "service_tier": "standard"}
        mid = self.ids.msg()
        t0 = self.t
        self.t += R.uniform(*latency)
        tool_ids = []
        for b in blocks:
            if b[0] == "thinking":
                self.t += len(b[1]) / R.uniform(160.0, 300.0)
                block = {"type": "thinking", "thinking": b[1], "signature": self.ids.signature()}
                self.stats["thinking_blocks"] += 1
            elif b[0] == "text":
                self.t += len(b[1]) / R.uniform(140.0, 260.0)
                block = {"type": "text", "text": b[1]}
                self.stats["text_blocks"] += 1
            else:
                tid = self.ids.toolu()
                self.t += len(json.dumps(b[2])) / R.uniform(220.0, 420.0) + 0.2
                block = {"type": "tool_use", "id": tid, "name": b[1], "input": b[2]}
                tool_ids.append(tid)
                self.stats["tool_uses"][b[1]] = self.stats["tool_uses"].get(b[1], 0) + 1
            msg = {"model": self.model, "id": mid, "type": "message", "role": "assistant", "content": [block],
                   "stop_reason": None, "stop_sequence": None, "usage": usage, "context_management": None}
            ev = {"type": "assistant", "message": msg, "parent_tool_use_id": parent, "session_id": self.session,
                  "uuid": self.ids.uuid()}
            if self.asst_ts:
                ev["timestamp"] = self.ts()
            self.emit(ev)
            self.stats["assistant_lines"] += 1
            if parent:
                self.stats["subagent_events"] += 1
        self.stats["message_ids"] += 1
        self.ctx[parent] = cr + cw + out_tok
        self.pending[parent] = R.randint(150, 700)   # reminders, tool schemas echoed, etc. (synthetic)
        pi, po, pw, pr = PRICING[self.model]
        cost = (inp * pi + out_tok * po + cw * pw + cr * pr) / 1e6
        s = self.seg
        s["api_ms"] += (self.t - t0) * 1000
        s["turns"] += 1 if parent is None else 0
        s["in"] += inp
        s["out"] += out_tok
        s["cw"] += cw
        s["cr"] += cr
        s["cost"] += cost
        for k, v in (("input_tokens", inp), ("output_tokens", out_tok), ("cache_creation_input_tokens", cw),
                     ("cache_read_input_tokens", cr)):
            self.totals[k] += v
        self.totals["cost_usd"] += cost
        return tool_ids

    def tool_result(self, tid: str, content, *, is_error=False, parent=None, dt=0.0, tur=None):
        self.t += dt
        ev = {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": is_error}]},
              "parent_tool_use_id": parent, "session_id": self.session, "uuid": self.ids.uuid()}
        if self.user_ts:
            ev["timestamp"] = self.ts()
        if tur is not None:
            ev["tool_use_result"] = tur
        self.emit(ev)
        self.stats["user_lines"] += 1
        self.stats["tool_results"] += 1
        if isinstance(content, list):
            self.stats["tool_results_list_content"] += 1
        if is_error:
            self.stats["tool_results_error"] += 1
        if parent:
            self.stats["subagent_events"] += 1
        text = content if isinstance(content, str) else "".join(c["text"] for c in content)
        self.pending[parent] = self.pending.get(parent, 0) + tokens_of(text) + 8

    def user_text(self, text: str, *, parent=None, dt=0.0, synthetic=False, as_string=False):
        self.t += dt
        content = text if as_string else [{"type": "text", "text": text}]
        ev = {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": parent,
              "session_id": self.session, "uuid": self.ids.uuid()}
        if self.user_ts:
            ev["timestamp"] = self.ts()
        if synthetic:
            ev["isSynthetic"] = True
        self.emit(ev)
        self.stats["user_lines"] += 1
        if parent:
            self.stats["subagent_events"] += 1
        self.pending[parent] = self.pending.get(parent, 0) + tokens_of(text) + 4

    def stop_hook(self, dt=1.2):
        self.user_text(STOP_HOOK_FEEDBACK, dt=dt, synthetic=True)
        self.stats["stop_hook_feedback"] += 1
        self.events.append({"kind": "stop_hook_feedback", "epoch": q6(self.t)})

    def compact(self, summary: str):
        self.t += self.R.uniform(40.0, 95.0)      # summarisation call
        pre = self.ctx[None] + self.pending[None]
        self.emit({"type": "system", "subtype": "compact_boundary", "session_id": self.session,
                   "uuid": self.ids.uuid(), "compact_metadata": {"trigger": "auto", "pre_tokens": pre}})
        self.stats["compact_boundary"] += 1
        self.events.append({"kind": "compact_boundary", "epoch": q6(self.t), "pre_tokens": pre})
        self.t += 0.05
        self.user_text("This session is being continued from a previous conversation that ran out of context. "
                       "The conversation is summarized below:\n" + summary, as_string=True)
        self.ctx[None] = 0
        self.pending[None] = 15800 + tokens_of(summary) + 900

    def result(self, text: str, *, is_error=False, subtype="success", api_error_status=None):
        s = self.seg
        self.t += 0.02
        dur = int((self.t - s["start"]) * 1000)
        pi, po, pw, pr = PRICING[self.model]
        ev = {"type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": dur,
              "duration_api_ms": int(s["api_ms"]), "num_turns": s["turns"], "result": text,
              "session_id": self.session, "total_cost_usd": s["cost"],
              "usage": {"input_tokens": s["in"], "cache_creation_input_tokens": s["cw"],
                        "cache_read_input_tokens": s["cr"], "output_tokens": s["out"],
                        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                        "service_tier": "standard",
                        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": s["cw"]}},
              "modelUsage": {self.model: {"inputTokens": s["in"], "outputTokens": s["out"],
                                          "cacheReadInputTokens": s["cr"], "cacheCreationInputTokens": s["cw"],
                                          "webSearchRequests": 0, "costUSD": s["cost"], "contextWindow": 200000,
                                          "maxOutputTokens": 32000}},
              "permission_denials": [], "uuid": self.ids.uuid()}
        if api_error_status is not None:
            ev["api_error_status"] = api_error_status
            ev["terminal_reason"] = "api_error"
        self.emit(ev)
        self.stats["result"] += 1
        self.events.append({"kind": "result", "epoch": q6(self.t), "is_error": is_error,
                            "total_cost_usd": s["cost"], "duration_ms": dur})

    def synthetic_api_error(self, text: str, error: str):
        # the CLI retries the overloaded API a few times (system/api_retry events) before giving up
        for attempt in range(1, 4):
            self.t += self.R.uniform(5.0, 20.0)
            self.emit({"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
                       "retry_delay_ms": round(500.0 * 2 ** attempt + self.R.uniform(0, 100), 3),
                       "error_status": 529, "error": "overloaded", "session_id": self.session,
                       "uuid": self.ids.uuid()})
        self.t += self.R.uniform(10.0, 30.0)      # the last retry inside the CLI
        zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": None,
                "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}}
        ev = {"type": "assistant", "message": {"id": self.ids.uuid(), "container": None, "model": "<synthetic>",
                                               "role": "assistant", "stop_reason": "stop_sequence",
                                               "stop_sequence": "", "type": "message", "usage": zero,
                                               "content": [{"type": "text", "text": text}],
                                               "context_management": None},
              "parent_tool_use_id": None, "session_id": self.session, "uuid": self.ids.uuid(), "error": error,
              "isApiErrorMessage": True}
        self.emit(ev)
        self.stats["assistant_lines"] += 1
        self.events.append({"kind": "api_error", "epoch": q6(self.t)})

    def end_segment(self, t_end: float, how: str):
        s = dict(self.seg)
        s["end"] = t_end
        s["ended_by"] = how
        s["session_id"] = self.session
        self.segments.append(s)


def bash_tur(stdout: str, stderr: str = "") -> dict:
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False,
            "noOutputExpected": False}


def read_result(lines: list[str], start: int) -> str:
    return "\n".join(f"{start + i}\t{ln}" for i, ln in enumerate(lines))
