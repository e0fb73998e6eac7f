"""Synthetic Claude Code stream-json lines for recorder tests (written here, not copied)."""

from __future__ import annotations

import json


def stream_lines(n_turns: int, tag: str = "a") -> list[bytes]:
    out = [
        json.dumps(
            {
                "type": "system",
                "subtype": "init",
                "session_id": f"s-{tag}",
                "model": "claude-opus-4-8",
                "cwd": "/work",
                "tools": ["Bash"],
                "uuid": f"u-{tag}-init",
            }
        )
    ]
    for i in range(n_turns):
        mid = f"msg_{tag}_{i}"
        tid = f"toolu_{tag}_{i}"
        usage = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 7,
        }
        out.append(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "id": mid,
                        "model": "claude-opus-4-8",
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"step {i}: let me look at the data"}],
                        "usage": usage,
                    },
                    "parent_tool_use_id": None,
                    "session_id": f"s-{tag}",
                    "uuid": f"u-{tag}-{i}-a",
                }
            )
        )
        out.append(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "id": mid,
                        "model": "claude-opus-4-8",
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"echo {i}"}}],
                        "usage": usage,
                    },
                    "parent_tool_use_id": None,
                    "session_id": f"s-{tag}",
                    "uuid": f"u-{tag}-{i}-b",
                }
            )
        )
        out.append(
            json.dumps(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tid,
                                "content": f"{i}\n" + "x" * 200,
                                "is_error": False,
                            }
                        ],
                    },
                    "parent_tool_use_id": None,
                    "session_id": f"s-{tag}",
                    "uuid": f"u-{tag}-{i}-c",
                }
            )
        )
    out.append(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": 1000 * n_turns,
                "num_turns": n_turns,
                "result": "done",
                "total_cost_usd": 1.5,
                "session_id": f"s-{tag}",
            }
        )
    )
    return [l.encode() for l in out]
