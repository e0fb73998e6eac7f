"""A Claude Code session file shaped like anthropics/claude-code#69013: the conversation drowned in
``permission-mode`` / ``mode`` records (78 of 92 records), built here (no such real file is in the
shared transcript corpus). Record shapes follow Claude Code 2.1 session files: the envelope
(``sessionId``, ``uuid``, ``parentUuid``, ``timestamp``, ``cwd``, ``version``) on conversation
records, the bare ``{"type": "permission-mode", "permissionMode": …, "sessionId": …}`` and
``{"type": "mode", "mode": …, "sessionId": …}`` bookkeeping records between turns.
"""

from __future__ import annotations

import json
from pathlib import Path

SESSION = "6f0e2d1c-69013-4a5b-9c8d-000000000001"
T0 = "2026-05-20T10:00:{:02d}.000Z"

#: metadata records written before each conversation record (sums to 78 over 14 records)
META_BEFORE = (0, 12, 0, 11, 0, 14, 0, 12, 0, 10, 0, 11, 0, 8)


def conversation(i: int) -> dict:
    """Conversation record ``i`` (0..13): user prompts, assistant text and tool calls, tool results."""
    env = {
        "sessionId": SESSION,
        "uuid": f"u-{i:03d}",
        "parentUuid": f"u-{i - 1:03d}" if i else None,
        "timestamp": T0.format(i * 4),
        "cwd": "/workspace/app",
        "version": "2.1.140",
        "isSidechain": False,
    }
    if i % 4 == 0:
        return {**env, "type": "user", "message": {"role": "user", "content": f"step {i}: make the test pass"}}
    if i % 4 == 1:
        return {
            **env,
            "type": "assistant",
            "message": {
                "id": f"msg_{i}",
                "role": "assistant",
                "model": "claude-opus-4-5",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": "pytest -q"}}
                ],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        }
    if i % 4 == 2:
        return {
            **env,
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i - 1}", "content": "1 failed"}],
            },
        }
    return {
        **env,
        "type": "assistant",
        "message": {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": "claude-opus-4-5",
            "content": [{"type": "text", "text": f"the test fails at step {i}; fixing it"}],
            "usage": {"input_tokens": 12, "output_tokens": 7},
        },
    }


def metadata(k: int) -> dict:
    if k % 3 == 2:
        return {"type": "mode", "mode": "normal", "sessionId": SESSION}
    return {"type": "permission-mode", "permissionMode": "acceptEdits" if k % 2 else "default", "sessionId": SESSION}


def write_fixture(path: Path) -> dict:
    """Write the file; returns its shape: ``records``, ``metadata`` (records), ``folds`` (runs of
    them), ``conversation`` (records)."""
    lines = []
    folds = 0
    k = 0
    for i, n_meta in enumerate(META_BEFORE):
        folds += 1 if n_meta else 0
        for _ in range(n_meta):
            lines.append(metadata(k))
            k += 1
        lines.append(conversation(i))
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return {"records": len(lines), "metadata": k, "folds": folds, "conversation": len(META_BEFORE)}
