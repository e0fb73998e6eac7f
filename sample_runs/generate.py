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
    "claude-opus-4-8": (5.0, 25.0, 6.25, 0.50),
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
        self.pending.setdefault(parent, 0)
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
        self.pending[parent] = 0
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
        self.t += self.R.uniform(30.0, 90.0)      # retries inside the CLI
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
