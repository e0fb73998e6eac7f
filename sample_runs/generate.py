#!/usr/bin/env python3
"""Generate the synthetic SForge sample runs committed under ``sample_runs/``.

Everything written by this script is GENERATED: seeded, synthetic, and not
real agent output.  The shapes follow SForge 1.1.0 (``sforge`` on PyPI) and
the Claude Code / Codex transcript formats described in
``/work/shared/docs/sforge-format.md``; the text content is invented.

Usage::

    python sample_runs/generate.py          # rewrites tasks/, runs/, _truth/, README.md

Properties:

* stdlib only, fixed seed, no wall-clock reads: the output is byte-for-byte
  identical on every run (file mtimes are not part of the contract — SForge
  readers must not rely on them, and git does not keep them);
* ground truth for tests lives in ``_truth/<run_id>__<task_id>.json`` (never
  inside a run directory), see ``README.md`` for its format;
* ``check_with_sforge.py`` loads the result with SForge's own scanner,
  parsers, grader, selection and rescale code.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import random
import shutil
import tarfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20260312
RULE = "=" * 40
UTC = timezone.utc
EPOCH0 = datetime(1970, 1, 1, tzinfo=UTC)

# Every top-level output this script owns (deleted and rewritten on each run).
OWNED = ("tasks", "runs", "_truth", "README.md")
# Inside OWNED, the outputs of make_judge_run.py (a run recorded with the real SForge judge, not
# generated): left in place when this script clears and rewrites its own outputs.
KEEP = ("runs/judge-demo-001", "tasks/judge_demo_sum.json", "_truth/judge-demo-001__judge_demo_sum.json")


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def jdump(obj) -> str:
    """JSON as SForge writes its files: indent=2, ensure_ascii=False, no newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def jline(obj) -> str:
    """Compact JSON as Claude Code prints stream-json lines."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def q6(t: float) -> float:
    """Quantise an epoch to microseconds (what we store in truth files)."""
    return round(t, 6)


def epoch_of(y, mo, d, h=0, mi=0, s=0, offset_min=0) -> float:
    tz = timezone(timedelta(minutes=offset_min))
    return datetime(y, mo, d, h, mi, s, tzinfo=tz).timestamp()


class Clock:
    """Formats epochs in a host's local time (fixed UTC offset, no DST)."""

    def __init__(self, offset_min: int):
        self.offset_min = offset_min
        self.tz = timezone(timedelta(minutes=offset_min))

    @property
    def offset_str(self) -> str:
        sign = "+" if self.offset_min >= 0 else "-"
        m = abs(self.offset_min)
        return f"{sign}{m // 60:02d}:{m % 60:02d}"

    def dt(self, t: float) -> datetime:
        return (EPOCH0 + timedelta(microseconds=round(t * 1e6))).astimezone(self.tz)

    def log_ts(self, t: float) -> str:
        d = self.dt(t)
        return d.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (d.microsecond // 1000)

    def iso_s(self, t: float) -> str:
        return self.dt(t).strftime("%Y-%m-%dT%H:%M:%S")


def utc_iso_ms(t: float) -> str:
    d = EPOCH0 + timedelta(microseconds=round(t * 1e6))
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Ids:
    """Deterministic identifier factory (one per run)."""

    def __init__(self, seed: int):
        self.R = random.Random(seed)

    def uuid(self) -> str:
        h = "%032x" % self.R.getrandbits(128)
        h = h[:12] + "4" + h[13:16] + "89ab"[int(h[16], 16) % 4] + h[17:]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def b62(self, n: int) -> str:
        return "".join(self.R.choice(B62) for _ in range(n))

    def toolu(self) -> str:
        return "toolu_01" + self.b62(22)

    def msg(self) -> str:
        return "msg_01" + self.b62(22)

    def hexn(self, n: int) -> str:
        return "".join(self.R.choice("0123456789abcdef") for _ in range(n))

    def signature(self) -> str:
        raw = bytes(self.R.getrandbits(8) for _ in range(self.R.randint(150, 260)))
        return base64.b64encode(b"\x12\x08" + raw).decode()


def jq_num(v) -> str:
    """Number text as jq prints it (shortest repr, integral floats without .0)."""
    if v is None:
        return "null"
    if isinstance(v, float):
        if math.isnan(v):
            return "null"
        if v == int(v) and abs(v) < 1e17:
            return str(int(v))
        return repr(v)
    return str(v)


def jq_pct(rate: float) -> str:
    """`$r * 100 | . * 10 | floor / 10` as printed by jq."""
    return jq_num(math.floor(rate * 100 * 10) / 10)


def tokens_of(text: str) -> int:
    return max(1, len(text) // 4)


def tiny_targz(files: list[tuple[str, str]]) -> bytes:
    """Deterministic tar.gz (fixed mtimes, gzip mtime 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, text in files:
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1767225600
            ti.mode = 0o644
            ti.uname = ti.gname = "agent"
            ti.uid = ti.gid = 1000
            tf.addfile(ti, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


class TextFile:
    """Collects lines with the true epoch at which each line was written."""

    def __init__(self):
        self.items: list[tuple[str, float]] = []

    def add(self, line: str, t: float):
        self.items.append((line, t))

    def render(self) -> tuple[bytes, list[list]]:
        buf = io.BytesIO()
        index = []
        for line, t in self.items:
            index.append([buf.tell(), q6(t)])
            buf.write(line.encode("utf-8") + b"\n")
        return buf.getvalue(), index


class RunLog:
    """run_agent.log / run_instance.log writer (Python logging format)."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.lines: list[tuple[float, str]] = []

    def log(self, t: float, level: str, msg: str):
        self.lines.append((t, f"{self.clock.log_ts(t)} - {level} - {msg}"))

    def info(self, t, msg):
        self.log(t, "INFO", msg)

    def warning(self, t, msg):
        self.log(t, "WARNING", msg)

    def error(self, t, msg):
        self.log(t, "ERROR", msg)

    def text(self) -> str:
        return "".join(line + "\n" for _, line in self.lines)


# ---------------------------------------------------------------------------
# Verbatim replicas of SForge 1.1.0 generated texts (stdlib-only generator;
# check_with_sforge.py compares them with the installed package).
# ---------------------------------------------------------------------------

NODE_INSTALL_CMD = (
    "sudo -E bash -c 'NODE_MIRROR=${SFORGE_NODEJS_MIRROR_URL:-https://nodejs.org/dist} && "
    "curl -fsSL $NODE_MIRROR/v20.18.0/node-v20.18.0-linux-x64.tar.xz | "
    "tar -xJ -C /usr/local --strip-components=1'"
)
CODEX_CONFIG_CMD = '''if [ -n "$OPENAI_BASE_URL" ]; then
    mkdir -p ~/.codex
    cat > ~/.codex/config.toml << EOF
model_provider = "sforge-proxy"
model_verbosity = "medium"
model = "${CODEX_MODEL:-gpt-5.5}"

[model_providers.sforge-proxy]
name = "sforge-proxy"
base_url = "${OPENAI_BASE_URL}"
env_key = "OPENAI_API_KEY"
EOF
fi'''

CLAUDE_RUN = ('claude -p "$(cat /tmp/agent_prompt.md)" --output-format stream-json'
              " --verbose --dangerously-skip-permissions")
CLAUDE_RESUME = ('claude --continue -p "Continue working." --output-format stream-json'
                 " --verbose --dangerously-skip-permissions")
CODEX_RUN = 'codex exec --dangerously-bypass-approvals-and-sandbox "$(cat /tmp/agent_prompt.md)"'
CODEX_RESUME = 'codex exec resume --last --dangerously-bypass-approvals-and-sandbox "Continue working."'

STOP_HOOK_SH = r"""#!/bin/bash
cat >/dev/null
echo '{"decision":"block","reason":"Do not stop. Continue working on the implementation."}'
"""
STOP_HOOK_FEEDBACK = ("Stop hook feedback:\n[/tmp/sforge-stop-hook.sh]: "
                      "Do not stop. Continue working on the implementation.")


def claude_settings_json() -> str:
    return json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/tmp/sforge-stop-hook.sh"}]}]}}, indent=2)


def codex_hooks_json() -> str:
    return json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/tmp/sforge-codex-stop-hook.sh", "timeout": 30,
         "statusMessage": "SForge stop hook"}]}]}}, indent=2)


CODEX_CONFIG_APPEND = """\n[features]\nhooks = true\n"""


def evolve_prompt(query: str, submit_paths, internet=True, max_submissions=None,
                  submission_cooldown=None) -> str:
    submit_files_note = ""
    if submit_paths:
        paths_str = ", ".join(f"`{p}`" for p in submit_paths)
        submit_files_note = (
            f"\n### Submitted Files\n\n"
            f"Only the following paths are submitted for evaluation: {paths_str}\n\n"
            f"**Keep these files in a compilable/runnable state at all times.** "
            f"A background process periodically auto-evaluates your code — if the "
            f"submitted files are broken, incomplete, or contain syntax errors at "
            f"that moment, the auto-evaluation will fail. Write changes to disk "
            f"promptly and ensure the submitted files always represent your current "
            f"best solution.\n"
        )
    network_note = ""
    if not internet:
        network_note = (
            "\n### Network Environment\n\n"
            "**This environment has NO internet access.** "
            "Only the judge server and the AI API are reachable. "
            "Do not attempt to download packages, fetch remote resources, "
            "or access external URLs — all dependencies are pre-installed "
            "in the workspace.\n"
        )
    budget_note = ""
    if max_submissions is not None or submission_cooldown is not None:
        parts = []
        if max_submissions is not None:
            parts.append(
                f"- You have a **limited number of submissions ({max_submissions} total)**. "
                f"Plan carefully and validate locally before submitting."
            )
        if submission_cooldown is not None:
            parts.append(
                f"- There is a **minimum interval of {submission_cooldown}s** between submissions."
            )
        budget_note = "\n### Submission Limits\n\n" + "\n".join(parts) + "\n"
    how_to_test = (
        "### How to Test Your Code\n\n"
        "- Run `sforge-submit` to submit your current code for evaluation. "
        "It will package the files, send them to the judge server, and return "
        "results showing score, pass rate, and a summary of findings.\n"
        "- Run `sforge-submit --details` to submit and see detailed per-test results.\n"
        "- Run `sforge-submit --list` to view all previous submissions and "
        "their scores for this run.\n\n"
        "You should use these regularly to check your progress and identify issues.\n"
    )
    return (
        "## Iterative Evaluation Mode\n\n"
        "You are working with iterative test feedback. "
        "After implementing code, you can submit your work for evaluation at any "
        "time to see which tests pass and which fail, then iterate based on the results.\n\n"
        f"{how_to_test}"
        f"{submit_files_note}"
        f"{budget_note}"
        f"{network_note}\n"
        "### Strategy\n\n"
        "- **Implement incrementally**: Complete one module/project at a time\n"
        "- **Read test feedback carefully**: Failed test names often hint at what's broken\n"
        "- **Iterate**: Fix failing tests based on the feedback, then submit again\n\n"
        "### Scoring\n\n"
        "- Your **best score** across all submissions is your final score\n"
        "- You don't lose points for failed attempts — experimentation is encouraged\n\n"
        "---\n\n"
        f"{query}\n"
    )


def game_prompt(query: str, internet=True) -> str:
    network_note = ""
    if not internet:
        network_note = (
            "## Network Environment\n\n"
            "**This environment has NO internet access.** Only the game server "
            "(`GAME_SERVER_URL`) and the AI API are reachable; everything else "
            "is iptables-blocked. **Do not** attempt to search the web, fetch "
            "walkthroughs, or download external resources — those calls will "
            "time out and waste your turns. Solve the game through gameplay.\n\n"
            "---\n\n"
        )
    return (
        "## Game Mode\n\n"
        "You are playing an **interactive fiction game** via an HTTP API. "
        "Send commands to the game server and maximize your score.\n\n"
        "---\n\n"
        f"{network_note}"
        "## Game Server HTTP API\n\n"
        "The server URL is available in the `GAME_SERVER_URL` environment variable.\n\n"
        "### Start a new game\n"
        "```\n"
        "POST {GAME_SERVER_URL}/new\n"
        "Body: {}\n"
        'Response: {"session_id": "abc123", "observation": "...", "score": 0, '
        '"peak_score": 0, "max_score": 350, "done": false, "moves": 0}\n'
        "```\n\n"
        "### Take an action\n"
        "```\n"
        "POST {GAME_SERVER_URL}/{session_id}/step\n"
        'Body: {"action": "go north"}\n'
        'Response: {"session_id": "...", "observation": "...", "score": 5, '
        '"peak_score": 5, "max_score": 350, "done": false, "moves": 1}\n'
        "```\n\n"
        "### Check status\n"
        "```\n"
        "GET {GAME_SERVER_URL}/{session_id}/status\n"
        'Response: {"session_id": "...", "score": 5, "peak_score": 5, '
        '"max_score": 350, "done": false, "moves": 1}\n'
        "```\n\n"
        "### Close session\n"
        "```\n"
        "POST {GAME_SERVER_URL}/{session_id}/close\n"
        'Response: {"session_id": "...", "final_score": 5, "peak_score": 5, '
        '"max_score": 350, "moves": 50}\n'
        "```\n\n"
        "### Score fields\n"
        "- `score` — the score you currently have in this session.\n"
        "- `peak_score` — the highest score you reached so far in this session "
        "(useful in games where score can decrease).\n"
        "- `max_score` — the theoretical maximum score for the game (constant). "
        "Your goal is to get `score` as close to `max_score` as possible.\n\n"
        "---\n\n"
        "## Tips\n\n"
        "- Interactive fiction games accept natural language commands: "
        '"go north", "take lamp", "examine door", "open mailbox", "read leaflet", etc.\n'
        "- `look` describes the current room. Moving in a direction that doesn't exist gives a failure message.\n"
        "- The game has puzzles — read descriptions carefully and experiment.\n"
        "- You can start multiple game sessions to explore different strategies.\n"
        "- **Keypress prompts**: Some games pause with prompts like "
        '`(Press SPACE to Continue)` or `[press BACKSPACE to return to game]`. '
        "When you see these in the observation, send a **single space** `\" \"` as "
        "the next action to dismiss them. These are Z-machine interactive prompts "
        "that require a single-character response, not a regular text command.\n\n"
        "---\n\n"
        "## Environment\n\n"
        "- `GAME_SERVER_URL` environment variable is pre-set.\n"
        "- Use `curl`, `urllib.request`, or `http.client` for HTTP requests.\n"
        "- Python 3.10 stdlib is available.\n\n"
        "---\n\n"
        "## Rules\n\n"
        "- All game interaction must go through the HTTP API.\n"
        "- You may start multiple game sessions to explore.\n"
        "- Maximize your score across all sessions.\n\n"
        "## Scoring\n\n"
        "- Your **best score** across all game sessions is your final result, "
        "normalized against `max_score` (the game's theoretical maximum).\n"
        "- You don't lose points for failed sessions — experimentation is encouraged.\n\n"
        "---\n\n"
        f"{query}\n"
    )


def eval_script(eval_cmd: str) -> str:
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        'echo ">>>>> Start Test Output"',
        f"{eval_cmd} 2>&1",
        "EXIT_CODE=$?",
        'echo ">>>>> End Test Output"',
        'echo "Exit code: $EXIT_CODE"',
        "exit 0",
    ]
    return "\n".join(lines) + "\n"


def k8s_name(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "sforge":
        role, task_id, run_id = parts[1], parts[2], parts[3]
        task_id = task_id[:15].rstrip("-").rstrip("_")
        name = f"{role}.{task_id}.{run_id}"
    s = name.lower().replace("_", "-").replace(".", "-")
    return s.strip("-")[:63].rstrip("-")


# sforge-submit is copied verbatim from the installed package text at
# generation time if available; otherwise this marker file is written.  To stay
# stdlib-only and self-contained the script text is embedded below.
SFORGE_SUBMIT_SH = r"""#!/bin/bash
set -e

LIST_MODE=0
DETAILS_MODE=0
for arg in "$@"; do
    case "$arg" in
        --list|-l) LIST_MODE=1 ;;
        --details|-d) DETAILS_MODE=1 ;;
        -h|--help)
            echo "Usage: sforge-submit [OPTIONS]"
            echo ""
            echo "Submit current code to the judge server for evaluation."
            echo "Results include score, pass rate, and a summary of findings."
            echo ""
            echo "Options:"
            echo "  --list, -l      List all previous submissions and scores for this run"
            echo "  --details, -d   Submit and show detailed per-test results (triggers a new submission)"
            echo "  -h, --help      Show this help message"
            exit 0
            ;;
        *)
            echo "ERROR: Unknown option: $arg" >&2
            echo "Run 'sforge-submit --help' for usage." >&2
            exit 1
            ;;
    esac
done

JUDGE_URL="${SFORGE_JUDGE_URL}"
TOKEN="${SFORGE_TOKEN}"
PATCH_DIR="${SFORGE_PATCH_DIR:-$(pwd)}"
STATE_FILE="/tmp/sforge_state.json"

if [ -z "$JUDGE_URL" ]; then
    echo "ERROR: SFORGE_JUDGE_URL not set" >&2
    exit 1
fi
if [ -z "$TOKEN" ]; then
    echo "ERROR: SFORGE_TOKEN not set" >&2
    exit 1
fi

if [ "$LIST_MODE" -eq 1 ]; then
    HIST=$(curl -s -m 30 "$JUDGE_URL/api/v1/history?token=$TOKEN")
    if [ -z "$HIST" ]; then
        echo "ERROR: No response from judge server" >&2
        exit 1
    fi
    BEST_RATE=$(echo "$HIST" | jq -r '.best_pass_rate // 0')
    BEST_SCORE=$(echo "$HIST" | jq -r '.best_score // "N/A"')
    COUNT=$(echo "$HIST" | jq -r '.entries | length')
    echo ""
    echo "========================================"
    echo "  Submission History"
    echo "  Total submissions: $COUNT"
    echo "  Best pass rate: $(jq -n --argjson r "$BEST_RATE" '$r * 100 | . * 10 | floor / 10')%"
    if [ "$BEST_SCORE" != "N/A" ] && [ "$BEST_SCORE" != "null" ]; then
        echo "  Best score: $BEST_SCORE"
    fi
    echo "========================================"
    echo ""
    if [ "$COUNT" -gt 0 ]; then
        printf "  %-14s %-10s %-8s %-12s %-10s %s\n" "ROUND" "STATUS" "VALID" "PASS_RATE" "SCORE" "SUMMARY"
        printf "  %-14s %-10s %-8s %-12s %-10s %s\n" "-----" "------" "-----" "---------" "-----" "-------"
        echo "$HIST" | jq -r '.entries[] | select(.type == "submission") |
            "  " +
            ((.round // "-") | . + " " * ([14 - length, 0] | max)) + " " +
            ((.status // "-") | . + " " * ([10 - length, 0] | max)) + " " +
            (if .valid == false then "no" else "yes" end | . + " " * ([8 - length, 0] | max)) + " " +
            (if .pass_rate != null then (.pass_rate * 100 * 10 | floor / 10 | tostring + "%") else "-" end | . + " " * ([12 - length, 0] | max)) + " " +
            (if .score != null then (.score | tostring) else "-" end | . + " " * ([10 - length, 0] | max)) + " " +
            ((.summary // "-") | if length > 40 then .[:37] + "..." else . end)'
    fi
    echo ""
    exit 0
fi

# ── Archive ──

cd "$PATCH_DIR"
ARCHIVE_FILE=$(mktemp --suffix=.tar.gz)
TAR_PATHS="${SFORGE_SUBMIT_PATHS:-.}"
if [ -n "${SFORGE_SUBMIT_PATHS:-}" ]; then
    EXISTING_PATHS=""
    for p in $SFORGE_SUBMIT_PATHS; do
        [ -e "$p" ] && EXISTING_PATHS="$EXISTING_PATHS $p"
    done
    TAR_PATHS="${EXISTING_PATHS# }"
fi
if [ -z "$TAR_PATHS" ]; then
    tar czf "$ARCHIVE_FILE" --files-from /dev/null
else
    tar czf "$ARCHIVE_FILE" --exclude='.git' ${SFORGE_SUBMIT_EXCLUDE_FLAGS:-} $TAR_PATHS
fi
ARCHIVE_SIZE=$(wc -c < "$ARCHIVE_FILE")

echo ""
echo "========================================"
echo "  Submitting for evaluation"
echo "  Archive size: $ARCHIVE_SIZE bytes"
echo "  Waiting for test results..."
echo "========================================"
echo ""

# ── Submit + poll ──

HTTP_CODE=$(curl -s -o /tmp/_submit_resp.json -w '%{http_code}' -m 120 -X POST "$JUDGE_URL/api/v1/submit" \
    -F "token=$TOKEN" \
    -F "archive=@$ARCHIVE_FILE")
rm -f "$ARCHIVE_FILE"
SUBMIT_RESP=$(cat /tmp/_submit_resp.json)

if [ "$HTTP_CODE" = "429" ]; then
    DETAIL=$(echo "$SUBMIT_RESP" | jq -r '.detail // empty')
    if echo "$DETAIL" | grep -qi "budget\|exhausted"; then
        echo "SUBMISSION LIMIT REACHED: $DETAIL" >&2
        echo "$DETAIL"
    else
        echo "COOLDOWN: $DETAIL" >&2
        echo "$DETAIL"
    fi
    exit 1
fi

SUBMISSION_ID=$(echo "$SUBMIT_RESP" | jq -r '.submission_id // empty')
ROUND_ID=$(echo "$SUBMIT_RESP" | jq -r '.round_id // empty')
REMAINING=$(echo "$SUBMIT_RESP" | jq -r '.remaining_submissions // empty')
if [ -z "$SUBMISSION_ID" ]; then
    echo "ERROR: Failed to submit to judge server (HTTP $HTTP_CODE)" >&2
    echo "$SUBMIT_RESP" >&2
    exit 1
fi

if [ -n "$ROUND_ID" ]; then
    if [ -n "$REMAINING" ] && [ "$REMAINING" != "null" ]; then
        echo "  Round: $ROUND_ID  (remaining submissions: $REMAINING)"
    else
        echo "  Round: $ROUND_ID"
    fi
    echo ""
fi

for _ in $(seq 1 720); do
    sleep 10
    RESULT=$(curl -s -m 30 "$JUDGE_URL/api/v1/result/$SUBMISSION_ID" 2>/dev/null || true)
    STATUS=$(echo "$RESULT" | jq -r '.status // empty')
    if [ "$STATUS" = "completed" ] || [ "$STATUS" = "error" ]; then
        break
    fi
done

STATUS=$(echo "$RESULT" | jq -r '.status // empty')
if [ "$STATUS" != "completed" ] && [ "$STATUS" != "error" ]; then
    echo "ERROR: Evaluation timed out or judge unreachable" >&2
    exit 1
fi

# ── Parse + update display cache + print ──

TS=$(date +%s)
ERROR_MSG=$(echo "$RESULT" | jq -r '.error // empty')

if [ -n "$ERROR_MSG" ]; then
    CURRENT_RATE=0
    CURRENT_SCORE="null"
    PASSED=0
    TOTAL=0
    FAILED=0
else
    REPORT=$(echo "$RESULT" | jq -r '.report')
    PASSED=$(echo "$REPORT" | jq -r '.passed')
    TOTAL=$(echo "$REPORT" | jq -r '.total_tests')
    FAILED=$(echo "$REPORT" | jq -r '.failed')
    CURRENT_RATE=$(echo "$REPORT" | jq -r '.pass_rate')
    CURRENT_SCORE=$(echo "$REPORT" | jq -r '.score // null')
    VALID=$(echo "$REPORT" | jq -r '.valid // true')
    SUMMARY=$(echo "$REPORT" | jq -r '.summary // empty')
fi

# Update local state file (display-only cache — not used for final scoring)
if [ ! -f "$STATE_FILE" ]; then
    echo '{"best_pass_rate": 0, "best_score": null, "best_round": "", "submissions": []}' > "$STATE_FILE"
fi
TMP=$(mktemp)
jq --arg round "${ROUND_ID:-unknown}" \
   --argjson ts "$TS" \
   --argjson rate "$CURRENT_RATE" \
   --argjson score "$CURRENT_SCORE" \
   '
   .submissions += [{kind: "agent", round: $round, at: $ts, pass_rate: $rate, score: $score}]
   | if $rate > (.best_pass_rate // 0) then
       .best_pass_rate = $rate | .best_round = $round | .best_score = $score
     else . end
   ' "$STATE_FILE" > "$TMP" && mv "$TMP" "$STATE_FILE"

if [ -n "$ERROR_MSG" ]; then
    echo "========================================"
    echo "  ${ROUND_ID:-submission}: ERROR"
    echo "  $ERROR_MSG"
    echo "========================================"
else
    echo "========================================"
    echo "  ${ROUND_ID:-submission} Results"
    echo "========================================"
    if [ "$VALID" = "false" ]; then
        echo "  Valid:       no"
    fi
    if [ "$CURRENT_SCORE" != "null" ]; then
        echo "  Score:       $CURRENT_SCORE"
    fi
    if [ "$TOTAL" -gt 0 ] 2>/dev/null; then
        PASS_PCT=$(jq -n --argjson r "$CURRENT_RATE" '$r * 100 | . * 10 | floor / 10')
        echo "  Pass rate:   ${PASS_PCT}%"
        echo "  Passed:      $PASSED/$TOTAL"
    fi
    if [ -n "$SUMMARY" ]; then
        echo ""
        echo "  Summary:"
        echo "    $SUMMARY"
    fi
    # Show metrics if present
    METRICS=$(echo "$REPORT" | jq -r '.metrics // empty')
    if [ -n "$METRICS" ] && [ "$METRICS" != "{}" ] && [ "$METRICS" != "null" ]; then
        echo ""
        echo "  Metrics:"
        echo "$REPORT" | jq -r '.metrics | to_entries[] | "    \(.key): \(.value)"'
    fi
    echo ""
    # Show failed items (from details if available, else from test_details)
    DETAIL_FAILURES=$(echo "$REPORT" | jq -r '[.details[]? | select(.status != "PASSED")] | length')
    if [ "$DETAIL_FAILURES" -gt 0 ] 2>/dev/null; then
        echo "  Failed checks:"
        echo "$REPORT" | jq -r '.details[] | select(.status != "PASSED") | .name' | head -20 | while read -r t; do echo "    - $t"; done
        if [ "$DETAIL_FAILURES" -gt 20 ] 2>/dev/null; then
            echo "    ... and $((DETAIL_FAILURES - 20)) more"
        fi
    else
        FAILED_TESTS=$(echo "$REPORT" | jq -r '.test_details[]? | select(.status != "PASSED") | .name')
        if [ -n "$FAILED_TESTS" ]; then
            echo "  Failed tests:"
            echo "$FAILED_TESTS" | head -20 | while read -r t; do echo "    - $t"; done
        else
            if [ "$TOTAL" -gt 0 ] 2>/dev/null; then
                echo "  All tests passed!"
            fi
        fi
    fi
    # Show full details if --details flag
    if [ "$DETAILS_MODE" -eq 1 ]; then
        HAS_DETAILS=$(echo "$REPORT" | jq -r '.details | length')
        if [ "$HAS_DETAILS" -gt 0 ] 2>/dev/null; then
            echo ""
            echo "  Details:"
            echo "$REPORT" | jq -r '.details[] | "    [\(.status)] \(.name)\(if .message then ": " + .message else "" end)"'
        fi
    fi
    echo "========================================"
    echo ""
fi
"""


# ---------------------------------------------------------------------------
# sforge-submit printed output (mirrors the bash/jq script above)
# ---------------------------------------------------------------------------


def submit_header_lines(archive_size: int) -> list[str]:
    return ["", RULE, "  Submitting for evaluation", f"  Archive size: {archive_size} bytes",
            "  Waiting for test results...", RULE, ""]


def submit_round_lines(round_id: str, remaining) -> list[str]:
    if remaining is not None:
        return [f"  Round: {round_id}  (remaining submissions: {remaining})", ""]
    return [f"  Round: {round_id}", ""]


def submit_result_lines(round_id: str, rep: dict, details_mode=False) -> list[str]:
    """`rep` is the API view of report.json (no score_0_100)."""
    out = [RULE, f"  {round_id} Results", RULE]
    # NB: the script reads VALID with `jq -r '.valid // true'`, and jq's `//`
    # treats false as missing, so "Valid: no" is never printed in practice.
    if rep.get("score") is not None:
        out.append(f"  Score:       {jq_num(rep['score'])}")
    total = rep.get("total_tests", 0)
    if total > 0:
        out.append(f"  Pass rate:   {jq_pct(rep['pass_rate'])}%")
        out.append(f"  Passed:      {rep['passed']}/{total}")
    if rep.get("summary"):
        out += ["", "  Summary:", f"    {rep['summary']}"]
    metrics = rep.get("metrics") or {}
    if metrics:
        out += ["", "  Metrics:"]
        for k, v in metrics.items():
            out.append(f"    {k}: {v if isinstance(v, str) else jq_num(v)}")
    out.append("")
    fails = [d["name"] for d in rep.get("details", []) if d["status"] != "PASSED"]
    if fails:
        out.append("  Failed checks:")
        out += [f"    - {n}" for n in fails[:20]]
        if len(fails) > 20:
            out.append(f"    ... and {len(fails) - 20} more")
    else:
        tfails = [d["name"] for d in rep.get("test_details", []) if d["status"] != "PASSED"]
        if tfails:
            out.append("  Failed tests:")
            out += [f"    - {n}" for n in tfails[:20]]
        elif total > 0:
            out.append("  All tests passed!")
    if details_mode and rep.get("details"):
        out += ["", "  Details:"]
        for d in rep["details"]:
            msg = f": {d['message']}" if d.get("message") is not None else ""
            out.append(f"    [{d['status']}] {d['name']}{msg}")
    out += [RULE, ""]
    return out


def submit_list_lines(view: dict) -> list[str]:
    """`sforge-submit --list` (agent view of /history)."""
    entries = view["entries"]
    out = ["", RULE, "  Submission History", f"  Total submissions: {len(entries)}",
           f"  Best pass rate: {jq_pct(view['best_pass_rate'] or 0)}%"]
    if view.get("best_score") is not None:
        out.append(f"  Best score: {jq_num(view['best_score'])}")
    out += [RULE, ""]
    if entries:
        out.append("  %-14s %-10s %-8s %-12s %-10s %s" % ("ROUND", "STATUS", "VALID", "PASS_RATE", "SCORE", "SUMMARY"))
        out.append("  %-14s %-10s %-8s %-12s %-10s %s" % ("-----", "------", "-----", "---------", "-----", "-------"))
        for e in entries:
            if e.get("type") != "submission":
                continue
            pr = "-" if e.get("pass_rate") is None else jq_pct(e["pass_rate"]) + "%"
            sc = "-" if e.get("score") is None else jq_num(e["score"])
            summ = e.get("summary") or "-"
            if len(summ) > 40:
                summ = summ[:37] + "..."
            valid = "no" if e.get("valid") is False else "yes"
            out.append("  " + e["round"].ljust(14) + " " + e["status"].ljust(10) + " " + valid.ljust(8)
                       + " " + pr.ljust(12) + " " + sc.ljust(10) + " " + summ)
    out.append("")
    return out


# ---------------------------------------------------------------------------
# Grading replicas (sforge.harness.grading / selection / score_rescale)
# ---------------------------------------------------------------------------


def rescale(spec: dict | None, raw):
    if not spec or "kind" not in spec or raw is None:
        return None
    if isinstance(raw, float) and not math.isfinite(raw):
        return None
    raw = float(raw)

    def clip(v, lo=0.0, hi=100.0):
        return v if math.isnan(v) else max(lo, min(hi, v))

    k = spec["kind"]
    if k == "linear":
        lo, hi = spec["lower"], spec["upper"]
        return math.nan if hi == lo else clip(100.0 * (raw - lo) / (hi - lo))
    if k == "piecewise_min":
        b, r30, r1, sa = spec["baseline"], spec["rank30"], spec["rank1"], spec["super_anchor"]
        if raw <= 0 or raw >= b:
            return 0.0
        if raw >= r30:
            return clip(20.0 * (b - raw) / (b - r30), 0.0, 20.0)
        if raw >= r1:
            return clip(20.0 + 60.0 * (r30 - raw) / (r30 - r1), 20.0, 80.0)
        if raw >= sa:
            return clip(80.0 + 20.0 * (r1 - raw) / (r1 - sa), 80.0, 100.0)
        return 100.0
    raise ValueError(k)


def select_best(entries: list[dict], direction="maximize", policy="pass_rate_first") -> dict:
    done = [e for e in entries if e.get("type", "submission") in ("submission", "game")
            and e.get("status") in (None, "completed")]

    def better(s, old):
        return old is None or (s < old if direction == "minimize" else s > old)

    best_score, best_pr, best_round = None, 0.0, ""
    if policy == "score_first":
        for e in done:
            s = e.get("score")
            if s is None:
                continue
            if better(s, best_score):
                best_score, best_pr, best_round = s, e.get("pass_rate", 0.0) or 0.0, e.get("round", "")
    elif policy == "pass_rate_first":
        for e in done:
            pr = e.get("pass_rate", 0.0) or 0.0
            s = e.get("score") if e.get("score") is not None else e.get("max_score")
            new = False
            if pr < 1.0 or best_pr < 1.0:
                if pr > best_pr:
                    best_pr, best_score, new = pr, (s if s is not None else pr), True
            elif s is not None and better(s, best_score):
                best_score, new = s, True
            if new:
                best_round = e.get("round", "")
    else:
        raise ValueError(policy)
    return {"best_score": best_score, "best_pass_rate": best_pr, "best_round": best_round}


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
        s100 = rescale(self.task["judge"].get("rescale"), graded["score"])
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
        return {"run_id": run_id, "best_score": best["best_score"], "best_pass_rate": best["best_pass_rate"],
                "best_round": best["best_round"],
                "agent_submissions": sum(1 for e in entries if (e.get("round") or "").startswith("agent-")),
                "auto_submissions": sum(1 for e in entries if (e.get("round") or "").startswith("auto-")),
                "entries": entries}

    def agent_view(self, run_id, policy, direction, at: float) -> dict:
        full = self.history(run_id, policy, direction, at)
        entries = [e for e in full["entries"] if not (e.get("round") or "").startswith("auto-")]
        best = select_best(entries, direction, policy)
        return {"run_id": run_id, "best_score": best["best_score"], "best_pass_rate": best["best_pass_rate"],
                "best_round": best["best_round"],
                "agent_submissions": sum(1 for e in entries if e.get("type") == "submission"),
                "auto_submissions": 0, "entries": entries}


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


# ---------------------------------------------------------------------------
# Synthetic domain text (gravitational-wave search task)
# ---------------------------------------------------------------------------

GW_CWD = "/workspace/gw_search"
GW_FILES = ["config.yaml", "run_search.py", "search/__init__.py", "search/bank.py", "search/coincidence.py",
            "search/localize.py", "search/matched_filter.py", "search/pe.py", "search/pipeline.py",
            "search/psd.py", "search/triggers.py", "search/whiten.py"]
GW_CODE = {
    "search/psd.py": [
        "import numpy as np", "from scipy import signal", "",
        "def estimate_psd(strain, fs, seglen=4.0, method=\"median\"):",
        "    nperseg = int(seglen * fs)",
        "    f, pxx = signal.welch(strain, fs=fs, nperseg=nperseg, noverlap=nperseg // 2, average=method)",
        "    return f, np.maximum(pxx, 1e-50)", "",
        "def sliding_psd(strain, fs, window=64.0, step=16.0):",
        "    out = []", "    n = int(window * fs)", "    for start in range(0, len(strain) - n + 1, int(step * fs)):",
        "        out.append(estimate_psd(strain[start:start + n], fs)[1])", "    return np.array(out)",
    ],
    "search/whiten.py": [
        "import numpy as np", "from .psd import estimate_psd, sliding_psd", "",
        "def whiten(strain, fs, psd=None, taper=8.0):",
        "    if psd is None:", "        _, psd = estimate_psd(strain, fs)",
        "    win = signal.windows.tukey(len(strain), alpha=2 * taper * fs / len(strain))",
        "    spec = np.fft.rfft(strain * win)", "    freqs = np.fft.rfftfreq(len(strain), 1 / fs)",
        "    asd = np.sqrt(np.interp(freqs, np.linspace(0, fs / 2, len(psd)), psd))",
        "    return np.fft.irfft(spec / asd, n=len(strain))", "",
        "def gate_glitches(x, fs, thresh=25.0, half_width=0.25):",
        "    loud = np.flatnonzero(np.abs(x) > thresh)", "    for idx in loud:",
        "        lo, hi = max(0, idx - int(half_width * fs)), idx + int(half_width * fs)",
        "        x[lo:hi] *= signal.windows.tukey(hi - lo, 0.5)", "    return x",
    ],
    "search/bank.py": [
        "import numpy as np", "from dataclasses import dataclass", "",
        "@dataclass", "class Template:", "    mchirp: float", "    q: float", "    f_low: float = 20.0", "",
        "def build_bank(mc_min=5.0, mc_max=40.0, q_max=4.0, minimal_match=0.97):",
        "    mcs = np.geomspace(mc_min, mc_max, int(180 * (1 - minimal_match) ** -0.5 / 6))",
        "    qs = np.linspace(1.0, q_max, 7)", "    return [Template(m, q) for m in mcs for q in qs]",
    ],
    "search/matched_filter.py": [
        "import numpy as np", "from .bank import Template", "",
        "def snr_series(data_f, tmpl_f, psd, df):",
        "    corr = np.fft.irfft(data_f * np.conj(tmpl_f) / psd) * 4 * df",
        "    sigma = np.sqrt(4 * df * np.sum(np.abs(tmpl_f) ** 2 / psd))", "    return np.abs(corr) / sigma", "",
        "def chisq_veto(snr, data_f, tmpl_f, psd, bins=16):",
        "    edges = np.linspace(0, len(tmpl_f), bins + 1).astype(int)", "    chi = 0.0",
        "    for lo, hi in zip(edges[:-1], edges[1:]):",
        "        part = np.fft.irfft(data_f[lo:hi] * np.conj(tmpl_f[lo:hi]) / psd[lo:hi])",
        "        chi += np.max(np.abs(part)) ** 2", "    return chi / (2 * bins - 2)",
    ],
    "search/coincidence.py": [
        "import numpy as np", "", "MAX_DT = 0.010  # light travel time H1-L1 plus margin", "",
        "def coincide(trigs_h, trigs_l, snr_min=5.5):",
        "    pairs = []", "    for th in trigs_h:", "        if th.snr < snr_min:", "            continue",
        "        for tl in trigs_l:",
        "            if abs(th.t - tl.t) < MAX_DT and tl.snr >= snr_min:",
        "                pairs.append((th, tl, np.hypot(th.snr, tl.snr)))", "    return pairs",
    ],
    "search/localize.py": [
        "import numpy as np", "import healpy as hp", "",
        "def skymap(dt, snr_h, snr_l, nside=64):",
        "    npix = hp.nside2npix(nside)", "    theta, phi = hp.pix2ang(nside, np.arange(npix))",
        "    model_dt = 0.0100 * np.cos(theta)", "    sigma = 0.0006 * 10.0 / np.hypot(snr_h, snr_l)",
        "    logp = -0.5 * ((dt - model_dt) / sigma) ** 2", "    p = np.exp(logp - logp.max())",
        "    return p / p.sum()",
    ],
    "search/pe.py": [
        "import numpy as np", "", "def estimate(candidate, bank):",
        "    best = max(candidate.matches, key=lambda m: m.snr)",
        "    return {\"mchirp\": best.template.mchirp, \"q\": best.template.q, \"tc\": best.t}",
    ],
    "search/triggers.py": [
        "import json", "", "def write_triggers(cands, path):", "    rows = []", "    for c in cands:",
        "        rows.append({\"injection_id\": c.injection_id, \"gps\": c.t, \"snr\": round(c.snr, 3),",
        "                     \"far\": c.far, \"mchirp\": c.mchirp, \"skymap\": c.skymap_path})",
        "    with open(path, \"w\") as fh:", "        json.dump(rows, fh)",
    ],
    "search/pipeline.py": [
        "import numpy as np", "from .psd import sliding_psd", "from .whiten import whiten, gate_glitches",
        "from .bank import build_bank", "from .matched_filter import snr_series, chisq_veto",
        "from .coincidence import coincide", "from .triggers import write_triggers", "",
        "def run(strain_dir, out_dir, cfg):", "    bank = build_bank(**cfg[\"bank\"])",
        "    for chunk in load_chunks(strain_dir):", "        white = {ifo: whiten(x, chunk.fs) for ifo, x in chunk.data.items()}",
        "        trigs = {ifo: filter_bank(white[ifo], bank, cfg) for ifo in white}",
        "        cands = coincide(trigs[\"H1\"], trigs[\"L1\"], cfg[\"snr_min\"])",
        "    write_triggers(cands, f\"{out_dir}/triggers.json\")",
    ],
    "run_search.py": [
        "import argparse", "import yaml", "from search import pipeline", "",
        "def main():", "    ap = argparse.ArgumentParser()", "    ap.add_argument(\"--strain\", required=True)",
        "    ap.add_argument(\"--out\", required=True)", "    args = ap.parse_args()",
        "    cfg = yaml.safe_load(open(\"config.yaml\"))", "    pipeline.run(args.strain, args.out, cfg)", "",
        "if __name__ == \"__main__\":", "    main()",
    ],
}
GW_IDEAS = [
    "tune the chi-squared veto bin count", "tighten the bank's minimal match in the low chirp-mass corner",
    "lengthen the whitening taper to 16 s", "cluster triggers over a 0.2 s window instead of 0.5 s",
    "raise the single-detector SNR floor for the background estimate", "add a phase-consistency cut",
    "rescale the sky-map width by the measured timing error", "drop templates above q=3.5",
    "recompute the PSD every 32 s instead of 64 s", "re-rank candidates by reweighted SNR",
    "smooth the sky map with a 2-pixel Gaussian", "use the loudest template's tc instead of the bin centre",
    "cap the number of candidates per 4096-s chunk", "fix the off-by-one in the FFT frequency grid",
]
GW_COMPONENTS = ["detection", "localisation", "parameter_estimation", "false_alarm"]


def gw_code(path: str, R: random.Random, n: int) -> tuple[list[str], int]:
    body = list(GW_CODE.get(path, GW_CODE["search/pe.py"]))
    extra = [f"    # tuned {R.choice(['2026-03-12', 'run', 'dev set'])}: {R.choice(GW_IDEAS)}",
             f"    thresh = {R.uniform(4.5, 8.5):.2f}", f"    n_bins = {R.choice([8, 12, 16, 20, 24])}"]
    while len(body) < n:
        body += extra
    start = R.randint(1, 40)
    return body[:n], start


def gw_local_eval(R: random.Random, proxy: float, n=120) -> str:
    rec = min(n, int(n * (0.55 + proxy / 250) + R.randint(-3, 3)))
    return (f"loaded {n} dev injections (seed {R.randint(1, 99)})\n"
            f"detection:    {rec}/{n} recovered ({100 * rec / n:.1f}%)\n"
            f"localisation: median 90% area {R.randint(180, 1400)} deg2\n"
            f"pe:           median |dMc/Mc| {R.uniform(0.6, 9.0):.2f}%\n"
            f"background:   {R.randint(0, 14)} triggers / 10 days\n"
            f"proxy composite: {proxy + R.uniform(-2.5, 2.5):.2f}")


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
        times = {"container_started": None}
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


# ---------------------------------------------------------------------------
# Run 1: 12-hour gravitational-wave search (score task, score_first)
# ---------------------------------------------------------------------------

GW_W = {"detection": 4, "parameter_estimation": 3, "localisation": 2, "false_alarm": 1}   # tenths
GW_MOMENTS = [
    {"h": 2.55, "files": ["search/psd.py", "search/whiten.py"], "new_file": None,
     "realisation": "False alarms were eating every threshold gain because the PSD was a plain mean over the "
                    "whole 4096-s chunk: loud glitches inflated it and non-stationary stretches were mis-whitened. "
                    "Switched to a median-averaged Welch PSD on 64-s sliding windows plus glitch gating.",
     "text": "Stepping back before touching another threshold. For two hours every gain in detection has been "
             "cancelled by new false alarms, and the missed/false lists share one feature: they cluster in the "
             "chunks with loud glitches. I estimate the PSD as a plain mean over the whole 4096-s chunk, so a "
             "single glitch inflates it and the quiet, non-stationary stretches around it are mis-whitened. The "
             "problem is not the template bank or the veto, it's the noise model. New plan: median-averaged Welch "
             "PSD on 64-s sliding windows, gate loud transients before filtering, and leave every threshold "
             "exactly where it is so the effect is measurable."},
    {"h": 4.35, "files": ["search/coincidence.py", "search/matched_filter.py"], "new_file": "search/coherent.py",
     "realisation": "Requiring coincident single-detector triggers above SNR 5.5 threw away every signal that is "
                    "quiet in one detector; replaced coincidence with a coherent two-detector network statistic "
                    "(time-of-flight window + phase consistency).",
     "text": "Rethinking detection from scratch. The missed-injection list is dominated by signals with network "
             "SNR above 9 that are simply quiet in L1: I require each detector to cross SNR 5.5 on its own and "
             "then look for coincidences, so anything weak in one detector never becomes a candidate. That is the "
             "wrong question. A coherent network statistic (sum of squared SNRs within the 10 ms light-travel "
             "window, with a phase-consistency check) ranks exactly those signals. This means replacing "
             "search/coincidence.py with a coherent stage, not tuning it."},
    {"h": 8.75, "files": ["search/pe.py", "search/bank.py"], "new_file": "search/refine.py",
     "realisation": "Parameter estimation reported the template-bank grid point, whose chirp-mass spacing is "
                    "coarser than the scorer's tolerance; added a per-candidate local maximisation of the match over "
                    "(Mc, q, tc, phi) instead of refining the bank.",
     "text": "The subagent's breakdown settles it: the parameter-estimation error is the bank spacing. I report the "
             "grid point of the loudest template as the estimate, and the chirp-mass step of the bank is larger "
             "than the error the scorer tolerates, so no amount of bank tuning fixes it cheaply. Instead of a "
             "denser bank I should refine each candidate: start from the peak template and maximise the match "
             "locally over (Mc, q, tc, phi) with a few Nelder-Mead iterations. That is cheap per candidate and "
             "attacks the error directly."},
]
GW_SMALL_TARGETS = [(0.5, "agent"), (0.7, "agent"), (0.95, "agent"), (1.45, "agent"), (1.75, "agent"),
                    (2.05, "agent"), (2.3, "agent"), (3.2, "agent"), (3.55, "agent"), (3.85, "agent"),
                    (4.1, "agent"), (5.0, "auto"), (5.5, "agent"), (5.9, "agent"), (6.35, "agent"),
                    (6.75, "agent"), (7.15, "auto"), (7.55, "agent"), (8.15, "agent"), (9.5, "agent"),
                    (10.1, "agent"), (10.75, "agent"), (11.25, "agent")]


def gw_nominal(h, m1, m2, m3, h_m2):
    det = 63.6 + 0.8 * min(1.0, h / 3.0)
    if m2:
        det = 79.4 + 10.0 * min(1.0, max(0.0, h - h_m2) / 2.6)
    loc = 20.0 + 20.0 * (1 - math.exp(-h / 4.0)) + (6.0 if m1 else 0.0)
    fa = 58.0 + 3.0 * min(1.0, h / 3.0) + (16.0 if m1 else 0.0) + 2.0 * min(1.0, max(0.0, h - 6.0) / 5.0)
    pe = 24.0 + 14.0 * (1 - math.exp(-h / 3.5)) + (5.0 if m1 else 0.0) + (13.0 if m3 else 0.0)
    return {"detection": det, "localisation": loc, "false_alarm": fa, "parameter_estimation": pe}


def solve_components(s100: int, nominal: dict) -> dict:
    """Integer tenths per component with sum(w*c) == s100 exactly (score in hundredths)."""
    if s100 <= 0:
        return {k: 0 for k in GW_W}

    def cl(v):
        return max(0, min(1000, int(round(v))))

    d, l, f0 = cl(nominal["detection"] * 10), cl(nominal["localisation"] * 10), cl(nominal["false_alarm"] * 10)
    rest = s100 - 4 * d - 2 * l
    if rest > 4000:
        dd = min(1000 - d, -(-(rest - 4000) // 4))
        d += dd
        rest -= 4 * dd
        if rest > 4000:
            dl = -(-(rest - 4000) // 2)
            l += dl
            rest -= 2 * dl
    if rest < 0:
        dd = min(d, -(-(-rest) // 4))
        d -= dd
        rest += 4 * dd
        if rest < 0:
            dl = -(-(-rest) // 2)
            l -= dl
            rest += 2 * dl
    p = max(0, min(1000, int(round((rest - f0) / 3))))
    f = rest - 3 * p
    if f > 1000:
        p += -(-(f - 1000) // 3)
    elif f < 0:
        p -= -(-(-f) // 3)
    f = rest - 3 * p
    c = {"detection": d, "parameter_estimation": p, "localisation": l, "false_alarm": f}
    assert all(0 <= v <= 1000 for v in c.values()) and sum(GW_W[k] * v for k, v in c.items()) == s100, (s100, c)
    return c


class GWScorer:
    def __init__(self, R: random.Random):
        self.R = R
        h_m2 = GW_MOMENTS[1]["h"]
        targets = [{"h": h, "who": who} for h, who in GW_SMALL_TARGETS]
        targets += [{"h": m["h"], "who": "moment", "moment": i} for i, m in enumerate(GW_MOMENTS)]
        targets.sort(key=lambda x: x["h"])
        first_h = 0.33
        rows = [{"h": first_h, "who": "first"}] + targets
        for r in rows:
            flags = [r["h"] >= m["h"] for m in GW_MOMENTS]
            r["nominal"] = gw_nominal(r["h"], *flags, h_m2)
            r["N"] = sum(GW_W[k] * r["nominal"][k] for k in GW_W) * 10   # hundredths
        n0, n1 = rows[0]["N"], rows[-1]["N"]
        for r in rows:
            r["v"] = int(round(4280 + (r["N"] - n0) * (6700 - 4280) / (n1 - n0)))
        for a, b in zip(rows, rows[1:]):
            assert b["v"] > a["v"] + 4, (a, b)
        for r in rows:
            r["comps"] = solve_components(r["v"], r["nominal"])
        self.first = rows[0]
        self.targets = rows[1:]
        self.best = None
        self.best_comps = None
        self.new_bests: list[dict] = []

    def _below(self, kind: str, forced: str | None) -> dict:
        R = self.R
        best = self.best
        if forced == "crash":
            return {"type": "crash", "s100": None, "comps": None}
        if forced == "invalid":
            return {"type": "invalid", "s100": 0, "comps": {k: 0 for k in GW_W}}
        r = R.random()
        if kind == "auto":
            typ = "broken" if r < 0.08 else "below"
            d = int(R.expovariate(1 / 260.0)) + 15
        else:
            typ = "broken" if r < 0.09 else "below"
            d = int(R.uniform(10, 420)) if r < 0.75 else int(R.uniform(420, 1350))
        if typ == "broken":
            s = int(R.uniform(1100, 3400))
            nominal = {k: self.best_comps[k] / 10 * R.uniform(0.25, 0.75) for k in GW_W}
        else:
            d = min(d, best - 50)
            s = best - max(5, d)
            drop = [R.random() + 0.05 for _ in GW_W]
            tot = sum(drop)
            nominal = {}
            for (k, w), fr in zip(GW_W.items(), drop):
                nominal[k] = max(0.0, self.best_comps[k] / 10 - (fr / tot) * (best - s) / 100 / (w / 10))
        return {"type": typ, "s100": s, "comps": solve_components(s, nominal)}

    def assign(self, kind: str, h: float, *, moment: int | None = None, forced: str | None = None) -> dict:
        if self.best is None:
            row = self.first
            self.best, self.best_comps = row["v"], row["comps"]
            out = {"type": "best", "s100": row["v"], "comps": row["comps"], "new_best": True, "prev_best": None,
                   "prev_comps": None}
            self.new_bests.append(out)
            return out
        if forced is None and self.targets:
            tgt = self.targets[0]
            ok = (tgt["who"] == "moment" and moment == tgt["moment"]) or \
                 (tgt["who"] == kind and moment is None and h >= tgt["h"])
            if ok:
                self.targets.pop(0)
                prev, prev_c = self.best, self.best_comps
                self.best, self.best_comps = tgt["v"], tgt["comps"]
                out = {"type": "best", "s100": tgt["v"], "comps": tgt["comps"], "new_best": True,
                       "prev_best": prev, "prev_comps": prev_c, "moment": tgt.get("moment")}
                self.new_bests.append(out)
                return out
            if moment is not None:
                raise RuntimeError(f"moment {moment} submitted before pending target {tgt}")
        out = self._below(kind, forced)
        out.update(new_best=False, prev_best=self.best)
        return out


def gw_eval_output(outcome: dict, runtime: float, R: random.Random, task: dict) -> tuple[str, dict]:
    eval_cmd = task["judge"]["eval_cmd"]
    pre = ["+ echo '>>>>> Start Test Output'", ">>>>> Start Test Output"]
    pre += ["+ " + part.strip() for part in eval_cmd.split("&&")]
    n_tmpl = R.randint(900, 1900)
    body = ["[evaluate] strain: 2 detectors x 12 chunks x 4096 s, fs=4096 Hz; 400 blind injections",
            "[evaluate] running submission: python run_search.py --strain /opt/judge/data/strain --out /tmp/eval_out",
            f"[run_search] bank: {n_tmpl} templates"]
    post = ["+ EXIT_CODE=0", "+ echo '>>>>> End Test Output'", ">>>>> End Test Output",
            "+ echo 'Exit code: 0'", "Exit code: 0"]
    if outcome["type"] == "crash":
        body += ["Traceback (most recent call last):",
                 '  File "/workspace/gw_search/run_search.py", line 3, in <module>',
                 "    from search import pipeline",
                 '  File "/workspace/gw_search/search/pipeline.py", line 9, in <module>',
                 "    from .triggers import write_triggers, TriggerRow",
                 "ImportError: cannot import name 'TriggerRow' from 'search.triggers' "
                 "(/workspace/gw_search/search/triggers.py)",
                 "[evaluate] submission exited with code 1; no triggers to score"]
        post = [p.replace("EXIT_CODE=0", "EXIT_CODE=1").replace("code: 0", "code: 1") for p in post]
        text = "\n".join(pre[:2] + pre[2:] + body + post) + "\n"
        return text, dict(EMPTY_GRADE)
    comps = outcome["comps"]
    s100 = outcome["s100"]
    det, loc, pe, fa = (comps["detection"] / 10, comps["localisation"] / 10,
                        comps["parameter_estimation"] / 10, comps["false_alarm"] / 10)
    rec = int(round(4 * det))
    n_fa = int(round(60 * (1 - fa / 100)))
    if outcome["type"] == "invalid":
        bad = R.randint(120, 330)
        data = {"valid": False, "score": 0.0,
                "summary": f"invalid submission: triggers.json has {bad} rows without an injection_id",
                "details": [{"name": k, "status": "FAILED", "message": "not scored (invalid output)",
                             "score": 0.0, "weight": GW_W[k] / 10} for k in GW_COMPONENTS],
                "metrics": {"injections": 400, "rows_rejected": bad}}
        body += [f"[run_search] wrote {R.randint(380, 460)} candidates to /tmp/eval_out/triggers.json",
                 f"[evaluate] schema check failed: {bad} rows without injection_id"]
    else:
        msgs = {"detection": f"recovered {rec}/400 injections at FAR <= 1/month",
                "localisation": f"median 90% credible area {2000 * (1 - loc / 100) + 40:.0f} deg2",
                "parameter_estimation": f"median |dMc/Mc| = {12 * (1 - pe / 100) + 0.3:.2f}%",
                "false_alarm": f"{n_fa} background triggers above threshold in 30 days"}
        vals = {"detection": det, "localisation": loc, "parameter_estimation": pe, "false_alarm": fa}
        data = {"valid": True, "score": s100 / 100,
                "summary": (f"composite {s100 / 100:.2f} (detection {det:.1f}, localisation {loc:.1f}, "
                            f"parameter_estimation {pe:.1f}, false_alarm {fa:.1f})"),
                "details": [{"name": k, "status": "PASSED" if vals[k] >= 60.0 else "FAILED", "message": msgs[k],
                             "score": vals[k], "weight": GW_W[k] / 10} for k in GW_COMPONENTS],
                "metrics": {"injections": 400, "recovered": rec, "background_days": 30, "false_alarms": n_fa,
                            "eval_wall_seconds": round(runtime - R.uniform(1.0, 3.0), 1)}}
        body += [f"[run_search] wrote {R.randint(380, 520)} candidates to /tmp/eval_out/triggers.json",
                 f"[evaluate] matched {rec}/400 injections (|dt| < 50 ms)",
                 f"[evaluate] background: 30 days of time slides, {n_fa} triggers above threshold"]
    body += [">>>>> Start Structured Result", json.dumps(data, indent=2), ">>>>> End Structured Result"]
    text = "\n".join(pre + body + post) + "\n"
    return text, grade_structured(data)


GW_QUERY = """# Gravitational-wave signal search (synthetic task description)

You are given two detectors' worth of calibrated strain (`data/strain/`, H1 and L1, 4096 Hz, 4096-s
chunks) from a simulated observing run with realistic non-stationary noise and glitches. Blind
compact-binary injections are hidden in the judge's copy of the data.

Write a search pipeline in `search/` driven by `run_search.py --strain <dir> --out <dir>` that writes
`<out>/triggers.json`: one row per candidate with `injection_id` (the GPS second of the candidate, as
an integer string), `gps`, `snr`, `far` (per year), `mchirp`, `q`, and a sky-map path.

The judge runs your pipeline on 400 blind injections plus 30 days of time-slid background and reports a
composite score (0-100) with four components:

- `detection` (weight 0.4): fraction of injections recovered at FAR <= 1/month
- `parameter_estimation` (weight 0.3): accuracy of chirp mass and mass ratio
- `localisation` (weight 0.2): size of the 90% credible sky area
- `false_alarm` (weight 0.1): background triggers above your own threshold

`tools/local_eval.py` scores your pipeline on a small public dev set. Runtime limit: 15 minutes per
evaluation on 4 CPUs."""


def gw_task() -> dict:
    return {
        "task_id": "gw_signal_search",
        "name": "Gravitational-wave compact-binary signal search",
        "base_image": "python311_sci",
        "platform": "linux/amd64",
        "cwd": GW_CWD,
        "submit_paths": ["search", "run_search.py", "config.yaml"],
        "submit_exclude": ["tests/", "data/"],
        "internet": True,
        "game_mode": False,
        "category": "Scientific Computing",
        "work": {"agent_query": GW_QUERY, "image_tag": "5b1f0c7d2e94", "cpu_limit": 4, "mem_limit": "16g"},
        "judge": {
            "eval_cmd": ("cd /workspace/gw_search && python /opt/judge/evaluate.py --submission /workspace/gw_search "
                         "--injections /opt/judge/data/blind_o4_400.hdf5 --background-days 30"),
            "eval_timeout": 900,
            "parser": "structured_json",
            "score_direction": "maximize",
            "selection": "score_first",
            "rescale": {"kind": "linear", "lower": 10.0, "upper": 90.0},
            "image_tag": "a41c9e07b3d2",
            "cpu_limit": 4,
            "mem_limit": "8g",
        },
    }


class GWRun(RunBase):
    RUN_ID = "opus48-edge-3-20260312005800"
    EVENTS = [(0.06, "subagent1"), (1.2, "crash_cooldown"), (1.6, "stop_hook"), (1.9, "invalid"),
              (2.55, "moment0"), (3.9, "stop_hook"), (4.35, "moment1"),
              (5.25, "api_error"), (6.2, "list"), (6.5, "stop_hook"),
              (7.7, "shell_timeout"), (8.45, "subagent2"), (8.75, "moment2"), (9.45, "invalid"),
              (9.65, "stop_hook"), (11.45, "stop_hook"), (11.8, "final")]

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(480), "k8s", SEED + 101)
        self.model = "claude-opus-4-8"
        self.skew = 1.37
        self.judge_url = "http://10.128.0.12:8080"
        self.timeout, self.interval, self.cooldown = 43200, 1800, 120
        self.agent_n = 0
        self.last_accept = None
        self.state = {"best_pass_rate": 0, "best_score": None, "best_round": "", "submissions": []}
        self.subs: dict[str, dict] = {}
        self.rejections: list[dict] = []
        self.moments: list[dict] = []
        self.killed = False
        self.t_kill = float("inf")
        self.last: dict | None = None
        self.events = list(self.EVENTS)
        self.auto_specials = [(6.1, "invalid")]
        self.files = list(GW_FILES)
        self.pending_text: str | None = None
        self.ws: dict[str, str] = {}   # the edited files as the moment runs' archives hold them (GWLikeRun)
        self.ws_log: list[tuple] = []  # (time the tool result came, file, text written) or (..., old, new)
        self._archive: tuple[float, bytes] | None = None

    # -- helpers -------------------------------------------------------------
    def make_scorer(self, R: random.Random):
        return GWScorer(R)

    def h(self, t):
        return (t - self.started) / 3600.0

    def archive_size(self, t):
        return int(2100 + 95 * len(self.files) + 55 * self.h(t) + self.R.randint(-40, 40))

    # -- the workspace, so that each submission.tar.gz holds what the transcript did ----------
    def workspace_at(self, t: float) -> dict[str, str]:
        """The submitted files at time ``t``: the task's files as the transcript reads them (a file
        without code of its own reads as search/pe.py, as ``gw_code`` shows it), then every
        Write and Edit done by ``t``. No random draw."""
        ws = {f: ("\n".join(GW_CODE.get(f, GW_CODE["search/pe.py"])) + "\n" if f.endswith(".py")
                  else "# gw_search settings (synthetic)\nthreshold: 6.0\nbank: bank.hdf5\n") for f in GW_FILES}
        for op in self.ws_log:
            if op[0] > t:
                break
            if len(op) == 3:                       # Write
                ws[op[1]] = op[2]
            else:                                  # Edit: as the Edit tool does (an old string not found: appended)
                cur, old, new = ws.get(op[1], ""), op[2], op[3]
                ws[op[1]] = cur.replace(old, new, 1) if old in cur else cur + new + "\n"
        return ws

    def archive_at(self, t: float) -> bytes:
        """``submission.tar.gz`` of a submission posted at ``t`` (the last one built is kept)."""
        if self._archive is None or self._archive[0] != t:
            ws = self.workspace_at(t)
            self._archive = (t, tiny_targz([(f, ws[f]) for f in sorted(ws)]))
        return self._archive[1]

    def submitted_size(self, t: float) -> int:
        """The size sforge-submit, the judge and the tick log print: the archive's own."""
        self.archive_size(t)   # drawn as before the archives were written: the run's other draws stay as they were
        return len(self.archive_at(t))

    def final_files(self, t: float) -> list[tuple[str, str]]:
        ws = self.workspace_at(t)
        return [(f, ws[f]) for f in sorted(ws)]

    def runtime_for(self, outcome):
        if outcome["type"] == "crash":
            return self.R.uniform(5.0, 9.0)
        return self.R.uniform(58.0, 140.0)

    def archive_bytes(self, t_post: float) -> bytes:
        return self.archive_at(t_post)

    def grade(self, rid, kind, t_post, outcome, runtime, size=None):
        text, graded = gw_eval_output(outcome, runtime, self.RC, self.task)
        info = self.judge.grade(rid, kind, t_post, size or self.submitted_size(t_post), runtime, text, graded,
                                allowed_files=sorted(self.files), archive_bytes=self.archive_bytes(t_post))
        info["outcome"] = outcome
        info["elapsed_hours"] = round(self.h(info["grading_start_epoch"]), 4)
        self.subs[rid] = info
        return info

    def fire_auto(self, rid, t_post):
        h = self.h(t_post)
        forced = None
        if self.auto_specials and h >= self.auto_specials[0][0]:
            forced = self.auto_specials.pop(0)[1]
        outcome = self.scorer.assign("auto", h, forced=forced)
        return self.grade(rid, "auto", t_post, outcome, self.runtime_for(outcome))

    def flush_autos(self, upto):
        self.auto.flush(upto, self.fire_auto)

    # -- agent actions -------------------------------------------------------
    def step(self, tool, inp, result, *, exec_s=(0.05, 0.3), is_error=False, tur=None, pre=(), latency=(2.0, 7.0)):
        cl = self.cl
        tid = cl.api(list(pre) + [("tool", tool, inp)], latency=latency)[0]
        dt = self.R.uniform(*exec_s) if isinstance(exec_s, tuple) else exec_s
        cl.tool_result(tid, result, is_error=is_error, dt=dt, tur=tur)
        path = inp.get("file_path", "") if isinstance(inp, dict) else ""
        if not is_error and path.startswith(GW_CWD + "/") and tool in ("Write", "Edit"):
            rel = path[len(GW_CWD) + 1:]
            if tool == "Write":
                self.ws[rel] = inp["content"] + "\n"
                self.ws_log.append((cl.t, rel, self.ws[rel]))
            else:
                cur = self.ws.get(rel, "\n".join(GW_CODE.get(rel, [])) + "\n")
                old, new = inp["old_string"], inp["new_string"]
                self.ws[rel] = cur.replace(old, new, 1) if old in cur else cur + new + "\n"
                self.ws_log.append((cl.t, rel, old, new))
        return tid

    def take_pre(self, think_p=0.35) -> list:
        pre = []
        if self.RC.random() < think_p:
            pre.append(("thinking", self.thinking()))
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        return pre

    def thinking(self) -> str:
        R = self.RC
        best = self.scorer.best / 100 if self.scorer.best else 0
        parts = [f"Best is {best:.2f}.",
                 f"The {R.choice(GW_COMPONENTS)} component is the one with the most headroom per hour of work.",
                 f"If I {R.choice(GW_IDEAS)}, the local proxy should move by maybe {R.uniform(0.2, 1.5):.1f}.",
                 "The dev set is only 120 injections, so differences below ~1 point are noise.",
                 f"Last eval took {R.randint(60, 140)} s; keep the pipeline under the 15-minute limit.",
                 "I should keep the submitted files runnable at all times because of the auto-eval.",
                 f"Check whether the {R.choice(['whitening', 'veto', 'clustering', 'sky map', 'bank'])} change "
                 f"interacts with the threshold ({R.uniform(4.5, 8.5):.2f})."]
        R.shuffle(parts)
        return " ".join(parts[:R.randint(2, 5)])

    def action(self):
        R = self.RC
        kind = R.choices(["read", "edit", "grep", "local", "misc", "todo"], [26, 34, 10, 20, 8, 2])[0]
        path = R.choice([f for f in self.files if f.endswith(".py")])
        full = f"{GW_CWD}/{path}"
        pre = self.take_pre()
        if kind == "read":
            lines, start = gw_code(path, R, R.randint(12, 40))
            inp = {"file_path": full} if R.random() < 0.5 else {"file_path": full, "offset": start, "limit": len(lines)}
            content = read_result(lines, start)
            self.step("Read", inp, content, pre=pre,
                      tur={"type": "text", "file": {"filePath": full, "content": "\n".join(lines),
                                                    "numLines": len(lines), "startLine": start,
                                                    "totalLines": start + len(lines) + R.randint(0, 60)}})
        elif kind == "edit":
            lines, _ = gw_code(path, R, 14)
            old = R.choice([ln for ln in lines if ln.strip()])
            new = old + f"  # {R.choice(GW_IDEAS)}" if R.random() < 0.5 else old.replace("0", "1", 1)
            if new == old:
                new = old + "  # revisit"
            if R.random() < 0.04:
                msg = f"String to replace not found in file.\nString: {old}"
                self.step("Edit", {"file_path": full, "old_string": old, "new_string": new},
                          f"<tool_use_error>{msg}</tool_use_error>", is_error=True, pre=pre, tur="Error: " + msg)
            else:
                self.step("Edit", {"file_path": full, "old_string": old, "new_string": new},
                          f"The file {full} has been updated successfully.", pre=pre,
                          tur={"filePath": full, "oldString": old, "newString": new, "replaceAll": False,
                               "userModified": False})
        elif kind == "grep":
            pat = R.choice(["snr_min", "thresh", "chisq", "psd", "tc", "far", "nside", "minimal_match"])
            hits = [f"{p}:{R.randint(3, 120)}:    {pat} = {R.uniform(0.1, 9.0):.3f}"
                    for p in R.sample([f for f in self.files if f.endswith('.py')], R.randint(1, 4))]
            out = "\n".join(hits)
            self.step("Bash", {"command": f"cd {GW_CWD} && grep -rn \"{pat}\" search/ run_search.py | head -20",
                               "description": f"Find uses of {pat}"}, out, exec_s=(0.05, 0.4), pre=pre,
                      tur=bash_tur(out))
        elif kind == "local":
            proxy = (self.scorer.best or 4280) / 100 - R.uniform(-1.0, 3.0)
            if R.random() < 0.06:
                out = ("Exit code 1\nTraceback (most recent call last):\n"
                       f'  File "{GW_CWD}/tools/local_eval.py", line 41, in <module>\n'
                       "    res = run_pipeline(cfg)\n"
                       f'  File "{GW_CWD}/search/whiten.py", line {R.randint(10, 40)}, in whiten\n'
                       "    return np.fft.irfft(spec / asd, n=len(strain))\n"
                       "ValueError: operands could not be broadcast together with shapes (8193,) (4097,)")
                self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                                   "description": "Run local dev evaluation", "timeout": 300000}, out,
                          exec_s=(6.0, 14.0), is_error=True, pre=pre, tur="Error: " + out[len("Exit code 1\n"):])
            else:
                out = gw_local_eval(R, proxy)
                self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                                   "description": "Run local dev evaluation", "timeout": 300000}, out,
                          exec_s=(22.0, 95.0), pre=pre, tur=bash_tur(out))
        elif kind == "misc":
            n = R.randint(6, 14)
            out = "." * n + f"{' ' * (70 - n)}[100%]\n{n} passed in {R.uniform(1.5, 6.0):.2f}s"
            self.step("Bash", {"command": f"cd {GW_CWD} && python -m pytest -q tests/test_units.py",
                               "description": "Run unit tests"}, out, exec_s=(2.0, 7.0), pre=pre,
                      tur=bash_tur(out))
        else:
            todos = [{"content": R.choice(GW_IDEAS).capitalize(), "status": st,
                      "activeForm": "Working on " + R.choice(GW_IDEAS)} for st in ("completed", "in_progress", "pending")]
            self.step("TodoWrite", {"todos": todos},
                      "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
                      "your progress. Please proceed with the current tasks if applicable", pre=pre,
                      tur={"oldTodos": [], "newTodos": todos})

    def reaction(self, info) -> str:
        R = self.RC
        o, rid = info["outcome"], info["round"]
        if o["type"] == "crash":
            return (f"{rid} came back without a score: the judge's run hit an ImportError (search/pipeline.py still "
                    "imports TriggerRow, which I renamed). Fixing the import right away.")
        best = self.scorer.best / 100
        if o["type"] == "invalid":
            return (f"{rid} was marked invalid ({info['api_report']['summary']}). The writer drops injection_id for "
                    "candidates that merged during clustering; restoring the field.")
        s = o["s100"] / 100
        if o["new_best"]:
            prev = o["prev_best"] / 100 if o["prev_best"] else None
            pb = o["prev_comps"] or o["comps"]
            diffs = sorted(GW_COMPONENTS, key=lambda k: o["comps"][k] - pb[k], reverse=True)
            k = diffs[0]
            head = f"{rid}: new best {s:.2f}" + (f" (previous best {prev:.2f})." if prev else ".")
            return (f"{head} {k} moved {pb[k] / 10:.1f} -> {o['comps'][k] / 10:.1f}. Keeping it; next I'll "
                    f"{R.choice(GW_IDEAS)}.")
        bc = self.scorer.best_comps
        k = min(GW_COMPONENTS, key=lambda c: o["comps"][c] - bc[c])
        what = ("That change hurt" if o["type"] == "broken" else R.choice(["Slightly worse", "No gain", "Worse"]))
        return (f"{rid}: {s:.2f}, below the best {best:.2f}. {what}: {k} {bc[k] / 10:.1f} -> {o['comps'][k] / 10:.1f}. "
                f"{R.choice(['Reverting that part.', 'Reverting and trying the next idea.', 'Keeping the refactor, undoing the tweak.', 'Going back to the best config.'])}")

    def submit(self, *, moment=None, forced=None, runtime=None, details=False, pre=()):
        cl, R = self.cl, self.R
        cmd = "sforge-submit --details" if details else "sforge-submit"
        tid = cl.api(list(pre) + [("tool", "Bash", {"command": f"cd {GW_CWD} && {cmd}",
                                                    "description": "Submit current code for evaluation",
                                                    "timeout": 600000})])[0]
        t_call = cl.t
        t_post = t_call + R.uniform(0.9, 2.4)
        if t_post > self.t_kill:
            self.killed = True
            return None
        size = self.submitted_size(t_post)
        header = submit_header_lines(size)
        if self.last_accept is not None and t_post - self.last_accept < self.cooldown:
            wait = int(self.cooldown - (t_post - self.last_accept)) + 1
            detail = (f"Submission cooldown active — wait {wait}s before next submission. "
                      "Continue working on improvements and submit again later.")
            out = "\n".join(header + [detail, f"COOLDOWN: {detail}"])
            cl.tool_result(tid, "Exit code 1\n" + out.strip("\n"), is_error=True, dt=t_post + 0.08 - cl.t,
                           tur="Error: Exit code 1\n" + out.strip("\n"))
            self.rejections.append({"reason": "cooldown", "tool_use_id": tid, "call_epoch": q6(t_call),
                                    "post_epoch": q6(t_post), "wait_seconds": wait})
            return {"rejected": True, "wait": wait}
        self.flush_autos(t_post)
        self.agent_n += 1
        rid = f"agent-{self.agent_n}"
        self.last_accept = t_post + 0.02
        h = self.h(t_post)
        outcome = self.scorer.assign("agent", h, moment=moment, forced=forced)
        info = self.grade(rid, "agent", t_post, outcome, runtime or self.runtime_for(outcome), size)
        info["submit_call_epoch"] = q6(t_call)
        info["tool_use_id"] = tid
        t_ret = info["grading_start_epoch"] + R.uniform(0.005, 0.03)
        k = math.ceil((info["completed_epoch"] - t_ret) / 10.03)
        t_seen = t_ret + k * 10.03 + R.uniform(0.01, 0.08)
        if t_seen - t_call > 600:
            t_to = t_call + 600 + R.uniform(0.05, 0.3)
            partial = "\n".join(header + submit_round_lines(rid, None)).strip("\n")
            cl.tool_result(tid, "Command timed out after 10m 0s\n" + partial, is_error=True, dt=t_to - cl.t,
                           tur="Error: Command timed out after 10m 0s\n" + partial)
            info["shell_tool_timeout"] = True
            info["result_seen_epoch"] = None
            self.last = info
            return info
        if t_seen > self.t_kill:
            self.killed = True
            cl.t = t_seen
            info["result_seen_epoch"] = None
            return info
        at = int(t_seen + self.skew)
        rep = info["api_report"]
        rate, score = jqv(rep["pass_rate"]), jqv(rep["score"])
        self.state["submissions"].append({"kind": "agent", "round": rid, "at": at, "pass_rate": rate,
                                          "score": score})
        if rate > self.state["best_pass_rate"]:
            self.state.update(best_pass_rate=rate, best_round=rid, best_score=score)
        info["result_seen_epoch"] = q6(t_seen)
        info["evolve_at"] = at
        content = "\n".join(header + submit_round_lines(rid, None) + submit_result_lines(rid, rep, details)).strip("\n")
        cl.tool_result(tid, content, dt=t_seen + R.uniform(0.15, 0.4) - cl.t, tur=bash_tur(content))
        self.last = info
        self.pending_text = self.reaction(info)
        return info

    def normal_cycle(self, forced=None):
        for _ in range(self.RC.choice([1, 2, 2, 3, 3, 3, 4, 4])):
            self.action()
            if self.cl.t > self.t_kill:
                return
        # the prompt announces the cooldown: keep working until it has passed
        while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
            self.action()
        self.submit(pre=self.take_pre(0.2), forced=forced)

    # -- special events ------------------------------------------------------
    def subagent(self, desc, prompt, steps, final, intro):
        cl = self.cl
        tid = cl.api(self.take_pre(0.3) + [("text", intro), ("tool", "Task", {"description": desc, "prompt": prompt,
                                                                              "subagent_type": "general-purpose"})])[0]
        cl.user_text(prompt, parent=tid, dt=0.4)
        for name, inp, res, dt in steps:
            sid = cl.api([("tool", name, inp)], parent=tid, latency=(1.5, 4.0))[0]
            cl.tool_result(sid, res, parent=tid, dt=dt, tur=bash_tur(res) if name == "Bash" else None)
        cl.api([("text", final)], parent=tid, latency=(2.0, 5.0))
        cl.tool_result(tid, [{"type": "text", "text": final}], dt=0.5)
        self.subagent_ids.append(tid)

    def moment(self, i):
        cl, R = self.cl, self.RC
        m = GW_MOMENTS[i]
        think = (f"Best is stuck around {self.scorer.best / 100:.2f}. Listing what the last dozen rounds changed: "
                 "thresholds, veto bins, clustering windows. All local optimisations of the same structure. "
                 "Before another tweak, re-check the assumption the structure rests on. "
                 + m["realisation"])
        pre = [("thinking", think)]
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        line_index = len(self.out.items)
        tid = cl.api(pre + [("text", m["text"]), ("tool", "Read", {"file_path": f"{GW_CWD}/{m['files'][0]}"})],
                     latency=(6.0, 14.0))[0]
        # locate the text line we just emitted
        msg_line = None
        for j in range(line_index, len(self.out.items)):
            if '"type":"text"' in self.out.items[j][0] and m["text"][:40] in self.out.items[j][0]:
                msg_line = j
        lines, start = gw_code(m["files"][0], R, 30)
        cl.tool_result(tid, read_result(lines, start), dt=0.12)
        self.moment_msg.append((i, msg_line))
        for f in m["files"][1:]:
            lines, start = gw_code(f, R, 25)
            self.step("Read", {"file_path": f"{GW_CWD}/{f}"}, read_result(lines, start))
        if m["new_file"]:
            code = "\n".join(["import numpy as np", "", f"# {m['realisation'][:90]}"] +
                             [f"def stage_{j}(x, fs, cfg):\n    return x" for j in range(6)])
            path = f"{GW_CWD}/{m['new_file']}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      tur={"type": "create", "filePath": path, "content": code})
            self.files.append(m["new_file"])
            self.files.sort()
        for _ in range(3):
            f = R.choice(m["files"])
            old = R.choice([ln for ln in GW_CODE[f] if ln.strip()])
            self.step("Edit", {"file_path": f"{GW_CWD}/{f}", "old_string": old, "new_string": old + "  # reworked"},
                      f"The file {GW_CWD}/{f} has been updated successfully.", pre=self.take_pre(0.5))
        proxy = self.scorer.best / 100 + 3.5
        out = gw_local_eval(R, proxy)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Run local dev evaluation", "timeout": 300000}, out,
                  exec_s=(110.0, 190.0), tur=bash_tur(out))
        before = self.scorer.best
        info = self.submit(moment=i, pre=[("text", "The dev proxy jumped. Submitting to confirm on the blind set.")])
        self.moments.append({"index": i, "round": info["round"], "score_before": before / 100,
                             "score_after": info["outcome"]["s100"] / 100, "realisation": m["realisation"],
                             "planned_hours": m["h"], "text": m["text"]})

    def handle(self, ev):
        cl, R = self.cl, self.RC
        if ev == "subagent1":
            listing = ("H1-4096-chunk-000.npy\nH1-4096-chunk-001.npy\n...\nL1-4096-chunk-011.npy\nmeta.json")
            self.subagent(
                "Survey strain data layout",
                f"Look at {GW_CWD}/data and tools/local_eval.py. Report: file format and sampling rate of the strain, "
                "how chunks are named, what metadata exists, and exactly what local_eval.py expects in triggers.json. "
                "Keep it under 200 words.",
                [("Bash", {"command": f"ls {GW_CWD}/data/strain | head; cat {GW_CWD}/data/strain/meta.json",
                           "description": "List strain files"}, listing + '\n{"fs": 4096, "chunk_seconds": 4096, '
                                                                          '"ifos": ["H1", "L1"], "gps_start": 1400000000}', 0.2),
                 ("Read", {"file_path": f"{GW_CWD}/tools/local_eval.py"},
                  read_result(["import json", "import numpy as np", "", "def score(rows, truth):",
                               "    ...  # matches rows to injections by |gps - t_inj| < 0.05"], 1), 0.1)],
                "Strain: 12 chunks per detector, numpy float64 arrays, 4096 Hz, 4096 s each, GPS start in meta.json. "
                "local_eval.py matches triggers.json rows to injections by |gps - t_inj| < 50 ms, requires "
                "injection_id, snr, far, mchirp, q; FAR threshold 1/month; sky maps optional locally.",
                "I'll have a subagent survey the data layout while I read the local evaluator.")
        elif ev == "crash_cooldown":
            self.normal_cycle(forced="crash")
            # quick fix, resubmit too early -> COOLDOWN
            self.step("Edit", {"file_path": f"{GW_CWD}/search/pipeline.py",
                               "old_string": "from .triggers import write_triggers, TriggerRow",
                               "new_string": "from .triggers import write_triggers"},
                      f"The file {GW_CWD}/search/pipeline.py has been updated successfully.", pre=self.take_pre(0.0))
            r = self.submit(pre=[("text", "Fixed; resubmitting.")])
            if r and r.get("rejected"):
                wait = r["wait"] + 3
                self.step("Bash", {"command": f"sleep {wait}", "description": "Wait for the submission cooldown",
                                   "timeout": 200000}, "", exec_s=float(wait),
                          pre=[("text", f"Cooldown is {self.cooldown}s between submissions; waiting {wait}s.")],
                          tur=bash_tur(""))
                self.submit()
        elif ev == "invalid":
            self.normal_cycle(forced="invalid")
        elif ev == "stop_hook":
            best = self.scorer.best / 100
            pre = self.take_pre(0.3)
            cl.api(pre + [("text", f"Summary so far: best composite {best:.2f}. The pipeline is stable and all "
                                  "submitted files are in a runnable state. Remaining ideas are small threshold "
                                  "tweaks with diminishing returns, so this is a reasonable place to stop.")])
            cl.stop_hook(dt=R.uniform(0.6, 1.8))
            self.pending_text = R.choice(["Continuing — there is still time budget, so back to the missed-injection list.",
                                          "Understood, continuing with the next improvement.",
                                          "Continuing. Next target: the weakest component."])
        elif ev.startswith("moment"):
            self.moment(int(ev[-1]))
        elif ev == "compact":
            best = self.scorer.best / 100
            cl.compact(f"Task: gravitational-wave search pipeline in {GW_CWD}/search, scored by a composite of "
                       f"detection, parameter_estimation, localisation and false_alarm. Best so far {best:.2f} "
                       f"after {self.agent_n} agent submissions. Key decisions: " +
                       "; ".join(m["realisation"][:80] for m in GW_MOMENTS[:len(self.moments)]) +
                       ". Files: " + ", ".join(self.files) + ". Keep submissions under 15 minutes of runtime.")
        elif ev == "list":
            view = self.judge.agent_view(self.run_id, "score_first", "maximize", self.cl.t + 8.0)
            out = "\n".join(submit_list_lines(view)).strip("\n")
            self.step("Bash", {"command": "sforge-submit --list", "description": "List previous submissions"},
                      out, exec_s=(0.3, 0.9), pre=self.take_pre(0.2) + [("text", "Checking the submission history.")],
                      tur=bash_tur(out))
            self.list_calls.append(q6(self.cl.t))
        elif ev == "shell_timeout":
            for _ in range(2):
                self.action()
            self.submit(runtime=884.3, pre=[("text", "Submitting the larger bank (evaluation will be slow).")])
            self.pending_text = ("The sforge-submit call hit my 10-minute tool timeout; the round was still consumed "
                                 "and will be graded. The larger bank is too slow anyway — reverting to the previous "
                                 "bank size.")
        elif ev == "subagent2":
            self.subagent(
                "Break down parameter-estimation errors",
                f"In {GW_CWD}, run tools/local_eval.py --subset dev --n 120 --dump-pe /tmp/pe.csv and analyse the "
                "chirp-mass errors per injection: how do they relate to the template bank spacing? Report numbers.",
                [("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120 --dump-pe /tmp/pe.csv",
                           "description": "Dump PE errors"}, gw_local_eval(R, self.scorer.best / 100), 75.0),
                 ("Bash", {"command": "python -c \"import pandas as pd; d=pd.read_csv('/tmp/pe.csv'); "
                                      "print(d.describe())\"", "description": "Summarise PE errors"},
                  "       dmc_rel     bank_step\ncount  97.000     97.000\nmean    0.041      0.043\n"
                  "50%     0.037      0.041\nmax     0.118      0.090", 2.1)],
                "Chirp-mass relative errors (median 3.7%) track the bank's local chirp-mass step (median 4.1%) almost "
                "one-to-one (correlation 0.93). The estimate is the grid point of the loudest template; errors are "
                "dominated by grid spacing, not by noise.",
                "Before tuning PE further I'll have a subagent quantify where the errors come from.")
        elif ev == "final":
            while cl.t < self.t_kill - 260 and not self.killed:
                self.action()
            if not self.killed:
                target = self.t_kill - self.R.uniform(62.0, 75.0)
                assert cl.t < target, "final submission would not be in flight at the kill"
                cl.t = target
                self.submit(pre=self.take_pre(0.0) + [("text", "Submitting the final cleanup.")])

    # -- segments ------------------------------------------------------------
    def opening(self):
        cl, R = self.cl, self.RC
        listing = ("total 40\ndrwxr-xr-x 1 agent agent 4096 Mar 12 08:58 .\n-rw-r--r-- 1 agent agent 2210 TASK.md\n"
                   "drwxr-xr-x 1 agent agent 4096 data\ndrwxr-xr-x 1 agent agent 4096 search\n"
                   "drwxr-xr-x 1 agent agent 4096 tests\ndrwxr-xr-x 1 agent agent 4096 tools\n---\n" + GW_QUERY[:900])
        self.step("Bash", {"command": f"cd {GW_CWD} && ls -la && sed -n 1,60p TASK.md",
                           "description": "List workspace and read the task"}, listing,
                  pre=[("thinking", "Long-horizon task, 12 hours, scored on a blind set. First understand the data "
                                    "and the local evaluator, then get a complete but simple pipeline submitted early "
                                    "so there is a baseline, then iterate."),
                       ("text", "I'll start by reading the task description and surveying the workspace.")],
                  tur=bash_tur(listing))
        self.handle("subagent1")
        self.events = [e for e in self.events if e[1] != "subagent1"]
        todos = [{"content": c, "status": "pending", "activeForm": a} for c, a in [
            ("Baseline pipeline: PSD, whitening, bank, matched filter, coincidence", "Building the baseline"),
            ("Submit baseline", "Submitting baseline"), ("Improve detection", "Improving detection"),
            ("Sky localisation", "Working on localisation"), ("Parameter estimation", "Working on PE")]]
        self.step("TodoWrite", {"todos": todos}, "Todos have been modified successfully. Ensure that you continue to "
                  "use the todo list to track your progress. Please proceed with the current tasks if applicable",
                  tur={"oldTodos": [], "newTodos": todos})
        for f in ["search/psd.py", "search/whiten.py", "search/bank.py", "search/matched_filter.py",
                  "search/coincidence.py", "search/localize.py", "search/pe.py", "search/triggers.py",
                  "search/pipeline.py", "run_search.py"]:
            code = "\n".join(GW_CODE[f])
            path = f"{GW_CWD}/{f}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      pre=self.take_pre(0.25), tur={"type": "create", "filePath": path, "content": code})
        err = ("Exit code 1\nTraceback (most recent call last):\n  File \"/workspace/gw_search/tools/local_eval.py\", "
               "line 12, in <module>\n    from search import pipeline\n  File \"/workspace/gw_search/search/pipeline.py\", "
               "line 9, in <module>\n    def run(strain_dir, out_dir, cfg):\nNameError: name 'load_chunks' is not defined")
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "First local evaluation", "timeout": 300000}, err, exec_s=(3.0, 5.0),
                  is_error=True, tur="Error: " + err[len("Exit code 1\n"):])
        self.step("Edit", {"file_path": f"{GW_CWD}/search/pipeline.py", "old_string": "def run(strain_dir, out_dir, cfg):",
                           "new_string": "from .io import load_chunks\n\ndef run(strain_dir, out_dir, cfg):"},
                  f"The file {GW_CWD}/search/pipeline.py has been updated successfully.",
                  pre=[("text", "Missing loader import; fixing.")])
        out = gw_local_eval(R, 41.0)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Local evaluation", "timeout": 300000}, out, exec_s=(70.0, 110.0),
                  tur=bash_tur(out))
        self.submit(pre=[("text", "Baseline runs end to end. Submitting it to get a first blind score.")])

    def agent_loop(self, seg_end: float):
        while not self.killed and self.cl.t < seg_end and self.cl.t < self.t_kill:
            h = self.h(self.cl.t)
            if self.cl.ctx[None] + self.cl.pending[None] > 160000:
                self.handle("compact")
                continue
            if self.events and h >= self.events[0][0]:
                ev = self.events.pop(0)[1]
                if ev == "api_error":
                    return "api_error"
                self.handle(ev)
                continue
            self.normal_cycle()
        return "timeout"

    # -- whole run -----------------------------------------------------------
    def build(self):
        R = self.R
        task = self.task
        cfg = run_config(self.task_id, "claude-code", self.model, self.timeout, self.interval, True, self.judge_url,
                         work_cpu=4, work_mem="16g", judge_cpu=4, judge_mem="8g", cooldown=self.cooldown)
        self.write_configs(cfg, experiment="experiments/opus48-edge.yaml", stagger=600,
                           experiment_yaml=("# synthetic experiment file (copied by sforge run --experiment)\n"
                                            "model:\n  model: claude-opus-4-8\ndefaults:\n  agent: claude-code\n"
                                            "  backend: k8s\n  judge_url: http://10.128.0.12:8080\n  timeout: 43200\n"
                                            "  eval_interval: 1800\n  submission_cooldown: 120\n  cpu_limit: 4\n"
                                            "  work_mem_limit: 16g\n  judge_mem_limit: 8g\nstagger: 600\n"
                                            "tasks:\n  gw_signal_search: {}\n"))
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], True, None, self.cooldown)
        t0 = epoch_of(2026, 3, 12, 8, 58, 1, 480) + 0.183
        s = self.setup(t0, agent="claude-code", install_cmds=[NODE_INSTALL_CMD,
                       "sudo -E npm install -g @anthropic-ai/claude-code@2.1.159"],
                       install_outs=["", NPM_OUT_CLAUDE.format(s=23)], judge_url=self.judge_url,
                       eval_interval=self.interval, prompt=prompt)
        self.started = s["started_at"]
        self.judge = Judge(task, self.clock, "k8s", self.ids, R, self.tdir)
        self.scorer = self.make_scorer(R)
        self.auto = AutoEval(self, s["t_ae"], self.interval, extract=(1.8, 4.2))
        self.out = TextFile()
        self.cl = Claude(self.ids, R, self.out, model=self.model, version="2.1.159", cwd=GW_CWD,
                         tools=CLAUDE_TOOLS, skew=self.skew)
        self.subagent_ids, self.moment_msg, self.list_calls = [], [], []
        self.prev_best_comps = None
        cmd = f"{CLAUDE_RUN} --model {self.model}"
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {cmd[:200]}... (timeout={self.timeout:.0f}s)")
        seg1_start = t + 0.04
        self.cl.start_segment(seg1_start, self.ids.uuid(), tokens_of(prompt))
        self.cl.init(R.uniform(2.2, 3.4))
        self.opening()
        how = self.agent_loop(float("inf"))
        assert how == "api_error"
        self.cl.synthetic_api_error('API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                                    '"message":"Overloaded"}}', "server_error")
        self.cl.result('API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                       is_error=True, api_error_status=529)
        self.cl.t += 0.35
        self.cl.raw("__SFORGE_EXIT__1")
        t_exit = self.cl.t + 0.04
        self.cl.end_segment(t_exit, "exit (API error), resumed")
        e1 = t_exit - seg1_start
        remaining = self.timeout - e1
        self.log.info(t_exit + 0.001, f"Agent exited after {e1:.1f}s, will resume")
        rcmd = f"{CLAUDE_RESUME} --model {self.model}"
        self.log.info(t_exit + 0.002, f"Resuming agent (attempt 1/100, {remaining:.0f}s left): {rcmd[:200]}...")
        seg2_start = t_exit + 0.045
        self.t_kill = seg2_start + int(remaining) + 0.31
        self.cl.start_segment(seg2_start, self.ids.uuid(), 12, resumed_ctx=self.cl.ctx[None])
        self.cl.init(R.uniform(2.5, 4.0))
        self.pending_text = (f"Resuming after the API interruption. Last round was agent-{self.agent_n}; best so far "
                             f"{self.scorer.best / 100:.2f}. Re-reading my notes before continuing.")
        self.step("Read", {"file_path": f"{GW_CWD}/NOTES.md"},
                  read_result([f"- best {self.scorer.best / 100:.2f}", "- coherent stage in search/coherent.py",
                               "- next: localisation (sky map width), PE"], 1), pre=self.take_pre(0.0))
        self.agent_loop(float("inf"))
        # cut everything the agent would have printed after the kill
        self.out.items = [it for it in self.out.items if it[1] <= self.t_kill]
        self.cl.end_segment(self.t_kill, "timeout (killed)")
        e2 = self.t_kill - seg2_start
        runtime = e1 + e2
        L = self.log
        t = self.t_kill + 0.012
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=1")
        self.auto.stop(t, self.fire_auto)
        t += 0.001
        L.info(t, "Auto-eval thread stopped")
        archive = tiny_targz(self.final_files(self.t_kill))
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(2.5, 4.5)
        L.info(t, f"Final archive: {len(archive)} bytes")
        self.write("evolve_state.json", jdump(self.state))
        t += R.uniform(0.6, 1.4)
        L.info(t, "Work container processes stopped")
        while True:
            t += R.uniform(0.01, 0.05)
            hist = self.judge.history(self.run_id, "score_first", "maximize", at=t)
            pending = [e for e in hist["entries"] if e["status"] == "running"]
            if not pending:
                break
            L.info(t, f"Draining {len(pending)} pending judge evals...")
            self.drain_lines = getattr(self, "drain_lines", 0) + 1
            t += 15.0
        t += R.uniform(0.01, 0.05)
        hist = self.judge.history(self.run_id, "score_first", "maximize", at=t)
        self.write("run_history.json", jdump(hist))
        L.info(t + 0.002, f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
                          f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
                          f"resumes=1, runtime={runtime:.1f}s")
        pod = k8s_name(self.container)
        t += 0.01
        L.info(t, f"Deleting pod {pod}...")
        t += R.uniform(15.5, 17.5)
        L.info(t, f"Pod {pod} deleted.")
        self.write("run_agent.log", self.log.text())
        self.auto.write()
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        fr = self.final_result("claude-code", self.model, hist, hist["agent_submissions"] + hist["auto_submissions"],
                               hist["agent_submissions"], hist["auto_submissions"], True, runtime, len(archive), 1)
        self.runtime = runtime
        return self.truth(index, hist, fr, seg1_start, seg2_start, t_exit)

    def truth(self, index, hist, fr, seg1_start, seg2_start, t_exit) -> dict:
        rounds = []
        best, nb = None, 0
        for info in self.judge.rounds:
            o = info["outcome"]
            s = info["report"]["score"] if info["report"] else None
            new = s is not None and (best is None or s > best)
            if new:
                best, nb = s, nb + 1
            rounds.append({
                "round": info["round"], "kind": info["kind"], "submission_id": info["submission_id"],
                "submit_call_epoch": info.get("submit_call_epoch"), "tool_use_id": info.get("tool_use_id"),
                "post_epoch": info["post_epoch"], "grading_start_epoch": info["grading_start_epoch"],
                "grading_end_epoch": info["grading_end_epoch"], "completed_epoch": info["completed_epoch"],
                "result_seen_epoch": info.get("result_seen_epoch"), "evolve_at": info.get("evolve_at"),
                "tick_log_epoch": info.get("tick_log_epoch"), "elapsed_hours": info["elapsed_hours"],
                "score": s, "score_0_100": info["report"]["score_0_100"] if info["report"] else None,
                "pass_rate": info["report"]["pass_rate"] if info["report"] else 0.0,
                "valid": info["report"]["valid"] if info["report"] else None, "outcome": o["type"],
                "components": ({k: v / 10 for k, v in o["comps"].items()} if o.get("comps") else None),
                "new_best": new, "best_so_far": best, "shell_tool_timeout": info.get("shell_tool_timeout", False),
            })
        index_by_line = index
        moments = []
        for m in self.moments:
            line = dict(self.moment_msg)[m["index"]]
            r = next(x for x in rounds if x["round"] == m["round"])
            moments.append({"round": m["round"], "elapsed_hours": r["elapsed_hours"],
                            "message_line_index": line, "message_byte_offset": index_by_line[line][0],
                            "message_epoch": index_by_line[line][1], "score_before": m["score_before"],
                            "score_after": m["score_after"], "jump": round(m["score_after"] - m["score_before"], 2),
                            "realisation": m["realisation"], "message_text": m["text"]})
        agent_rounds = [r for r in rounds if r["kind"] == "agent"]
        auto_rounds = [r for r in rounds if r["kind"] == "auto"]
        return {
            "segments": [{"start_epoch": q6(seg1_start), "end_epoch": q6(t_exit), "ended_by": "exit (API error 529), auto-resumed",
                          "session_id": self.cl.segments[0]["session_id"]},
                         {"start_epoch": q6(seg2_start), "end_epoch": q6(self.t_kill), "ended_by": "timeout (killed by harness)",
                          "session_id": self.cl.segments[1]["session_id"]}],
            "rounds": rounds,
            "rejected_submissions": self.rejections,
            "sforge_submit_list_calls": self.list_calls,
            "reframing_moments": moments,
            "expected": {
                "best_round": hist["best_round"], "best_score": hist["best_score"],
                "best_pass_rate": hist["best_pass_rate"],
                "best_score_0_100": next(r["score_0_100"] for r in rounds if r["round"] == hist["best_round"]),
                "first_best_score": next(r["score"] for r in rounds if r["new_best"]),
                "agent_rounds": len(agent_rounds), "auto_rounds": len(auto_rounds), "total_rounds": len(rounds),
                "graded_attempts": len(rounds), "new_bests": nb,
                "rounds_without_report": [info["round"] for info in self.judge.rounds if not info["has_report"]],
                "rounds_with_null_score": [r["round"] for r in rounds if r["score"] is None],
                "invalid_rounds": [r["round"] for r in rounds if r["valid"] is False],
                "agent_rounds_without_result_in_transcript": [r["round"] for r in agent_rounds if r["result_seen_epoch"] is None],
                "runtime_seconds": self.runtime, "resume_count": 1, "timed_out": True,
                "detection_component_jump": {"from": 64.0, "to": 89.4, "between_hours": [GW_MOMENTS[1]["h"], 7.2]},
            },
            "transcript": {"format": "claude-code stream-json", "claude_code_version": "2.1.159",
                           "stats": self.cl.stats, "usage_totals": self.cl.totals,
                           "segments_cost_usd": [sg["cost"] for sg in self.cl.segments],
                           "subagent_tool_use_ids": self.subagent_ids,
                           "events": self.cl.events,
                           "user_event_timestamps": "present (container clock = true time + container_clock_skew_seconds)",
                           "assistant_event_timestamps": "absent",
                           "k8s_exit_markers": ["__SFORGE_EXIT__1"]},
            "container_clock_skew_seconds": self.skew,
            "drain_log_lines": getattr(self, "drain_lines", 0),
        }


# ---------------------------------------------------------------------------
# Transcript analysis (for truth files)
# ---------------------------------------------------------------------------


def analyse_claude(data: bytes) -> dict:
    st = {"lines": 0, "json_lines": 0, "noise_lines": [], "events": {}, "init_events": 0, "result_events": [],
          "tool_uses": {}, "tool_results": 0, "tool_results_string_content": 0, "tool_results_list_content": 0,
          "tool_results_is_error": 0, "thinking_blocks": 0, "text_blocks": 0, "stop_hook_feedback": 0,
          "compact_boundary": 0, "subagent_events": 0, "assistant_lines": 0, "unique_message_ids": 0,
          "message_ids_split_over_several_lines": 0, "sforge_submit_calls": 0, "sforge_submit_list_calls": 0,
          "user_string_content_events": 0}
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
            st["result_events"].append({"byte_offset": line_off, "is_error": ev["is_error"],
                                        "total_cost_usd": ev["total_cost_usd"], "duration_ms": ev["duration_ms"]})
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
                    cost += (u["input_tokens"] * pi + u["output_tokens"] * po +
                             u["cache_creation_input_tokens"] * pw + u["cache_read_input_tokens"] * pr) / 1e6
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
        "generated_by": "sample_runs/generate.py", "synthetic": True, "seed": SEED,
        "run_id": run.run_id, "task_id": run.task_id, "path": run.rel(),
        "layout": "grouped (<ip>/<run_id>/<task>)" if run.ip else "flat (<run_id>/<task>)", "ip": run.ip or "",
        "host_utc_offset": run.clock.offset_str, "host_utc_offset_seconds": run.clock.offset_min * 60,
        "backend": run.backend,
        "task": {k: run.task["judge"].get(k) for k in ("parser", "selection", "score_direction", "rescale")},
    }
    truth.update(common)
    truth["agent_output"] = {"bytes": len(data), "lines": len(index),
                             "line_epochs_doc": "[byte_offset_of_line_start, true_epoch_when_written]",
                             "line_epochs": index}
    truth.update(specific)
    name = f"{run.run_id}__{run.task_id}.json"
    (run.root / "_truth").mkdir(exist_ok=True)
    (run.root / "_truth" / name).write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
    return truth


def write_task(root: Path, task: dict):
    (root / "tasks" / f"{task['task_id']}.json").write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n")


def build_gw(root: Path) -> dict:
    task = gw_task()
    write_task(root, task)
    run = GWRun(root, task)
    spec = run.build()
    data = (run.tdir / "agent_output.txt").read_bytes()
    spec["transcript"]["analysis"] = analyse_claude(data)
    spec["transcript"]["events"] = [e for e in spec["transcript"]["events"] if e["epoch"] <= run.t_kill]
    for k in ("stats",):
        spec["transcript"].pop(k, None)
    spec["transcript"].pop("usage_totals", None)
    common = {"agent": "claude-code", "model": run.model, "started_at_epoch": run.started,
              "exercises": ["12-hour score task (structured_json, score_first, linear rescale)",
                            "k8s backend (pod names, __SFORGE_EXIT__ marker, container clock skew)",
                            "auto-resume after an API error (second init in the same file)",
                            "cooldown rejection, --list, shell-tool timeout, drain at the end"]}
    return write_truth(run, common, spec, run.index)


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------

BENCHMARK_YAML = """# synthetic benchmark metadata so that sforge.harness.task_spec can load these tasks
name: edgebench
base_images:
  python311_sci:
    image: python:3.11-slim
    setup_cmds:
      - pip install numpy scipy healpy pyyaml
  python311:
    image: python:3.11-slim
    setup_cmds:
      - pip install pytest
"""

BUILDERS = []   # filled below: (name, function(root) -> truth)


def _clear(p: Path, rel: str) -> None:
    """Delete ``p`` (a file or a tree) except the paths in KEEP (relative to this folder)."""
    if rel in KEEP or not (p.exists() or p.is_symlink()):
        return
    if p.is_dir() and not p.is_symlink():
        if any(k.startswith(rel + "/") for k in KEEP):
            for child in p.iterdir():
                _clear(child, f"{rel}/{child.name}")
        else:
            shutil.rmtree(p)
    else:
        p.unlink()


def main(argv=None) -> int:
    import sys
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--moment-runs":   # --moment-runs DIR SEED... [--control SEED...]
        out, control = Path(argv[1]), False
        for a in argv[2:]:
            if a == "--control":
                control = True
                continue
            build_moment_run(out, int(a), control)
        return 0
    only = set(argv)
    for name in OWNED:
        _clear(HERE / name, name)
    (HERE / "tasks").mkdir(exist_ok=True)
    (HERE / "tasks" / "BENCHMARK.yaml").write_text(BENCHMARK_YAML)
    truths = []
    for name, fn in BUILDERS:
        if only and name not in only:
            continue
        truths.append(fn(HERE))
    if not only:
        write_readme(HERE, truths)
    return 0


# ---------------------------------------------------------------------------
# Run 2: 3-hour pass-rate task (pytest_v, pass_rate_first), docker, no internet
# ---------------------------------------------------------------------------

GL_CWD = "/workspace/gitlet"
GL_TESTS = {
    "test_init": ["test_init_creates_gitlet_dir", "test_init_twice_fails", "test_init_initial_commit",
                  "test_init_initial_commit_timestamp", "test_init_master_branch", "test_init_no_staged_files"],
    "test_add": ["test_add_new_file", "test_add_missing_file", "test_add_identical_file_unstages",
                 "test_add_after_rm", "test_add_binary_file", "test_add_nested_path", "test_add_overwrites_stage",
                 "test_add_empty_file"],
    "test_commit": ["test_commit_basic", "test_commit_empty_message", "test_commit_nothing_staged",
                    "test_commit_parent_pointer", "test_commit_blob_dedup", "test_commit_rm_tracked",
                    "test_commit_hash_stable", "test_commit_serialization_roundtrip", "test_commit_many_files",
                    "test_commit_message_unicode"],
    "test_log": ["test_log_linear", "test_log_format", "test_global_log_all_commits", "test_find_by_message",
                 "test_find_no_match", "test_log_after_merge_shows_merged"],
    "test_checkout": ["test_checkout_file_head", "test_checkout_file_commit", "test_checkout_short_id",
                      "test_checkout_branch", "test_checkout_untracked_in_way", "test_checkout_same_branch",
                      "test_checkout_missing_branch", "test_reset_to_commit"],
    "test_branch": ["test_branch_create", "test_branch_duplicate", "test_rm_branch", "test_rm_current_branch",
                    "test_branch_pointer_moves", "test_status_lists_branches", "test_branch_from_detached",
                    "test_branch_names_sorted"],
    "test_merge": ["test_merge_fast_forward", "test_merge_ancestor", "test_merge_no_conflict",
                   "test_merge_conflict_markers", "test_merge_conflict_message", "test_merge_untracked_in_way",
                   "test_merge_uncommitted_changes", "test_merge_split_point_criss_cross",
                   "test_merge_deleted_in_other", "test_merge_self"],
    "test_status": ["test_status_clean", "test_status_staged", "test_status_removed",
                    "test_status_modified_not_staged"],
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
        "judge": {"eval_cmd": "cd /workspace/gitlet && python -m pytest -v tests/ -p no:cacheprovider",
                  "eval_timeout": 1800, "parser": "pytest_v", "selection": "pass_rate_first",
                  "image_tag": "6b2a91d04e7f"},
    }


def gl_unlock(R: random.Random) -> dict:
    """Elapsed hour at which each test starts to pass (some never do)."""
    order = {"test_init": 0.15, "test_add": 0.35, "test_commit": 0.6, "test_log": 0.9, "test_status": 1.0,
             "test_checkout": 1.3, "test_branch": 1.5, "test_merge": 2.0, "test_remote": 2.45}
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
    L = ["+ echo '>>>>> Start Test Output'", ">>>>> Start Test Output", "+ cd /workspace/gitlet",
         "+ python -m pytest -v tests/ -p no:cacheprovider",
         "============================= test session starts ==============================",
         "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0 -- /usr/local/bin/python",
         "rootdir: /workspace/gitlet", "collecting ... collected 64 items", ""]
    n = len(statuses)
    for i, (name, st) in enumerate(statuses):
        if hang_after is not None and i >= hang_after:
            L.append(f"{name} ")
            return "\n".join(L)   # killed by the eval timeout: no END marker
        pct = f"[{int(100 * (i + 1) / n):3d}%]"
        L.append(f"{name} {st}".ljust(72) + " " + pct)
    bad = [(nm, st) for nm, st in statuses if st != "PASSED"]
    if bad:
        L += ["", "==================================== ERRORS ====================================" if any(
            st == "ERROR" for _, st in bad) else "=================================== FAILURES ==================================="]
        for nm, st in bad[:4]:
            short = nm.split("::")[1]
            L += [f"_{'_' * 20} {'ERROR at setup of ' if st == 'ERROR' else ''}{short} {'_' * 20}", "",
                  "    def " + short + "(repo):" if st == "FAILED" else "    @pytest.fixture",
                  ">       assert run(repo, 'status') == expected" if st == "FAILED" else
                  ">       from gitlet.remote import Remote",
                  "E       AssertionError: output mismatch" if st == "FAILED" else
                  "E       ModuleNotFoundError: No module named 'gitlet.remote'", ""]
        L.append("=========================== short test summary info ============================")
        for nm, st in bad:
            L.append(f"{st} {nm} - " + ("AssertionError: output mismatch" if st == "FAILED"
                                        else "ModuleNotFoundError: No module named 'gitlet.remote'"))
    np_ = sum(1 for _, s in statuses if s == "PASSED")
    nf = sum(1 for _, s in statuses if s == "FAILED")
    ne = sum(1 for _, s in statuses if s == "ERROR")
    parts = ([f"{nf} failed"] if nf else []) + [f"{np_} passed"] + ([f"{ne} errors"] if ne else [])
    summ = f" {', '.join(parts)} in {runtime - 0.8:.2f}s "
    L.append(summ.center(80, "="))
    L += ["+ EXIT_CODE=" + ("1" if bad else "0"), "+ echo '>>>>> End Test Output'", ">>>>> End Test Output",
          "+ echo 'Exit code: " + ("1" if bad else "0") + "'", "Exit code: " + ("1" if bad else "0")]
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
        self.failed_round_at = 7          # agent-7: judge could not create its container
        self.unlock = gl_unlock(self.R)

    def h(self, t):
        return (t - self.started) / 3600.0

    def grade(self, rid, kind, t_post, *, hang=False):
        R = self.R
        h = self.h(t_post)
        size = int(5200 + 900 * min(h, 3.0) + R.randint(-60, 60))
        if kind == "agent" and self.agent_n == self.failed_round_at:
            sid = None
            info = self.judge.grade(rid, kind, t_post, size, 0.0, None, None, allowed_files=[],
                                    failure="PLACEHOLDER")
            sid = info["submission_id"]
            log = (self.tdir / "submissions" / rid / "run_instance.log")
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
            info = self.judge.grade(rid, kind, t_post, size, runtime, text, graded, allowed_files=self.files(),
                                    timed_out=True, nan_score=True)
            info["outcome"] = "eval timed out (hung test); report carries a NaN score token"
            return info
        runtime = R.uniform(9.0, 19.0)
        info = self.judge.grade(rid, kind, t_post, size, runtime, gl_pytest_output(st, runtime), gl_grade(st),
                                allowed_files=self.files())
        info["outcome"] = "graded"
        return info

    def files(self):
        base = ["gitlet/__init__.py", "gitlet/__main__.py", "gitlet/objects.py", "gitlet/repo.py",
                "gitlet/commands.py", "gitlet/merge.py"]
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
            out.append(("thinking", self.RC.choice([
                "The failing names point at the merge split-point logic; criss-cross histories need a proper LCA.",
                "Status output ordering must be lexicographic; check the spec again.",
                "Commit ids must be stable across runs: serialize with sorted keys and no timestamps in floats.",
                "Remote tests error at setup — the module gitlet.remote does not exist yet.",
                "Keep the package importable at all times because of the periodic auto-evaluation."])))
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
        summ = f"{nf} failed, {np_} passed in {R.uniform(0.4, 3.0):.2f}s" if nf else f"{np_} passed in {R.uniform(0.4, 3.0):.2f}s"
        out = "\n".join(lines + ["=" * 10 + f" {summ} " + "=" * 10])
        err = nf > 0
        content = ("Exit code 1\n" + out) if err else out
        self.step("Bash", {"command": f"cd {GL_CWD} && python -m pytest -v tests/{sub}.py -x -q",
                           "description": f"Run {sub} locally"}, content, exec_s=(3.0, 30.0), is_error=err,
                  pre=self.pre(), tur=("Error: " + content) if err else bash_tur(out))

    def action(self):
        R = self.RC
        k = R.choices(["read", "edit", "pytest", "write"], [30, 40, 25, 5])[0]
        mod = R.choice(self.files())
        path = f"{GL_CWD}/{mod}"
        if k == "read":
            code = [f"def cmd_{w}(repo, *args):" if i % 6 == 0 else f"    {w}_ids = sorted(repo.{w}())"
                    for i, w in enumerate(R.sample(["add", "commit", "log", "status", "merge", "checkout",
                                                    "branch", "reset", "find", "rm"], 6))]
            start = R.randint(1, 120)
            self.step("Read", {"file_path": path, "offset": start, "limit": 40}, read_result(code, start),
                      pre=self.pre(), tur={"type": "text", "file": {"filePath": path, "content": "\n".join(code),
                                                                   "numLines": len(code), "startLine": start,
                                                                   "totalLines": start + 60}})
        elif k == "edit":
            old = f"    return {R.choice(['None', 'ids', 'sorted(ids)', 'msg', 'split'])}"
            self.step("Edit", {"file_path": path, "old_string": old, "new_string": old + "  # spec 4.2"},
                      f"The file {path} has been updated successfully.", pre=self.pre())
        elif k == "pytest":
            self.local_pytest()
        else:
            content = "\n".join([f"def helper_{i}(repo):\n    return repo.head()" for i in range(5)])
            self.step("Write", {"file_path": path, "content": content}, f"File created successfully at: {path}",
                      pre=self.pre(), tur={"type": "create", "filePath": path, "content": content})

    def submit(self, *, hang=False):
        cl, R = self.cl, self.R
        tid = cl.api(self.pre(0.1) + [("tool", "Bash", {"command": "sforge-submit",
                                                       "description": "Submit for evaluation", "timeout": 600000})])[0]
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
        content = "\n".join(submit_header_lines(size) + submit_round_lines(rid, None)
                            + submit_result_lines(rid, rep)).strip("\n")
        cl.tool_result(tid, content, dt=t_seen + R.uniform(0.1, 0.3) - cl.t, tur=bash_tur(content))
        if rep["total_tests"] == 0:
            self.pending_text = (f"{rid} came back with no results at all (0 tests, no summary) — that looks like a "
                                 "judge-side failure, not my code. The local suite passes the same tests as before; "
                                 "I'll keep going and resubmit after the next change.")
        else:
            self.pending_text = (f"{rid}: {rep['passed']}/{rep['total_tests']} passing. "
                                 + self.RC.choice(["Next: the merge conflict cases.", "Next: status ordering.",
                                                   "Next: checkout edge cases.", "Next: remote commands.",
                                                   "Next: criss-cross split points."]))
        return info

    def loop(self, seg_end):
        while not self.killed and self.cl.t < min(seg_end, self.t_kill):
            h = self.h(self.cl.t)
            if not self.stop_done and h > 2.2:
                self.stop_done = True
                self.cl.api(self.pre(0.0) + [("text", "All planned commands are implemented and the suite is at a "
                                                      "good pass rate. Stopping here.")])
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
        cfg = run_config(self.task_id, "claude-code", self.model, self.timeout, self.interval, False,
                         "http://host.docker.internal:8080")
        self.write_configs(cfg)
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], False)
        t0 = epoch_of(2026, 5, 6, 14, 20, 7, 120) + 0.512
        stale = "SFORGE_" + self.ids.hexn(12)
        s = self.setup(t0, agent="claude-code", install_cmds=[NODE_INSTALL_CMD,
                       "sudo -E npm install -g @anthropic-ai/claude-code@2.1.159"],
                       install_outs=["", NPM_OUT_CLAUDE.format(s=19)], internet=False, stale_chain=stale,
                       eval_interval=self.interval, prompt=prompt)
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
        self.step("Bash", {"command": f"cd {GL_CWD} && ls -R | head -40 && wc -l SPEC.md",
                           "description": "Survey repository"},
                  "gitlet\ngitlet/__init__.py\ngitlet/__main__.py\nSPEC.md\ntests\n412 SPEC.md", pre=self.pre(0.0),
                  tur=bash_tur("gitlet\ngitlet/__init__.py\ngitlet/__main__.py\nSPEC.md\ntests\n412 SPEC.md"))
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
        L.info(t + 0.002, f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
                          f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
                          f"resumes=1, runtime={runtime:.1f}s")
        t += 0.01
        L.info(t, f"Network isolation cleaned up: chain={self.chain}")
        t += 0.01
        L.info(t, f"Stopping container {self.container}...")
        t += R.uniform(10.1, 10.5)
        L.info(t, f"Removing container {self.container}...")
        t += R.uniform(0.3, 0.8)
        cid = self.ids.hexn(64)
        L.error(t, f"Failed to remove container {self.container}: 409 Client Error for "
                   f"http+docker://localhost/v1.47/containers/{cid}?v=False&link=False&force=True: Conflict "
                   f"(\"removal of container {cid} is already in progress\")\n" + DOCKER_RM_TRACEBACK.format(cid=cid))
        self.t_history = t
        self.write("run_agent.log", self.log.text())
        self.auto.write()
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        self.final_result("claude-code", self.model, hist, hist["agent_submissions"] + hist["auto_submissions"],
                          hist["agent_submissions"], hist["auto_submissions"], True, runtime, len(archive), 1)
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
        log.info(t + 1.52 + runtime, f"Result: {rep['passed']}/{rep['total_tests']} passed (pass_rate={rep['pass_rate']:.2%})")
        (d / "run_instance.log").write_text(log.text())
        (d / "eval.sh").write_text(eval_script(self.task["judge"]["eval_cmd"]))
        (d / "test_output.txt").write_text(gl_pytest_output(st, runtime))
        (d / "report.json").write_text(jdump(rep))

    def truth(self) -> dict:
        rounds = []
        for info in self.judge.rounds:
            rep = info.get("report")
            rounds.append({
                "round": info["round"], "kind": info["kind"], "submission_id": info["submission_id"],
                "submit_call_epoch": info.get("submit_call_epoch"), "tool_use_id": info.get("tool_use_id"),
                "post_epoch": info["post_epoch"], "grading_start_epoch": info["grading_start_epoch"],
                "grading_end_epoch": info["grading_end_epoch"], "completed_epoch": info["completed_epoch"],
                "result_seen_epoch": info.get("result_seen_epoch"), "evolve_at": info.get("evolve_at"),
                "tick_log_epoch": info.get("tick_log_epoch"), "elapsed_hours": round(self.h(info["grading_start_epoch"]), 4),
                "has_report": info["has_report"], "pass_rate": rep["pass_rate"] if rep else 0.0,
                "passed": rep["passed"] if rep else 0, "total_tests": rep["total_tests"] if rep else 0,
                "score": ("NaN" if rep and isinstance(rep["score"], float) and math.isnan(rep["score"]) else
                          (rep["score"] if rep else None)),
                "timed_out": rep["timed_out"] if rep else False, "outcome": info["outcome"],
                "report_written_after_run_end": info["grading_end_epoch"] > self.t_history,
            })
        disk = [r["history"] for r in self.judge.rounds]
        best_disk = select_best(disk, "maximize", "pass_rate_first")
        return {
            "segments": [{"start_epoch": q6(a), "end_epoch": q6(b), "ended_by": how, "session_id": sg["session_id"]}
                         for (a, b), how, sg in zip(self.seg_times, ["crash (Node heap OOM, no result event), auto-resumed",
                                                                      "timeout (killed by harness)"], self.cl.segments)],
            "rounds": rounds,
            "expected": {
                "best_round": self.hist["best_round"], "best_pass_rate": self.hist["best_pass_rate"],
                "best_round_recomputed_from_disk": best_disk["best_round"],
                "agent_rounds": sum(1 for r in rounds if r["kind"] == "agent"),
                "auto_rounds": sum(1 for r in rounds if r["kind"] == "auto"), "total_rounds": len(rounds),
                "rounds_without_report": [r["round"] for r in rounds if not r["has_report"]],
                "nan_score_rounds": [r["round"] for r in rounds if r["score"] == "NaN"],
                "rounds_running_in_run_history": [e["round"] for e in self.hist["entries"] if e["status"] == "running"],
                "manual_rounds_to_ignore": ["manual-1"], "runtime_seconds": self.runtime, "resume_count": 1,
                "timed_out": True, "infra_error_lines": 1, "drain_log_lines": self.drain, "drain_timed_out": True,
            },
        }


def build_gitlet(root: Path) -> dict:
    task = gl_task()
    write_task(root, task)
    run = GitletRun(root, task)
    run.build()
    spec = run.truth()
    data = (run.tdir / "agent_output.txt").read_bytes()
    spec["transcript"] = {"format": "claude-code stream-json", "claude_code_version": "2.1.159",
                          "analysis": analyse_claude(data),
                          "user_event_timestamps": "present (container clock == host clock, skew 0)",
                          "assistant_event_timestamps": "absent"}
    common = {"agent": "claude-code", "model": run.model, "started_at_epoch": run.started,
              "exercises": ["pass-rate task (pytest_v, pass_rate_first) with per-test results",
                            "auto-resume after a Node OOM crash (noise lines, no result event, second init)",
                            "infra ERROR + traceback in run_agent.log (docker container removal)",
                            "round folder without report.json (judge container could not be created)",
                            "report.json with a NaN score token and timed_out=true, written after the run ended",
                            "drain timed out: run_history.json keeps a running entry",
                            "internet disabled (iptables chain lines, --disallowedTools)",
                            "manual-1 folder from a later `sforge eval` (to be ignored)"]}
    return write_truth(run, common, spec, run.index)


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
        "judge": {"eval_cmd": ("cd /workspace/vrp && python /opt/judge/run_cases.py --solver 'python solve.py' "
                               "--cases /opt/judge/cases --time-limit 20"),
                  "eval_timeout": 600, "parser": "score_sum", "score_direction": "minimize",
                  "selection": "score_first",
                  "rescale": {"kind": "piecewise_min", "baseline": 41000.0, "rank30": 33500.0, "rank1": 29800.0,
                              "super_anchor": 28900.0},
                  "image_tag": "1e4d7b9c0a36"},
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
        self.lines(f"OpenAI Codex v{version} (research preview)\n--------\nworkdir: {workdir}\nmodel: {model}\n"
                   f"provider: openai\napproval: never\nsandbox: danger-full-access\nreasoning effort: high\n"
                   f"reasoning summaries: auto\nsession id: {session}\n--------")
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
        files = [("solve.py", "import sys\nfrom solver.search import solve\n\nsolve(sys.argv[1], sys.argv[2])\n"),
                 ("solver/__init__.py", ""),
                 ("solver/search.py", f"# solver version {self.version}\n" + "\n".join(
                     f"PARAM_{i} = {1 + (self.version * 7 + i) % 13}" for i in range(8 + self.version % 5)) +
                  "\n\ndef solve(instance, out):\n    routes = construct(instance)\n"
                  "    routes = local_search(routes, rounds=PARAM_0 * 100)\n    write(out, routes)\n")]
        if self.version >= 4:
            files.append(("solver/alns.py", "# adaptive large neighbourhood search\n" + "\n".join(
                f"def destroy_{i}(routes, k):\n    return routes[:-k]" for i in range(self.version))))
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
        text = "\n".join(["+ echo '>>>>> Start Test Output'", ">>>>> Start Test Output", "+ cd /workspace/vrp",
                          "+ python /opt/judge/run_cases.py --solver 'python solve.py' --cases /opt/judge/cases "
                          "--time-limit 20"] + body +
                         [f"TOTAL_SCORE {jq_num(total)}", f"CASES_OK {ok}", f"CASES_TOTAL {len(rows)}",
                          "+ EXIT_CODE=0", "+ echo '>>>>> End Test Output'", ">>>>> End Test Output",
                          "+ echo 'Exit code: 0'", "Exit code: 0"]) + "\n"
        res = [{"name": f"case_{cid}", "status": "PASSED"} if st == "OK" else
               {"name": f"case_{cid}_{st}", "status": "FAILED"} for cid, st, _ in rows]
        graded = grade_legacy(res, score=total)
        data = tiny_targz(self.archive())
        info = self.judge.grade(rid, kind, t_post, len(data), R.uniform(28.0, 61.0), text, graded,
                                allowed_files=[f for f, _ in self.archive()], archive_bytes=data)
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
                f = R.choice(["solver/search.py", "solve.py", "check.py", "solver/alns.py" if self.version >= 4 else "solver/search.py"])
                out = "\n".join(f"{i:4d}  " + R.choice(["routes = construct(instance)", "def two_opt(route):",
                                                        "    best = cost(route)", "for v in vehicles:",
                                                        "    if load + d > cap: break", "return routes"])
                                for i in range(1, R.randint(8, 30)))
                co.exec(f"nl -ba {f} | sed -n '1,80p'", out, R.uniform(0.01, 0.05), dt=R.uniform(3.0, 12.0))
            elif k == "patch":
                self.version += 1 if R.random() < 0.35 else 0
                co.codex(R.choice(["Tightening the insertion heuristic: evaluate only the 12 nearest routes.",
                                   "Adding an or-opt move to the local search.",
                                   "Caching pairwise distances as a flat array; the solver was spending 30% in "
                                   "dict lookups.", "Relaxing time-window slack checks to O(1) with forward slack.",
                                   "Switching the acceptance rule to simulated annealing with a short schedule."]),
                         R.uniform(6.0, 25.0))
                co.exec("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: solver/search.py\n@@\n-    rounds=200\n"
                        "+    rounds=400\n*** End Patch\nEOF", "Success. Updated the following files:\nM solver/search.py",
                        R.uniform(0.02, 0.1), dt=R.uniform(2.0, 8.0))
            elif k == "check":
                inst = R.choice(["c101", "r204", "rc108", "c208", "r112"])
                if R.random() < 0.08:
                    co.exec(f"python solve.py instances/{inst}.txt /tmp/{inst}.out && python check.py instances/{inst}.txt /tmp/{inst}.out",
                            "Traceback (most recent call last):\n  File \"/workspace/vrp/solver/search.py\", line 88, in "
                            "two_opt\n    a, b = route[i], route[i + 1]\nIndexError: list index out of range",
                            R.uniform(1.0, 4.0), code=1, dt=R.uniform(3.0, 9.0))
                else:
                    co.exec(f"python solve.py instances/{inst}.txt /tmp/{inst}.out && python check.py instances/{inst}.txt /tmp/{inst}.out",
                            f"feasible: yes\nvehicles: {R.randint(9, 19)}\ndistance: {R.uniform(800, 1900):.1f}\n"
                            f"time: {R.uniform(4.0, 19.0):.1f}s", R.uniform(5.0, 20.0), dt=R.uniform(3.0, 9.0))
            else:
                co.thinking(R.choice(["Comparing construction heuristics", "Checking time-window feasibility",
                                      "Planning the next improvement", "Estimating runtime headroom"]),
                            R.uniform(5.0, 20.0))
            if co.t > self.t_kill:
                self.killed = True
                return

    def build(self):
        R = self.R
        task = self.task
        cfg = run_config(self.task_id, "codex", self.model, self.timeout, self.interval, True,
                         "http://host.docker.internal:8080", max_submissions=self.max_subs)
        self.write_configs(cfg)
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], True, self.max_subs, None)
        t0 = epoch_of(2026, 4, 2, 13, 15, 2, -240) + 0.271
        s = self.setup(t0, agent="codex", install_cmds=[NODE_INSTALL_CMD, "sudo -E npm install -g @openai/codex@0.130.0",
                                                        CODEX_CONFIG_CMD],
                       install_outs=["", NPM_OUT_CODEX.format(s=9), ""], stale_chain="SFORGE_" + self.ids.hexn(12),
                       eval_interval=self.interval, prompt=prompt)
        self.started = s["started_at"]
        self.judge = Judge(task, self.clock, "docker", self.ids, R, self.tdir)
        self.auto = AutoEval(self, s["t_ae"], self.interval, extract=(0.6, 1.4))
        self.out = TextFile()
        co = self.co = CodexOut(self.out)
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {CODEX_RUN[:200]}... (timeout={self.timeout:.0f}s)")
        seg1 = t + 0.03
        co.t = seg1 + R.uniform(0.4, 0.9)
        sess = "019d" + self.ids.hexn(4) + "-" + self.ids.hexn(4) + "-7" + self.ids.hexn(3) + "-" + self.ids.hexn(4) + "-" + self.ids.hexn(12)
        co.header("0.130.0", VRP_CWD, self.model, sess, first=True)
        co.user(prompt.rstrip("\n"))
        co.thinking("Inspecting the workspace", R.uniform(3.0, 8.0))
        co.codex("I'll look at the instance format and the local checker first.", R.uniform(2.0, 5.0))
        co.exec("ls -la && head -20 instances/c101.txt && sed -n '1,60p' check.py",
                "total 28\ndrwxr-xr-x 1 agent agent 4096 .\n-rw-r--r-- 1 agent agent 2710 check.py\n"
                "drwxr-xr-x 1 agent agent 4096 instances\n-rw-r--r-- 1 agent agent  183 solve.py\n"
                "drwxr-xr-x 1 agent agent 4096 solver\nC101\nVEHICLE NUMBER CAPACITY\n  25 200\nCUSTOMER ...",
                0.034, dt=R.uniform(1.0, 3.0))
        self.work(6)
        co.codex("A savings-based construction plus 2-opt is in place; submitting a baseline.", R.uniform(3.0, 9.0))
        self.submit()
        plan = [0.24, 0.36, 0.5, 0.63, 0.78, 1.08, 1.22, 1.36, 1.5, 1.64, 1.77, 1.86]   # last one is rejected
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
                    co.codex("The submission budget is used up (12/12). From here on I can only improve locally; "
                             "the auto-evaluation still snapshots the files, so I keep them runnable.",
                             R.uniform(3.0, 8.0))
                elif r and self.last:
                    rep = self.last["api_report"]
                    if self.last["outcome"].startswith("broken"):
                        msg = (f"{self.last['round']} has three WA cases: the new route-merge step can violate "
                               "capacity when two routes share a depot slot. Reverting the merge guard.")
                    else:
                        msg = (f"{self.last['round']}: total {jq_num(rep['score'])}, "
                               f"{self.max_subs - self.agent_n} submissions left. "
                               + R.choice(["Keeping it.", "Not better than the best; reverting.", "Small gain.",
                                           "Runtime is fine, quality is the bottleneck."]))
                    co.codex(msg, R.uniform(3.0, 8.0))

        follow(plan, seg1_end)
        while co.t < seg1_end:
            self.work(1)
        co.codex("I have a working ALNS solver with a stable score and several submissions left. Summary of the "
                 "current state: construction by savings, ALNS with 4 destroy operators, 2-opt/or-opt repair.",
                 R.uniform(4.0, 9.0))
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
        L.info(t + 0.002, f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
                          f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
                          f"resumes=1, runtime={runtime:.1f}s")
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
        self.final_result("codex", self.model, hist, hist["agent_submissions"] + hist["auto_submissions"],
                          hist["agent_submissions"], hist["auto_submissions"], True, runtime, len(archive), 1)
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
            rounds.append({
                "round": info["round"], "kind": info["kind"], "submission_id": info["submission_id"],
                "submit_call_epoch": info.get("submit_call_epoch"), "post_epoch": info["post_epoch"],
                "grading_start_epoch": info["grading_start_epoch"], "grading_end_epoch": info["grading_end_epoch"],
                "completed_epoch": info["completed_epoch"], "result_seen_epoch": info.get("result_seen_epoch"),
                "evolve_at": info.get("evolve_at"), "tick_log_epoch": info.get("tick_log_epoch"),
                "elapsed_hours": round(self.h(info["grading_start_epoch"]), 4), "score": s,
                "score_0_100": rep["score_0_100"], "pass_rate": rep["pass_rate"], "new_best": new,
                "best_so_far": best, "archive_bytes": info["archive_size"], "outcome": info["outcome"]})
        return {
            "segments": [{"start_epoch": q6(a), "end_epoch": q6(b), "ended_by": how} for (a, b), how in
                         zip(self.seg_times, ["exit (turn finished), auto-resumed with `codex exec resume --last`",
                                              "timeout (killed by harness)"])],
            "rounds": rounds, "rejected_submissions": self.rejections, "sforge_submit_list_calls": [self.list_epoch],
            "expected": {"best_round": self.hist["best_round"], "best_score": self.hist["best_score"],
                         "best_pass_rate": self.hist["best_pass_rate"],
                         "agent_rounds": sum(1 for r in rounds if r["kind"] == "agent"),
                         "auto_rounds": sum(1 for r in rounds if r["kind"] == "auto"), "total_rounds": len(rounds),
                         "new_bests": nb, "score_direction": "minimize", "max_submissions": self.max_subs,
                         "runtime_seconds": self.runtime, "resume_count": 1, "timed_out": True},
            "transcript": {"format": "codex exec human-readable text (codex 0.130.0)", "counts": self.co.counts,
                           "timestamps": "none"},
        }


def build_vrp(root: Path) -> dict:
    task = vrp_task()
    write_task(root, task)
    run = VRPRun(root, task)
    run.build()
    common = {"agent": "codex", "model": run.model, "started_at_epoch": run.started,
              "exercises": ["Codex human-readable transcript (two headers after a resume)",
                            "3-level layout runs/<ip>/<run_id>/<task>/",
                            "score_sum parser, minimize, piecewise_min rescale",
                            "max_submissions=12: '(remaining submissions: N)' and SUBMISSION LIMIT REACHED",
                            "real (tiny) submission.tar.gz files whose sizes match the logs",
                            "host UTC offset -04:00"]}
    return write_truth(run, common, run.truth(), run.index)


# ---------------------------------------------------------------------------
# Run 4: game mode (HTTP text adventure), claude-code-2.1.214 + glm-5.1
# ---------------------------------------------------------------------------

GAME_CWD = "/workspace/game"
GAME_QUERY = """# Lantern Cove (synthetic interactive-fiction task)

Play the text adventure *Lantern Cove* through the game API and reach the highest score you can
(maximum 350). Keep notes of the map and puzzles in `notes.md`; only the game score counts."""
GAME_ROOMS = ["Harbour Steps", "Net Loft", "Chandlery", "Tide Cave", "Lighthouse Base", "Lamp Room", "Cliff Path",
              "Smugglers' Passage", "Chapel Ruins", "Flooded Crypt", "Keeper's Cottage", "Boathouse"]
GAME_ACTIONS = ["look", "north", "south", "east", "west", "up", "down", "take lantern", "light lantern", "open hatch",
                "read logbook", "take rope", "tie rope to post", "examine nets", "inventory", "take brass key",
                "unlock door with brass key", "push barrel", "take oilcan", "oil hinge", "pull lever", "wait",
                "climb ladder", "search rubble", "take silver bell", "ring bell", "give coin to ferryman", "swim"]


def game_task() -> dict:
    return {
        "task_id": "lantern_cove_adventure",
        "name": "Lantern Cove text adventure",
        "base_image": "python311",
        "platform": "linux/amd64",
        "cwd": GAME_CWD,
        "submit_paths": ["notes.md"],
        "internet": True,
        "game_mode": True,
        "category": "Interactive Fiction",
        "work": {"agent_query": GAME_QUERY, "image_tag": "e3b1d9f0a4c8"},
        "judge": {"eval_cmd": "true", "eval_timeout": 60, "parser": "structured_json",
                  "score_direction": "maximize", "selection": "pass_rate_first",
                  "game_server_cmd": "python /opt/game/server.py --port 8000 --story /opt/game/lantern_cove.z5",
                  "image_tag": "7f0c2a5e9b13"},
    }


GAME_PLAN = [  # start_h, moves, final, peak, ending
    (0.06, 22, 15, 15, "closed"), (0.25, 38, 35, 40, "done"), (0.52, 55, 80, 80, "closed"),
    (0.82, 80, 135, 135, "done"), (1.16, 30, 60, 70, "closed"), (1.36, None, None, None, "in_flight")]


class GameRun(RunBase):
    RUN_ID = "glm51-game-20260420"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(0), "docker", SEED + 404)
        self.model = "glm-5.1"
        self.timeout = 5400
        self.sessions: list[dict] = []

    def h(self, t):
        return (t - self.started) / 3600.0

    def make_steps(self, n, final, peak, done, R):
        """Score path reaching `peak` then ending at `final`."""
        steps, score, pk = [], 0, 0
        gains = sorted(R.sample(range(2, n - 2), 6))
        inc = [peak // 6] * 5 + [peak - 5 * (peak // 6)]
        room = R.choice(GAME_ROOMS)
        for m in range(1, n + 1):
            a = R.choice(GAME_ACTIONS)
            if a in ("north", "south", "east", "west", "up", "down", "climb ladder"):
                room = R.choice(GAME_ROOMS)
            if gains and m == gains[0]:
                score += inc.pop(0)
                gains.pop(0)
                obs = f"{room}\nDone. [Your score has just gone up.]"
            else:
                obs = f"{room}\n" + R.choice(["You see nothing special.", "The wind howls through the gaps.",
                                              "It's too dark to see much.", "Taken.", "Nothing happens.",
                                              "You can't go that way.", "The lantern flickers.",
                                              "Water drips from the ceiling."])
            if m == n and final < score:
                score = final
                obs = f"{room}\nThe floor gives way beneath you.\n\n    *** You have died ***"
            pk = max(pk, score)
            steps.append({"move": m, "action": a, "observation": obs, "score": score, "peak_score": pk,
                          "max_score": 350, "done": bool(done and m == n)})
        return steps

    def build(self):
        R, RC = self.R, self.RC
        task = self.task
        extra = {"ANTHROPIC_DEFAULT_OPUS_MODEL": "glm-5.1", "ANTHROPIC_DEFAULT_SONNET_MODEL": "glm-5.1",
                 "ANTHROPIC_DEFAULT_HAIKU_MODEL": "glm-5.1", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000",
                 "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "80"}
        cfg = run_config(self.task_id, "claude-code-2.1.214", self.model, self.timeout, 1800, True,
                         "http://host.docker.internal:8080", api_base_url="https://llm-gateway.example.internal/anthropic",
                         api_key=True, extra_env=extra)
        self.write_configs(cfg)
        prompt = game_prompt(task["work"]["agent_query"])
        t0 = epoch_of(2026, 4, 20, 6, 40, 11, 0) + 0.094
        s = self.setup(t0, agent="claude-code-2.1.214", game=True,
                       install_cmds=[NODE_INSTALL_CMD, "sudo -E npm install -g @anthropic-ai/claude-code@2.1.214"],
                       install_outs=["", NPM_OUT_CLAUDE.format(s=26)], stale_chain="SFORGE_" + self.ids.hexn(12),
                       prompt=prompt)
        self.started = s["started_at"]
        self.out = TextFile()
        cl = self.cl = Claude(self.ids, R, self.out, model=self.model, version="2.1.214", cwd=GAME_CWD,
                              tools=[t if t != "Task" else "Agent" for t in CLAUDE_TOOLS], asst_ts=True,
                              api_key_source="none", subagent_tool="Agent")
        cmd = (f"{CLAUDE_RUN} --model {self.model} --exclude-dynamic-system-prompt-sections"
               """ --settings '{"includeGitInstructions":false}'""")
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {cmd[:200]}... (timeout={self.timeout:.0f}s)")
        seg = t + 0.03
        t_kill = seg + self.timeout + 0.25
        cl.start_segment(seg, self.ids.uuid(), tokens_of(prompt))
        cl.init(R.uniform(2.0, 3.0))

        def step(tool, inp, res, dt, pre=(), is_error=False, latency=(3.0, 11.0)):
            tid = cl.api(list(pre) + [("tool", tool, inp)], latency=latency)[0]
            cl.tool_result(tid, res, dt=dt, is_error=is_error, tur=bash_tur(res) if tool == "Bash" else None)
            return tid

        play = ("import json, os, sys, urllib.request\nURL = os.environ['GAME_SERVER_URL']\n\n"
                "def post(path, body):\n    req = urllib.request.Request(URL + path, json.dumps(body).encode(), "
                "{'Content-Type': 'application/json'})\n    return json.load(urllib.request.urlopen(req))\n\n"
                "if sys.argv[1] == 'new':\n    print(json.dumps(post('/new', {})))\nelif sys.argv[1] == 'close':\n"
                "    print(json.dumps(post(f'/{sys.argv[2]}/close', {})))\nelse:\n    sid = sys.argv[2]\n"
                "    for a in sys.argv[3:]:\n        r = post(f'/{sid}/step', {'action': a})\n"
                "        print(f\"> {a}\\n{r['observation']}\\n[score {r['score']}/{r['max_score']} moves {r['moves']}]\")\n")
        step("Write", {"file_path": f"{GAME_CWD}/play.py", "content": play},
             f"File created successfully at: {GAME_CWD}/play.py", 0.05,
             pre=[("thinking", "Write a small client so each tool call can send several moves."),
                  ("text", "I'll write a tiny client for the game API first.")])
        sub_dir = self.tdir / "submissions"
        sub_dir.mkdir(exist_ok=True)
        hist_entries = []
        for gi, (start_h, n, final, peak, ending) in enumerate(GAME_PLAN, 1):
            while self.h(cl.t) < start_h:
                step("Edit", {"file_path": f"{GAME_CWD}/notes.md", "old_string": "## Map",
                              "new_string": f"## Map\n- {RC.choice(GAME_ROOMS)} -> {RC.choice(GAME_ROOMS)}"},
                     f"The file {GAME_CWD}/notes.md has been updated successfully.", 0.05,
                     pre=[("thinking", RC.choice(["Update the map before the next attempt.",
                                                  "The bell puzzle needs the rope first.",
                                                  "Dying in the crypt costs the points from the chapel."]))],
                     latency=(25.0, 75.0))
            sid = self.ids.hexn(12)
            new_obs = {"session_id": sid, "observation": "LANTERN COVE\nAn interactive fiction.\n\nHarbour Steps",
                       "score": 0, "peak_score": 0, "max_score": 350, "done": False, "moves": 0}
            step("Bash", {"command": "python3 play.py new", "description": "Start a game session"},
                 json.dumps(new_obs), R.uniform(2.0, 6.0), pre=[("text", f"Starting session {gi}.")])
            if n is None:
                n = 40
            steps = self.make_steps(n, final if final is not None else 10**9, peak or 50,
                                    ending == "done", RC)
            if ending == "in_flight":
                steps = self.make_steps(400, 10**9, 60, False, RC)
            d = sub_dir / f"game-{gi}"
            d.mkdir()
            step_lines, step_times = [], []
            i = 0
            while i < len(steps) and cl.t < t_kill:
                batch = steps[i:i + RC.randint(4, 11)]
                tid = cl.api([("tool", "Bash", {"command": "python3 play.py step " + sid + " " +
                                                " ".join(json.dumps(b["action"]) for b in batch),
                                                "description": "Send moves"})], latency=(8.0, 30.0))[0]
                tt = cl.t
                for b in batch:
                    tt += R.uniform(0.15, 0.6)
                    if tt > t_kill:
                        break
                    step_lines.append(json.dumps(b, ensure_ascii=False))
                    step_times.append(q6(tt))
                out = "\n".join(f"> {b['action']}\n{b['observation']}\n[score {b['score']}/350 moves {b['move']}]"
                                for b in batch[:len(step_times) - i])
                i += len(batch)
                if tt > t_kill:
                    break
                cl.tool_result(tid, out, dt=tt - cl.t + 0.05, tur=bash_tur(out))
                if RC.random() < 0.3:
                    cl.api([("text", RC.choice(["Score went up — the lantern matters.", "Dead end; backtracking.",
                                                "Noting the route in notes.md later."]))])
            (d / "steps.jsonl").write_text("".join(x + "\n" for x in step_lines))
            sess = {"round": f"game-{gi}", "session_id": sid, "start_epoch": None, "step_epochs": step_times,
                    "moves": len(step_lines), "ending": ending}
            if ending in ("closed", "done"):
                last = steps[-1]
                if ending == "closed":
                    res = {"session_id": sid, "final_score": last["score"], "peak_score": last["peak_score"],
                           "max_score": 350, "moves": last["move"]}
                    step("Bash", {"command": f"python3 play.py close {sid}", "description": "Close session"},
                         json.dumps(res), R.uniform(1.0, 3.0))
                t_arch = cl.t + R.uniform(0.2, 2.0)
                entry = {"type": "game", "round": f"game-{gi}", "session_id": sid, "task_id": self.task_id,
                         "max_score": 350, "peak_score": last["peak_score"], "final_score": last["score"],
                         "score": last["score"], "moves": last["move"], "steps": steps,
                         "pass_rate": last["score"] / 350}
                (d / "game_result.json").write_text(jdump(entry))
                hist_entries.append(entry)
                sess.update(archived_epoch=q6(t_arch), final_score=last["score"], peak_score=last["peak_score"])
            self.sessions.append(sess)
            if gi == 3:
                tid = cl.api([("text", "Let me have a subagent consolidate the map from my notes."),
                              ("tool", "Agent", {"description": "Consolidate map", "subagent_type": "general-purpose",
                                                 "prompt": f"Read {GAME_CWD}/notes.md and produce a compact room graph "
                                                           "with unexplored exits marked."})])[0]
                cl.user_text(f"Read {GAME_CWD}/notes.md and produce a compact room graph with unexplored exits marked.",
                             parent=tid, dt=0.3)
                rid2 = cl.api([("tool", "Read", {"file_path": f"{GAME_CWD}/notes.md"})], parent=tid)[0]
                cl.tool_result(rid2, read_result(["## Map", "- Harbour Steps -> Net Loft", "- Tide Cave -> ?"], 1),
                               parent=tid, dt=0.1)
                summary = ("Harbour Steps - Net Loft - Chandlery; Tide Cave (exit east unexplored); Lighthouse Base - "
                           "Lamp Room (needs lit lantern); Chapel Ruins - Flooded Crypt (deadly without rope).")
                cl.api([("text", summary)], parent=tid)
                cl.tool_result(tid, [{"type": "text", "text": summary}], dt=0.4)
            if gi == 4:
                cl.api([("text", "135 points is a solid result and the remaining puzzles look expensive. "
                                 "I'll stop here.")])
                cl.stop_hook()
        self.out.items = [it for it in self.out.items if it[1] <= t_kill]
        cl.end_segment(t_kill, "timeout (killed)")
        runtime = t_kill - seg
        L = self.log
        t = t_kill + 0.01
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=0")
        archive = tiny_targz([("notes.md", "# Lantern Cove notes\n## Map\n- Harbour Steps -> Net Loft\n")])
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(0.6, 1.2)
        L.info(t, f"Final archive: {len(archive)} bytes")
        t += 30.0
        L.warning(t, "Failed to close active game sessions")
        best = select_best(hist_entries, "maximize", "pass_rate_first")
        hist = {"run_id": self.run_id, "best_score": best["best_score"], "best_pass_rate": best["best_pass_rate"],
                "best_round": best["best_round"], "agent_submissions": 0, "auto_submissions": 0,
                "entries": hist_entries}
        self.write("game_history.json", jdump(hist))
        bs = float(best["best_score"])
        L.info(t + 0.02, f"Done (game): best_score={bs} ({best['best_round']}), sessions={len(hist_entries)}, "
                         f"resumes=0, runtime={runtime:.1f}s")
        t += 0.03
        L.info(t, f"Stopping container {self.container}...")
        t += R.uniform(10.1, 10.5)
        L.info(t, f"Removing container {self.container}...")
        t += R.uniform(0.2, 0.5)
        L.info(t, f"Container {self.container} removed.")
        self.write("run_agent.log", self.log.text())
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        self.final_result("claude-code-2.1.214", self.model, hist, len(hist_entries), len(hist_entries), 0, True,
                          runtime, len(archive), 0)
        self.hist, self.runtime, self.seg = hist, runtime, (seg, t_kill)

    def truth(self) -> dict:
        return {"segments": [{"start_epoch": q6(self.seg[0]), "end_epoch": q6(self.seg[1]),
                              "ended_by": "timeout (killed by harness)"}],
                "game_sessions": self.sessions,
                "expected": {"best_round": self.hist["best_round"], "best_score": self.hist["best_score"],
                             "best_pass_rate": self.hist["best_pass_rate"], "archived_sessions": len(self.hist["entries"]),
                             "game_folders": len(self.sessions), "in_flight_rounds": [s["round"] for s in self.sessions
                                                                                     if s["ending"] == "in_flight"],
                             "runtime_seconds": self.runtime, "resume_count": 0, "timed_out": True}}


def build_game(root: Path) -> dict:
    task = game_task()
    write_task(root, task)
    run = GameRun(root, task)
    run.build()
    spec = run.truth()
    spec["transcript"] = {"format": "claude-code stream-json", "claude_code_version": "2.1.214",
                          "analysis": analyse_claude((run.tdir / "agent_output.txt").read_bytes()),
                          "user_event_timestamps": "present", "assistant_event_timestamps": "present",
                          "subagent_tool_name": "Agent"}
    common = {"agent": "claude-code-2.1.214", "model": run.model, "started_at_epoch": run.started,
              "exercises": ["game mode: game-N folders with steps.jsonl (no timestamps) and game_result.json",
                            "one in-flight session (steps.jsonl only) because close-all failed",
                            "game_history.json instead of run_history.json; no auto-eval, no sforge-submit",
                            "Game Mode prompt; claude-code-2.1.214 with a non-Anthropic model via api_base_url",
                            "cache-opt flags make the logged command longer than 200 chars (truncated)",
                            "timestamps on assistant AND user events; subagent via the `Agent` tool",
                            "host UTC offset +00:00"]}
    return write_truth(run, common, spec, run.index)


# ---------------------------------------------------------------------------
# Run 5: tiny legacy run (integer round folders, old stop hook that evaluated)
# ---------------------------------------------------------------------------


class LegacyRun(RunBase):
    RUN_ID = "legacy-evolve-0115"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(480), "docker", SEED + 505)
        self.model = "claude-sonnet-4-5"
        self.container = f"sforge.evolve.{self.task_id}.{self.RUN_ID}"

    def build(self):
        R, L = self.R, self.log
        t0 = epoch_of(2026, 1, 15, 10, 2, 40, 480) + 0.611
        t = t0
        L.info(t, "Images ready")
        t += 1.3
        L.info(t, f"Container started: {self.container}")
        t += 24.0
        L.info(t, "Agent installation complete")
        t += 0.8
        L.info(t, "Installed evolve stop hook (evaluates on stop)")
        t += 0.6
        prompt = "## Iterative Evaluation Mode (legacy)\n\n---\n\n" + GL_QUERY + "\n"
        self.write("agent_prompt.md", prompt)
        L.info(t, f"Prompt written ({len(prompt)} bytes)")
        started = q6(t + 0.002)
        self.write("started_at", f"{self.clock.iso_s(started)}\n{started!r}\n")
        self.started = started
        cmd = f"{CLAUDE_RUN} --model {self.model}"
        L.info(started + 0.001, f"Running agent: {cmd[:200]}... (timeout=3600s)")
        out = TextFile()
        cl = Claude(self.ids, R, out, model=self.model, version="1.0.128", cwd=GL_CWD,
                    tools=["Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write", "TodoWrite"],
                    user_ts=False)
        PRICING.setdefault(self.model, (3.0, 15.0, 3.75, 0.30))
        cl.start_segment(started + 0.03, self.ids.uuid(), tokens_of(prompt))
        cl.init(2.4)
        unlock = gl_unlock(random.Random(SEED + 506))
        rounds, daemon, best, best_n = [], [], 0.0, 0
        judge = Judge(self.task, self.clock, "docker", self.ids, R, self.tdir)
        for n, hh in enumerate([0.28, 0.55, 0.83], 1):
            while (cl.t - started) / 3600 < hh:
                tid = cl.api([("tool", "Edit", {"file_path": f"{GL_CWD}/gitlet/commands.py",
                                                "old_string": "    return None", "new_string": "    return ids"})],
                             latency=(20.0, 60.0))[0]
                cl.tool_result(tid, f"The file {GL_CWD}/gitlet/commands.py has been updated successfully.", dt=0.1)
            cl.api([("text", "Implementation step done; stopping for evaluation.")])
            st = gl_statuses(unlock, hh * 2.4, R)
            runtime = R.uniform(9.0, 15.0)
            info = judge.grade(str(n), "agent", cl.t + 0.5, 4100 + 300 * n, runtime, gl_pytest_output(st, runtime),
                               gl_grade(st), allowed_files=["gitlet/__init__.py", "gitlet/commands.py"])
            rep = json.loads((self.tdir / "submissions" / str(n) / "report.json").read_text())
            rep.pop("score_0_100")   # pre-rescale harness
            (self.tdir / "submissions" / str(n) / "report.json").write_text(jdump(rep))
            best = max(best, rep["pass_rate"])
            pct = math.floor(rep["pass_rate"] * 1000) / 10
            fb = (f"Stop hook feedback:\n[/tmp/evolve-stop-hook.sh]: Submitting round {n} for evaluation...\n"
                  f"Pass rate: {pct}%\nPassed: {rep['passed']}/{rep['total_tests']}\n"
                  f"Best score: {math.floor(best * 1000) / 10}% (round {best_n})\nContinue improving the implementation.")
            cl.user_text(fb, dt=info["completed_epoch"] - cl.t + 0.5, synthetic=False)
            rounds.append({"round": str(n), "folder_kind": "legacy integer (visualizer treats as agent)",
                           "submitted_at": info["grading_start_epoch"], "pass_rate": rep["pass_rate"],
                           "stop_hook_feedback_epoch": q6(cl.t)})
            daemon.append(f"{self.clock.iso_s(info['grading_start_epoch']).replace('T', ' ')} auto-eval: snapshot "
                          f"{n} queued")
        cl.api([("text", "Stopping: implementation is at a good state.")])
        cl.result("Stopping: implementation is at a good state.")
        t_end = cl.t + 0.2
        runtime = t_end - (started + 0.03)
        L.info(t_end + 0.001, f"Agent finished: runtime={runtime:.1f}s, timed_out=False, resumes=0")
        L.info(t_end + 2.1, f"Removing container {self.container}...")
        L.info(t_end + 2.6, f"Container {self.container} removed.")
        self.write("run_agent.log", L.text())
        self.write("auto_eval_daemon.log", "".join(x + "\n" for x in daemon))
        data, index = out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        state = {"best_pass_rate": jqv(best), "best_score": None, "best_round": str(max(
            range(1, 4), key=lambda i: rounds[i - 1]["pass_rate"])),
                 "submissions": [{"kind": "agent", "round": r["round"], "at": int(r["stop_hook_feedback_epoch"]),
                                  "pass_rate": jqv(r["pass_rate"]), "score": None} for r in rounds]}
        self.write("evolve_state.json", jdump(state))
        hist = {"best_pass_rate": best, "best_round": state["best_round"], "best_score": None}
        self.final_result("claude-code", self.model, hist, 3, 3, 0, False, runtime, 0, 0, legacy=True)
        self.rounds, self.runtime = rounds, runtime
        return {"rounds": rounds,
                "expected": {"best_round": state["best_round"], "best_pass_rate": best, "total_rounds": 3,
                             "integer_round_folders": ["1", "2", "3"], "runtime_seconds": runtime},
                "transcript": {"format": "claude-code stream-json (old 1.0.x shape)", "claude_code_version": "1.0.128",
                               "analysis": analyse_claude(data),
                               "note": "stop-hook feedback carries the OLD evaluating-hook text with pass rates"}}


def build_legacy(root: Path) -> dict:
    run = LegacyRun(root, gl_task())
    spec = run.build()
    common = {"agent": "claude-code", "model": run.model, "started_at_epoch": run.started,
              "exercises": ["legacy integer round folders 1/2/3 (no run_history.json, no run_config.json)",
                            "reports without score_0_100", "auto_eval_daemon.log instead of auto_eval_ticks.log",
                            "old stop hook feedback that contains 'Submitting round N for evaluation' and pass rates",
                            "final_result.json without effort/resume_count", "sforge.evolve.* container name"]}
    return write_truth(run, common, spec, run.index)



# ---------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------


def _fmt_h(h):
    return f"{h:.2f} h"


def write_readme(root: Path, truths: list[dict]):
    by = {t["run_id"]: t for t in truths}
    gw = by[GWRun.RUN_ID]
    L = []
    A = L.append
    A("# sample_runs — GENERATED synthetic SForge runs (+ runs recorded with the real SForge judge and harness)")
    A("")
    A("**Everything in this folder except `generate.py`, `check_with_sforge.py`, `make_judge_run.py`, `__init__.py`")
    A("and the run `judge-demo-001` (run 6 below) is GENERATED by `generate.py`: seeded, synthetic data in the")
    A("shapes SForge 1.1.0 writes. None of it is real agent output, none of it was copied from real transcripts,")
    A("and the task descriptions are invented.** Run 6 was recorded by `make_judge_run.py` against the real SForge")
    A("judge (`sforge serve`); its section says which of its files came from the judge. Regenerate with")
    A("")
    A("```")
    A("python sample_runs/generate.py          # stdlib only, fixed seed, byte-for-byte identical output")
    A("python sample_runs/check_with_sforge.py # loads every run with SForge's own scanner/parsers (needs sforge)")
    A("python sample_runs/make_judge_run.py    # re-records run 6 with the real judge (Docker, ~2 min; new times/ids)")
    A("```")
    A("")
    A("`generate.py` deletes and rewrites `tasks/`, `runs/`, `_truth/` and this README, leaving the outputs of")
    A("`make_judge_run.py` in place (`KEEP` in generate.py). It reads no clock:")
    A("all times are derived from fixed epochs. File mtimes are meaningless (git does not keep them); every")
    A("time a reader may legitimately use is inside the files, and the true times are in `_truth/`.")
    A("")
    A("## Layout")
    A("")
    A("```")
    A("tasks/<task_id>.json + tasks/BENCHMARK.yaml      task specs (§8 fields; loadable by sforge.harness.task_spec)")
    A("runs/<run_id>/<task_id>/...                      flat SForge layout")
    A("runs/<ip>/<run_id>/<task_id>/...                 machine-grouped layout (run 3)")
    A("_truth/<run_id>__<task_id>.json                  ground truth for tests (never inside a run dir)")
    A("```")
    A("")
    A("## Runs")
    A("")
    A("| # | path | agent / model | task (parser, selection, direction) | budget | host UTC offset | rounds agent+auto (total) | best |")
    A("|---|---|---|---|---|---|---|---|")
    for i, t in enumerate(truths, 1):
        e = t["expected"]
        task = t["task"]
        rounds = (f"{e.get('agent_rounds', e.get('archived_sessions', e.get('total_rounds')))}+{e.get('auto_rounds', 0)}"
                  f" ({e.get('total_rounds', e.get('game_folders'))})")
        best = e.get("best_score")
        best_s = (f"{best} ({e['best_round']})" if best is not None and task["parser"] != "pytest_v"
                  else f"{100 * e['best_pass_rate']:.2f}% ({e['best_round']})")
        budget = _fmt_h(e["runtime_seconds"] / 3600)
        A(f"| {i} | `{t['path']}` | {t['agent']} / {t['model']} | {t['task_id']} ({task['parser']}, "
          f"{task['selection']}, {task['score_direction'] or 'maximize'}) | {budget} | {t['host_utc_offset']} | "
          f"{rounds} | {best_s} |")
    A("")
    for i, t in enumerate(truths, 1):
        A(f"**Run {i} — `{t['run_id']}`** exercises:")
        for x in t["exercises"]:
            A(f"- {x}")
        A("")
    e = gw["expected"]
    A("### Run 1 in numbers (the EdgeBench gravitational-wave case, re-created synthetically)")
    A("")
    A(f"- {e['graded_attempts']} graded attempts ({e['agent_rounds']} `agent-N` via sforge-submit + "
      f"{e['auto_rounds']} `auto-N` every 30 min); best score rises from {e['first_best_score']} to "
      f"{e['best_score']} (`{e['best_round']}`, rescaled {e['best_score_0_100']}) with only {e['new_bests']} new bests.")
    A(f"- Composite score = 0.4·detection + 0.3·parameter_estimation + 0.2·localisation + 0.1·false_alarm; "
      f"the `detection` component jumps from 64 to ~89 between {e['detection_component_jump']['between_hours'][0]} h "
      f"and {e['detection_component_jump']['between_hours'][1]} h.")
    A(f"- Null-score round (evaluator crash): {', '.join(e['rounds_with_null_score'])}; invalid rounds "
      f"(`valid: false`, score 0): {', '.join(e['invalid_rounds'])}; agent rounds whose result never reached the "
      f"transcript: {', '.join(e['agent_rounds_without_result_in_transcript'])} (10-minute Bash tool timeout, and "
      f"the round in flight when the harness killed the agent).")
    an = gw["transcript"]["analysis"]
    A(f"- agent_output.txt: {gw['agent_output']['bytes']:,} bytes, {an['lines']} lines, {an['init_events']} init "
      f"events, {len(an['result_events'])} result event, {an['unique_message_ids']} API messages "
      f"({an['message_ids_split_over_several_lines']} split over several lines), tool uses {an['tool_uses']}, "
      f"{an['tool_results_is_error']} error tool results, {an['tool_results_list_content']} list-content tool "
      f"results, {an['stop_hook_feedback']} stop-hook feedbacks, {an['compact_boundary']} auto-compactions, "
      f"{an['subagent_events']} subagent events, {an['sforge_submit_calls']} sforge-submit calls "
      f"({len(gw['rejected_submissions'])} rejected by COOLDOWN) and {an['sforge_submit_list_calls']} `--list`.")
    A("")
    A("### Planted reframing moments (run 1)")
    A("")
    A("Each is an assistant text message that re-thinks the approach, followed by a rewrite and a submission")
    A("that jumps the best score. Offsets point at the JSON line holding the text block.")
    A("")
    A("| elapsed | round | best before → after | agent_output.txt byte offset | what the agent realised |")
    A("|---|---|---|---|---|")
    for m in gw["reframing_moments"]:
        A(f"| {m['elapsed_hours']:.2f} h | `{m['round']}` | {m['score_before']:.2f} → {m['score_after']:.2f} "
          f"(+{m['jump']:.2f}) | {m['message_byte_offset']} | {m['realisation']} |")
    A("")
    A("## Ground truth: `_truth/<run_id>__<task_id>.json`")
    A("")
    A("One JSON object per run (written with `indent=1`). Common keys:")
    A("")
    A("- `run_id`, `task_id`, `path` (relative to `sample_runs/`), `layout`, `ip`, `backend`, `agent`, `model`,")
    A("  `task` (parser, selection, score_direction, rescale), `exercises`;")
    A("- `host_utc_offset` / `host_utc_offset_seconds`: the timezone of the naive local times in `run_agent.log`,")
    A("  `run_instance.log`, `auto_eval_ticks.log` and line 1 of `started_at`;")
    A("- `started_at_epoch`; `segments`: `[{start_epoch, end_epoch, ended_by, session_id?}]` (agent segments);")
    A("- `agent_output`: `{bytes, lines, line_epochs}` where `line_epochs` is a list of `[byte_offset, epoch]`, one")
    A("  per line of `agent_output.txt` (byte offset of the line start; true epoch at which the line was written);")
    A("- `rounds` (non-game runs): one object per graded round in judge creation order with `round`, `kind`,")
    A("  `submission_id`, `submit_call_epoch` (agent rounds: the sforge-submit tool call), `post_epoch` (upload),")
    A("  `grading_start_epoch` (= report.json `submitted_at`), `grading_end_epoch` (report written),")
    A("  `completed_epoch` (judge status completed, after judge-container cleanup), `result_seen_epoch` (agent")
    A("  printed the result; null if it never did), `evolve_at` (evolve_state `at`), `tick_log_epoch` (auto")
    A("  rounds), `elapsed_hours`, `score`, `pass_rate`, `new_best`, `best_so_far` and run-specific fields")
    A("  (run 1: `components`, `outcome`; run 2: `has_report`, `timed_out`, `score` = \"NaN\" for the NaN round);")
    A("- `expected`: what a correct reader should conclude (best round/score/pass rate under the task's policy,")
    A("  agent/auto/total round counts, new-best count, special rounds, runtime, resume count);")
    A("- `transcript`: format, version, timestamp conventions, and `analysis` (event counts, tool-use counts,")
    A("  usage totals deduplicated by `message.id`, noise lines, result events with `total_cost_usd`);")
    A("- run 1 also has `reframing_moments` (round, elapsed hours, message byte offset and epoch, score before/")
    A("  after, realisation, full message text), `rejected_submissions`, `sforge_submit_list_calls`,")
    A("  `container_clock_skew_seconds`; run 4 has `game_sessions` (true epoch of every game step).")
    A("")
    A("## Deliberate quirks and documented assumptions")
    A("")
    A("- Claude Code 2.1.159 is assumed to put `timestamp` on user events only (as 2.1.138/2.1.143 do) and")
    A("  2.1.214 on both assistant and user events (as 2.1.220 does). Run 1's pod clock runs "
      f"{gw['container_clock_skew_seconds']} s ahead of the host, so its `timestamp` and evolve_state `at` values are")
    A("  skewed by that much; the truth epochs are host time.")
    A("- Stop-hook feedback text is `Stop hook feedback:\\n[/tmp/sforge-stop-hook.sh]: Do not stop. Continue")
    A("  working on the implementation.`; the Bash tool timeout result text, Codex `thinking` / `tokens used`")
    A("  lines and the legacy `auto_eval_daemon.log` line format are plausible guesses, not verified formats.")
    A("- sforge-submit output mirrors the script in `sforge/harness/evolve_scripts.py`, including its jq quirk:")
    A("  `jq -r '.valid // true'` turns `false` into `true`, so `Valid: no` is never printed.")
    A("- Run 2's NaN score token is planted: SForge's pytest_v parser cannot produce one. It sits in the last")
    A("  agent round, whose evaluation hung until `eval_timeout` and finished after run_agent gave up draining,")
    A("  so `run_history.json` still lists that round as `running` (consistent with the judge API, which cannot")
    A("  serialise NaN).")
    A("- `submission.tar.gz` is stored in runs 1 and 3 only (omitted elsewhere to keep the repo small): tiny real")
    A("  archives whose sizes match `Archive size`, `Archive saved` and the tick log. Run 1's hold the workspace")
    A("  as the transcript's Write and Edit calls left it when the submission was posted (a file the transcript")
    A("  never wrote holds what its Read calls show). `final_archive.tar.gz` files are tiny real archives whose")
    A("  size matches `Final archive: N bytes` (run 1's: the workspace at the kill).")
    A("- `tasks/gitlet_vcs.json` has no `score_direction`/`rescale` on purpose: the visualizer treats any task whose")
    A("  judge names a `score_direction` as a score task. Run 2's `final_result.json` `best_score` equals its best")
    A("  pass rate (0-1) because SForge's `pass_rate_first` stores the pass rate as best score when no score exists.")
    A("- Run 4 sets `SFORGE_CLAUDE_CACHE_OPT` on the host (hence the cache-opt flags in the logged command); the")
    A("  gateway URL in its run_config.json is a placeholder.")
    A("- Usage numbers and costs are synthetic (opus-4-8 priced like Opus 4.1 here); they are consistent with the")
    A("  `result` events but not with any real price list.")
    L.extend(judge_run_section(root))
    L.extend(GENUINE_SECTION)
    (root / "README.md").write_text("\n".join(L) + "\n")


#: README section of sample_runs/genuine (written by make_real_runs.sh, never by this generator)
GENUINE_SECTION = [
    "",
    "## `genuine/` — runs recorded with the REAL SForge 1.1.0 harness (not generated)",
    "",
    "`genuine/runs/` holds five run directories written by SForge's own code: `sforge build`, `sforge serve`,",
    "`sforge run`, real work and judge containers, the harness's own `sforge-submit` (the recorder is",
    "`real_sforge/`, a copy of the project's real-SForge tooling; `make_real_runs.sh` re-records them, about 35",
    "minutes, root and Docker needed). The only stand-in is the agent CLI: a scripted `claude` that prints",
    "Claude Code stream-json and really runs its tool calls; its token and dollar figures are made up.",
    "`genuine/tasks/` holds their task JSONs, `genuine/_truth/` SForge's own visualizer view of each run",
    "(`genuine_truth.py`, with SForge's scanner), which `tests/test_genuine_runs.py` holds edgetui to.",
    "Submission archives are kept.",
    "",
    "| run | what it shows |",
    "|---|---|",
    "| `rs1-stats-20261201` | the harness crashes before the agent starts (no `sudo` on PATH): only `run_config.json` and a `run_agent.log` ending on an ERROR and its traceback |",
    "| `real-stats-20261201180500` | a clean pass-rate run with an auto-resume (the agent CLI's own `API Error: 529 … Overloaded` line ends segment 0) |",
    "| `real-pack-20261201181500` | a score run with an invalid packing, eval timeouts, and its work container killed mid-run |",
    "| `real-installfail-20261201181800` | the agent install fails and the work container is left running |",
    "| `real-tz-20261201182000` | a clean run with judge and runner in `TZ=Asia/Kolkata` (+05:30) |",
]


JUDGE_RUN_TRUTH = "_truth/judge-demo-001__judge_demo_sum.json"


def judge_run_section(root: Path) -> list:
    """README section of the run recorded by make_judge_run.py (numbers from its truth file, if present)."""
    L = []
    A = L.append
    A("")
    A("## Run 6 — `runs/judge-demo-001/judge_demo_sum`: recorded with the REAL SForge judge (not generated)")
    A("")
    A("Written by `make_judge_run.py` (run by hand: needs Docker, the sforge package, bash, curl, jq, GNU tar and a")
    A("static `/bin/busybox`), never by `generate.py`. The script started `sforge serve` from the installed sforge")
    A("package (PyPI 1.1.0) on 127.0.0.1 (free port) with its own log dir and a tasks dir holding")
    A("`tasks/judge_demo_sum.json` (score_sum parser, score_first, maximize, linear rescale 0–100). The judge")
    A("image `edgebench.judge.judge_demo_sum:<judge.image_tag>` was built locally from the host's static busybox")
    A("(`tests/docker_images.py`, no registry) plus the grader `/opt/judge/grade.sh` (its text is in")
    A("`make_judge_run.py`: six cases worth 10/10/15/15/20/30 points, `CASE <id> OK|WA|RE score=<n>` lines and")
    A("`TOTAL_SCORE`). Run `judge-demo-001` was registered over HTTP with the admin secret the judge created; a")
    A("scripted agent (no language model) wrote five versions of `solve.sh` and submitted each with the real")
    A("`sforge-submit` script (`kind=agent`), while a host-side auto-eval thread, as in `run_agent`, posted")
    A("`kind=auto` snapshots with the admin secret every 30 s (at most two). Every archive was graded by the")
    A("judge in its own judge container.")
    A("")
    t = None
    tp = root / JUDGE_RUN_TRUTH
    if tp.exists():
        t = json.loads(tp.read_text())
    if t is not None:
        e = t["expected"]
        A(f"Recorded {datetime.fromtimestamp(t['started_at_epoch'], UTC).strftime('%Y-%m-%d %H:%M UTC')}; "
          f"runtime {e['runtime_seconds']:.1f} s; {e['agent_rounds']} agent + {e['auto_rounds']} auto rounds; best "
          f"`{e['best_round']}` (score {e['best_score']:g}); {t['agent_output']['lines']} transcript lines.")
        A("")
        A("| round | submission id | score | passed | new best | best so far |")
        A("|---|---|---|---|---|---|")
        for r in t["rounds"]:
            A(f"| `{r['round']}` | `{r['submission_id']}` | {r['score']:g} | {r['passed']}/{r['total_tests']} | "
              f"{'yes' if r['new_best'] else ''} | {r['best_so_far']:g} (`{r['best_round_so_far']}`) |")
        A("")
    A("**From the real judge** (copied byte for byte from the judge's log dir, which was also the run's log dir,")
    A("as when `sforge run` and `sforge serve` share one):")
    A("")
    A("- every file under `submissions/<round>/`: `run_instance.log`, `submission.tar.gz` (the archive as")
    A("  received), `allowed_files.txt`, `eval.sh`, `test_output.txt` (the judge container's output) and")
    A("  `report.json`;")
    A("- the content of `run_history.json`: the judge's admin `/history` answer after the drain (fetched and")
    A("  written by the script with `json.dumps(..., indent=2)`, as `run_agent` does);")
    A("- in `agent_output.txt`, the text of every `sforge-submit` tool result (`Round: agent-N`, results,")
    A("  `--list` table): the stdout of the real script talking to the judge; and the content of")
    A("  `evolve_state.json`, the state file that script kept (re-indented as `run_agent` does).")
    A("")
    A("**Written by `make_judge_run.py`** in SForge's formats, with the real times of the recording:")
    A("")
    A("- `run_config.json` (run root and task), `run_agent.log`, `started_at`, `agent_prompt.md` (sforge's")
    A("  `generate_evolve_prompt`), `_sforge-submit.sh` (sforge's `generate_submit_script`, unmodified),")
    A("  `auto_eval_ticks.log` (one line per tick with the id and round the judge returned), `final_archive.tar.gz`")
    A("  and `final_result.json` (sforge's `RunResult.to_dict()` over the judge history);")
    A("- `agent_output.txt` itself: Claude Code stream-json lines appended as the script acted. The agent is")
    A("  scripted (model `scripted-demo`); token usage numbers are placeholders and the cost is 0; the Write /")
    A("  Bash tool results are what the script did (local test commands ran with the host's `sh`);")
    A(f"- `{JUDGE_RUN_TRUTH}` (true epoch of every transcript line, every round's times and")
    A("  results) and `tasks/judge_demo_sum.json`.")
    A("")
    A("Differences from a real `sforge run`: there is no work container (the workspace was a host directory and")
    A("`sforge-submit` ran on the host, with its two fixed paths `/tmp/sforge_state.json` and")
    A("`/tmp/_submit_resp.json` moved into the script's temp dir); `base_image: python311` is nominal (the judge")
    A("never builds: the image named by `judge.image_tag` existed); `judge_url` in `run_config.json` is the")
    A("127.0.0.1 URL used; the stop hook is disabled. Judge containers need ~15 s to stop (busybox `tail -f")
    A("/dev/null` as PID 1 ignores SIGTERM), so each `sforge-submit` waited about 20 s for its result.")
    A("`tests/test_judge_sample_run.py` checks the ingest against the reports and SForge's `select_best`, and that")
    A("this run re-created file by file under the live supervisor gives the same events as its offline ingest.")
    return L


BUILDERS += [("gw", build_gw), ("gitlet", build_gitlet), ("vrp", build_vrp), ("game", build_game),
             ("legacy", build_legacy)]


# ---------------------------------------------------------------------------
# Moment-detection runs: gravitational-wave-like 12-hour runs with planted reframing moments
# and distractors (not part of the committed samples: `generate.py --moment-runs DIR SEED...`).
# The acceptance test of replay/moments.py writes them into a temporary folder. FROZEN: the
# README records this file's SHA-256 as it was when the detector's parameters were tuned.
# ---------------------------------------------------------------------------

#: Spread of the non-improving scores: below-best scores are best - U(0, 2 * MR_W) hundredths, whose
#: robust spread (1.4826 x MAD) is 0.741 * MR_W. Jumps are planted as multiples of MR_SIGMA.
MR_W = 100
MR_SIGMA = 0.741 * MR_W
MR_REFRAMES = ["The residuals are not random: they all share {a}. I have been tuning {b} for an hour, but the "
               "structure itself is wrong. Stepping back: rebuild {c} around {d} instead of adjusting thresholds.",
               "Listing what the last rounds changed: only {b}. Every gain was cancelled elsewhere. The assumption "
               "under the whole pipeline, {a}, does not hold; the fix is a new stage for {d} in {c}.",
               "Stepping back before another tweak. The failures cluster in {a}. That points at {c}, not {b}. New "
               "plan: replace the approach there with {d} and keep every threshold fixed so the effect is measurable."]
MR_CAUSES = ["loud glitches in a few chunks", "signals quiet in one detector", "templates near the bank edge",
             "high mass-ratio injections", "chunks with non-stationary noise", "the shortest signals"]
MR_DIRS = ["the whitening", "coincidence", "the template bank", "parameter estimation", "the veto", "clustering"]
MR_IDEAS = ["a median-averaged PSD", "a coherent network statistic", "a local match maximisation",
            "a sine-Gaussian glitch gate", "a phase-consistency test", "per-chunk adaptive thresholds"]


class PlantedScorer:
    """Scores for a GW-like run: below-best noise of known spread, planted jumps of k * MR_SIGMA,
    small tuning gains and lucky noise (both well under the spread)."""

    def __init__(self, R: random.Random, plan: dict, control: bool):
        self.R, self.plan, self.control = R, plan, control
        self.best = None
        self.best_comps = None
        self.new_bests: list[dict] = []
        self.log: list[dict] = []     # (kind of outcome) per assign, for the truth file

    def _comps(self, s100: int, focus: str | None = None) -> dict:
        base = self.best_comps or {k: 0 for k in GW_W}
        cur = sum(GW_W[k] * base[k] for k in GW_W) if self.best_comps else None
        nominal = {k: base[k] / 10 for k in GW_W} if self.best_comps else {
            "detection": 63.6, "localisation": 21.0, "false_alarm": 58.0, "parameter_estimation": 24.0}
        if cur is not None:
            focus = focus or self.R.choice(GW_COMPONENTS)
            nominal[focus] = max(0.0, min(100.0, nominal[focus] + (s100 - cur) / 100 / (GW_W[focus] / 10)))
        return solve_components(s100, nominal)

    def _best(self, s100: int, why: str, focus: str | None = None, moment=None) -> dict:
        prev, prev_c = self.best, self.best_comps
        comps = self._comps(s100, focus)
        self.best, self.best_comps = s100, comps
        out = {"type": "best", "s100": s100, "comps": comps, "new_best": True, "prev_best": prev,
               "prev_comps": prev_c, "moment": moment, "why": why}
        self.new_bests.append(out)
        return out

    def assign(self, kind: str, h: float, *, moment: int | None = None, forced: str | None = None) -> dict:
        R = self.R
        if self.best is None:
            self.best = 4280 + R.randint(-60, 60)
            self.best_comps = None
            comps = self._comps(self.best)
            self.best_comps = comps
            out = {"type": "best", "s100": self.best, "comps": comps, "new_best": True, "prev_best": None,
                   "prev_comps": None, "why": "first"}
            self.new_bests.append(out)
            return out
        if forced == "crash":
            return {"type": "crash", "s100": None, "comps": None, "new_best": False, "prev_best": self.best}
        if forced == "invalid":
            return {"type": "invalid", "s100": 0, "comps": {k: 0 for k in GW_W}, "new_best": False,
                    "prev_best": self.best}
        if forced and forced.startswith("jump:"):
            _, why, k = forced.split(":")
            focus = R.choice(GW_COMPONENTS)
            return self._best(self.best + int(round(float(k) * MR_SIGMA)), why, focus, moment)
        r = R.random()
        if forced != "below" and kind == "agent":
            p_small = 0.10 if self.control else 0.05
            if r < p_small:   # tuning: a small real gain, or lucky noise just above the best
                return self._best(self.best + R.randint(3, int(0.3 * MR_SIGMA)), "tuning")
            if r < p_small + 0.02:
                return self._best(self.best + R.randint(1, 8), "lucky")
        if R.random() < 0.06:
            s = int(R.uniform(1100, 3400))
            return {"type": "broken", "s100": s, "comps": self._comps(s), "new_best": False, "prev_best": self.best}
        s = self.best - R.randint(1, 2 * MR_W)
        return {"type": "below", "s100": s, "comps": self._comps(s), "new_best": False, "prev_best": self.best}


def moment_plan(seed: int, control: bool) -> dict:
    """Hours of the planted reframing moments (4), behaviour changes without a jump (3), jumps
    without a behaviour change (3), with jump sizes 1-5 x MR_SIGMA; the API error that forces
    the auto-resume; the usual stop hooks, an invalid round and a --list."""
    R = random.Random(seed * 7919 + 17)
    kinds = [] if control else ["reframe"] * 4 + ["behave"] * 3 + ["jumponly"] * 3
    R.shuffle(kinds)
    hours: list[float] = []
    while len(hours) < len(kinds):
        h = round(R.uniform(1.0, 11.2), 2)
        if all(abs(h - x) >= 0.6 for x in hours):
            hours.append(h)
    hours.sort()
    items = []
    for i, (h, k) in enumerate(zip(hours, kinds)):
        items.append({"h": h, "kind": k, "id": i, "jump_sigma": round(R.uniform(1.0, 5.0), 2),
                      "delayed": k == "reframe" and R.random() < 0.3,
                      "new_file": R.random() < 0.6,
                      "text": R.choice(MR_REFRAMES).format(a=R.choice(MR_CAUSES), b=R.choice(MR_DIRS),
                                                           c=R.choice(MR_DIRS), d=R.choice(MR_IDEAS))})
    api_h = round(R.uniform(4.0, 8.0), 2)
    while any(abs(api_h - x["h"]) < 0.3 for x in items):
        api_h = round(api_h + 0.31, 2)
    events = [(it["h"], f"planted{it['id']}") for it in items]
    events += [(api_h, "api_error"), (round(R.uniform(1.2, 3.0), 2), "stop_hook"),
               (round(R.uniform(6.0, 9.0), 2), "stop_hook"), (round(R.uniform(2.0, 10.0), 2), "invalid"),
               (round(R.uniform(3.0, 9.0), 2), "list"), (11.8, "final")]
    events.sort()
    return {"items": items, "events": events}


class GWLikeRun(GWRun):
    """A GW-like 12-hour run (GWRun's machinery) with a seeded plan of planted moments."""

    def __init__(self, root: Path, task: dict, seed: int, control: bool = False):
        super().__init__(root, task)
        self.seed, self.control = seed, control
        self.plan = moment_plan(seed, control)
        self.events = list(self.plan["events"])
        self.auto_specials = []
        self.R = random.Random(seed)
        self.RC = random.Random(seed + 7)
        self.ids = Ids(seed + 13)
        self.planted_rounds: list[dict] = []

    def make_scorer(self, R):
        return PlantedScorer(R, self.plan, self.control)

    # -- the archives as these runs have written them since they had archives (frozen with the
    # detector's tuning): the edited files only, as they are when the submission is graded; the
    # logged sizes are the drawn ones; the final archive is the task's files as first read
    def archive_bytes(self, t_post: float) -> bytes:
        return tiny_targz([(f, self.ws[f]) for f in sorted(self.ws) if f.startswith("search/") or f == "run_search.py"])

    def submitted_size(self, t: float) -> int:
        return self.archive_size(t)

    def final_files(self, t: float) -> list[tuple[str, str]]:
        return [(f"{f}", "\n".join(GW_CODE.get(f, ["# synthetic"])) + "\n") for f in sorted(self.files)
                if f.endswith(".py") or f.endswith(".yaml")]

    def rethink(self, it: dict):
        """The behaviour of a reframing: a long thought and message, reading parts not touched lately,
        a new module, larger edits, a long local evaluation."""
        cl, R = self.cl, self.RC
        think = (f"Best is {self.scorer.best / 100:.2f} and the last rounds only moved it by noise. " + it["text"] +
                 " " + " ".join(R.sample(["Before the next edit, re-read the stage the failures point at.",
                                         "The dev proxy has been flat for an hour; thresholds are not the lever.",
                                         "This needs a different structure, not a different constant.",
                                         "If this is right, the component it touches should move by several points."],
                                        3)))
        pre = [("thinking", think)]
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        files = R.sample([f for f in self.files if f in GW_CODE and f.endswith(".py")], 2)
        tid = cl.api(pre + [("text", it["text"]), ("tool", "Read", {"file_path": f"{GW_CWD}/{files[0]}"})],
                     latency=(6.0, 14.0))[0]
        lines, start = gw_code(files[0], R, 30)
        cl.tool_result(tid, read_result(lines, start), dt=0.12)
        lines, start = gw_code(files[1], R, 25)
        self.step("Read", {"file_path": f"{GW_CWD}/{files[1]}"}, read_result(lines, start))
        if it["new_file"]:
            name = f"search/{R.choice(['gate', 'network', 'refine', 'adaptive', 'phasecheck'])}_{it['id']}.py"
            code = "\n".join(["import numpy as np", "", f"# {it['text'][:90]}"] +
                             [f"def stage_{j}(x, fs, cfg):\n    return x" for j in range(8)])
            path = f"{GW_CWD}/{name}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      tur={"type": "create", "filePath": path, "content": code})
            self.files.append(name)
            self.files.sort()
        for _ in range(3):
            f = R.choice(files)
            old = R.choice([ln for ln in GW_CODE[f] if ln.strip()])
            new = old + "\n" + "\n".join(f"    # {R.choice(GW_IDEAS)}" for _ in range(4))
            self.step("Edit", {"file_path": f"{GW_CWD}/{f}", "old_string": old, "new_string": new},
                      f"The file {GW_CWD}/{f} has been updated successfully.", pre=self.take_pre(0.5))
        out = gw_local_eval(R, self.scorer.best / 100 + 2.0)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Run local dev evaluation", "timeout": 300000}, out,
                  exec_s=(110.0, 190.0), tur=bash_tur(out))

    def handle(self, ev):
        if not ev.startswith("planted"):
            return super().handle(ev)
        it = self.plan["items"][int(ev[len("planted"):])]
        k = it["kind"]
        if k == "jumponly":
            while True:   # an ordinary cycle whose submission jumps
                for _ in range(self.RC.choice([1, 2, 3])):
                    self.action()
                while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
                    self.action()
                info = self.submit(pre=self.take_pre(0.2), forced=f"jump:jumponly:{it['jump_sigma']}")
                if info and not info.get("rejected"):
                    break
        else:
            self.rethink(it)
            while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
                self.action()
            if k == "behave" or it["delayed"]:
                info = self.submit(pre=[("text", "Submitting the restructured stage.")], forced="below")
                if k == "behave":
                    self.planted_rounds.append({**it, "round": info["round"] if info else None})
                    return
                self.normal_cycle(forced=f"jump:reframe:{it['jump_sigma']}")
                info = self.last
            else:
                info = self.submit(pre=[("text", "The dev proxy jumped. Submitting to confirm on the blind set.")],
                                   forced=f"jump:reframe:{it['jump_sigma']}")
        self.planted_rounds.append({**it, "round": info["round"] if info else None})

    def truth(self, index, hist, fr, seg1_start, seg2_start, t_exit) -> dict:
        rounds = [{"round": info["round"], "kind": info["kind"], "post_epoch": info["post_epoch"],
                   "score": info["report"]["score"] if info["report"] else None,
                   "outcome": info["outcome"]["type"], "why": info["outcome"].get("why")}
                  for info in self.judge.rounds]
        return {"rounds": rounds, "control": self.control, "spread_hundredths": MR_SIGMA,
                "planted": [p for p in self.planted_rounds if p["kind"] == "reframe"],
                "distractors": [p for p in self.planted_rounds if p["kind"] != "reframe"],
                "lucky_rounds": [r["round"] for r in rounds if r["why"] == "lucky"],
                "tuning_rounds": [r["round"] for r in rounds if r["why"] == "tuning"],
                "expected": {"best_round": hist["best_round"], "best_score": hist["best_score"]}}


def build_moment_run(root: Path, seed: int, control: bool = False) -> dict:
    """Write one GW-like run ``gwlike-<seed>`` (``gwsmooth-<seed>`` for a control run without
    reframings) under ``root/runs`` with its task under ``root/tasks`` and its truth under
    ``root/_truth``; returns the truth."""
    task = gw_task()
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    write_task(root, task)
    cls = type("GWLikeRunSeeded", (GWLikeRun,), {"RUN_ID": f"{'gwsmooth' if control else 'gwlike'}-{seed}"})
    run = cls(root, task, seed, control)
    spec = run.build()
    spec.update({"generated_by": "sample_runs/generate.py --moment-runs", "synthetic": True, "seed": seed,
                 "run_id": run.run_id, "task_id": run.task_id, "path": run.rel()})
    (root / "_truth").mkdir(exist_ok=True)
    (root / "_truth" / f"{run.run_id}__{run.task_id}.json").write_text(json.dumps(spec, indent=1) + "\n")
    return spec

if __name__ == "__main__":
    raise SystemExit(main())
