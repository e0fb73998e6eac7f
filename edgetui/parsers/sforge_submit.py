"""What ``sforge-submit`` was asked and what it printed, read from an agent's shell tool calls:
which invocations run it (:func:`sforge_submit_mode`) and the round, result, history or refusal
its output gives (:func:`parse_sforge_submit_output`; the output format of SForge's
``sforge-submit`` client, docs/sforge-judge.md). Shared by the Claude Code, Codex and
OpenCode parsers; pure functions, no I/O."""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from edgetui.parsers.base import finite_or_none

_SPLIT_CMD = re.compile(r"[;&|\n(){}`'\"]+|\$\(")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset(
    (
        "time",
        "nohup",
        "env",
        "timeout",
        "stdbuf",
        "bash",
        "sh",
        "exec",
        "command",
        "sudo",
        "xargs",
        "then",
        "do",
        "else",
        "!",
    )
)


#: modes that read the judge's record without submitting (no round, no submission)
_READS = ("list", "result")


def sforge_submit_mode(command: Any) -> Optional[str]:
    """``"submit"`` / ``"details"`` / ``"list"`` / ``"result"`` when a shell command runs sforge-submit,
    else None. ``result`` (``--result <submission id>``, newer SForge: docs/sforge-judge.md) re-reads a
    graded submission: like ``list`` it is no new submission and makes no round.

    The command is split at shell separators (``; & | ( ) { } ` ' "`` newlines,
    ``$(``); a piece invokes sforge-submit when its first word after
    ``VAR=value`` assignments and wrappers (``timeout 600``, ``bash -c`` ...) is
    ``sforge-submit`` or a path ending in ``/sforge-submit``.
    """
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    if not isinstance(command, str) or "sforge-submit" not in command:
        return None
    found: Optional[str] = None
    for piece in _SPLIT_CMD.split(command):
        if "sforge-submit" not in piece:
            continue
        words = piece.split()
        i = 0
        while i < len(words):
            w = words[i]
            if _ENV_ASSIGN.match(w) or w in _WRAPPERS or w.startswith("-") or w.replace(".", "").isdigit():
                i += 1
                continue
            break
        if i >= len(words):
            continue
        w = words[i]
        if w != "sforge-submit" and not w.endswith("/sforge-submit"):
            continue
        args = words[i + 1 :]
        mode = "submit"
        if "--list" in args or "-l" in args:
            mode = "list"
        elif "--result" in args or any(a.startswith("--result=") for a in args):
            mode = "result"
        elif "--details" in args or "-d" in args:
            mode = "details"
        if found is None or (found in _READS and mode not in _READS):
            found = mode  # a real submission wins over a --list / --result in the same command
    return found


_RE_ROUND = re.compile(r"^\s*Round:\s*(\S+)(?:\s*\(remaining submissions:\s*(-?\d+)\))?", re.M)
_RE_RESULTS = re.compile(r"^\s*(\S+) Results\s*$", re.M)
_RE_ERROR_BLOCK = re.compile(r"^\s*(\S+): ERROR\s*$", re.M)
_RE_ERROR_LINE = re.compile(r"^\s*ERROR: (.*\S)\s*$", re.M)
_RE_VALID = re.compile(r"^\s*Valid:\s*(\S+)", re.M)
_RE_SCORE = re.compile(r"^\s*Score:\s*(\S+)", re.M)
_RE_PASS_RATE = re.compile(r"^\s*Pass rate:\s*(-?[\d.]+(?:[eE][-+]?\d+)?)%", re.M)
_RE_PASSED = re.compile(r"^\s*Passed:\s*(\d+)/(\d+)", re.M)
_RE_COOLDOWN = re.compile(r"^\s*COOLDOWN:\s*(.*?)\s*$", re.M)
_RE_LIMIT = re.compile(r"^\s*SUBMISSION LIMIT REACHED:\s*(.*?)\s*$", re.M)
_RE_TOTAL_SUB = re.compile(r"^\s*Total submissions:\s*(\d+)", re.M)
_RE_BEST_RATE = re.compile(r"^\s*Best pass rate:\s*(-?[\d.]+(?:[eE][-+]?\d+)?)%", re.M)
_RE_BEST_SCORE = re.compile(r"^\s*Best score:\s*(\S+)", re.M)
_RE_MORE = re.compile(r"^\s*\.\.\. and (\d+) more\s*$")
# newer sforge-submit (docs/sforge-judge.md): --result, the submission id, evaluation errors, 503
_RE_READING = re.compile(r"^\s*Reading existing submission:\s*(\S+)(?:\s*\((\S+)\))?", re.M)
_RE_SUB_ID = re.compile(r"^\s*Submission ID:\s*(\S+)", re.M)
_RE_EVAL_FAILED = re.compile(r"^\s*ERROR: (\S+) evaluation failed: ?(.*?)\s*$", re.M)
_RE_NO_REPORT = re.compile(r"^\s*ERROR: (\S+) completed without a report", re.M)
_RE_HTTP = re.compile(r"\(HTTP (\d{3})\)|returned HTTP (\d{3})")
_RULE = "=" * 40


def _pct(s: str) -> Optional[float]:
    try:
        f = float(s)
    except ValueError:
        return None
    return round(f / 100.0, 6) if math.isfinite(f) else None


def _num(s: str) -> tuple[Optional[float], Optional[str]]:
    try:
        return finite_or_none(float(s))
    except ValueError:
        return None, "non_numeric"


def _indented_block(lines: list[str], header: str) -> Optional[list[str]]:
    """Lines after a ``  <header>`` line up to the next blank / rule / less-indented line."""
    for i, ln in enumerate(lines):
        if ln.strip() == header and (len(ln) - len(ln.lstrip())) <= 2:
            out = []
            for nxt in lines[i + 1 :]:
                st = nxt.strip()
                if not st or st.startswith(_RULE) or (len(nxt) - len(nxt.lstrip())) < 4:
                    break
                out.append(st)
            return out
    return None


def parse_sforge_submit_output(text: str) -> dict[str, Any]:
    """Parse what ``sforge-submit`` printed (docs/sforge-judge.md, ``sforge-submit``); ``{}`` when
    nothing is recognised.

    Keys (present only when found):

    * ``mode``: ``"submit"``, ``"list"`` or ``"result"`` (``Reading existing
      submission: <id> (<round>)``: ``--result`` read a graded submission again;
      its ``round`` names the round read, not a new one); ``status``:
      ``"completed"`` (results block), ``"error"`` (``agent-N: ERROR`` block, or
      newer ``ERROR: <id> evaluation failed: …`` / ``… completed without a
      report``), ``"rejected"`` (``COOLDOWN:`` / ``SUBMISSION LIMIT REACHED:``,
      or ``rejected`` ``"judge_full"``: ``HTTP 503``, the judge's queue was full),
      ``"failed"`` (an ``ERROR: ...`` line of the script; ``http_status`` when it
      names one, ``acceptance_unknown`` when the reply was lost), ``"pending"``
      (submitted, no result printed — e.g. the shell tool timed out);
    * ``submission_id`` (newer ``Submission ID:`` line or ``--result``);
    * ``round`` (``agent-N``), ``remaining`` (int), ``valid`` (bool; true unless
      ``Valid: no``), ``score`` (float; ``score_flag`` when not finite),
      ``pass_rate`` (0–1 from ``Pass rate: NN.N%``), ``passed``, ``total``,
      ``summary``, ``metrics`` (dict of str), ``failed`` (list of names),
      ``failed_more`` (int), ``all_passed`` (bool), ``error`` (text),
      ``rejected`` (``"cooldown"`` / ``"limit"``) with ``detail``;
    * list mode: ``total_submissions``, ``best_pass_rate`` (0–1), ``best_score``,
      ``entries`` = [{round, status, valid, pass_rate, score, summary}] read by the
      table's header (1.1.0 ``ROUND STATUS VALID …``; newer tables add a
      ``SUBMISSION_ID`` column, kept as ``submission_id``; ``valid`` None for ``-``).
    """
    if not isinstance(text, str) or not text:
        return {}
    out: dict[str, Any] = {}
    if "Submission History" in text:
        out["mode"] = "list"
        _parse_history(text, out)
        return out

    reading = _RE_READING.search(text)
    if reading:  # --result: a graded submission read again (no new submission, no round)
        out["submission_id"] = reading.group(1)
        if reading.group(2):
            out["round"] = reading.group(2)
    else:
        m = _RE_SUB_ID.search(text)
        if m:
            out["submission_id"] = m.group(1)
    m = _RE_ROUND.search(text)
    if m:
        out["round"] = m.group(1)
        if m.group(2) is not None:
            out["remaining"] = int(m.group(2))
    res = _RE_RESULTS.search(text)
    err_block = _RE_ERROR_BLOCK.search(text)
    lines = text.splitlines()
    if res:
        out["status"] = "completed"
        label = res.group(1)
        if "round" not in out and label != "submission":
            out["round"] = label
        v = _RE_VALID.search(text)
        out["valid"] = not (v and v.group(1).lower() in ("no", "false"))
        m = _RE_SCORE.search(text)
        if m:
            score, flag = _num(m.group(1))
            out["score"] = score
            if flag:
                out["score_flag"] = flag
        m = _RE_PASS_RATE.search(text)
        if m:
            out["pass_rate"] = _pct(m.group(1))
        m = _RE_PASSED.search(text)
        if m:
            out["passed"] = int(m.group(1))
            out["total"] = int(m.group(2))
        block = _indented_block(lines, "Summary:")
        if block:
            out["summary"] = "\n".join(block)
        block = _indented_block(lines, "Metrics:")
        if block:
            metrics = {}
            for ln in block:
                k, sep, v2 = ln.partition(":")
                if sep:
                    metrics[k.strip()] = v2.strip()
            out["metrics"] = metrics
        block = _indented_block(lines, "Failed checks:")
        if block is None:
            block = _indented_block(lines, "Failed tests:")
        if block is not None:
            failed = []
            for ln in block:
                mm = _RE_MORE.match(ln)
                if mm:
                    out["failed_more"] = int(mm.group(1))
                elif ln.startswith("- "):
                    failed.append(ln[2:])
            out["failed"] = failed
        if "All tests passed!" in text:
            out["all_passed"] = True
    elif err_block:
        out["status"] = "error"
        label = err_block.group(1)
        if "round" not in out and label != "submission":
            out["round"] = label
        err_lines: list[str] = []
        for ln in text[err_block.end() :].splitlines():
            st = ln.strip()
            if st.startswith(_RULE):
                if err_lines:
                    break
                continue
            if not st and not err_lines:
                continue
            err_lines.append(st)
        out["error"] = "\n".join(err_lines).strip()
    else:
        m = _RE_LIMIT.search(text)
        m2 = _RE_COOLDOWN.search(text)
        ev = _RE_EVAL_FAILED.search(text) or _RE_NO_REPORT.search(text)
        hit = m or m2
        if hit:
            out["status"] = "rejected"
            out["rejected"] = "limit" if m else "cooldown"
            out["detail"] = hit.group(1)
        elif ev:  # the judge's evaluation failed (status "error") or left no report: no score
            out["status"] = "error"
            out.setdefault("submission_id", ev.group(1))
            out["error"] = (ev.group(2) if ev.re is _RE_EVAL_FAILED else "") or "completed without a report"
        else:
            m = _RE_ERROR_LINE.search(text)
            if m:
                out["status"] = "failed"
                out["error"] = m.group(1)
                h = _RE_HTTP.search(m.group(1))
                if h:
                    out["http_status"] = int(h.group(1) or h.group(2))
                if out.get("http_status") == 503:  # the judge's queue is full: refused, no round spent
                    out["status"] = "rejected"
                    out["rejected"] = "judge_full"
                    out["detail"] = m.group(1)
                elif "acceptance is unknown" in m.group(1):
                    out["acceptance_unknown"] = True
            elif "round" in out or "Submitting for evaluation" in text:
                out["status"] = "pending"
    if out:
        out["mode"] = "result" if reading else "submit"
    return out


def _parse_history(text: str, out: dict[str, Any]) -> None:
    m = _RE_TOTAL_SUB.search(text)
    if m:
        out["total_submissions"] = int(m.group(1))
    m = _RE_BEST_RATE.search(text)
    if m:
        out["best_pass_rate"] = _pct(m.group(1))
    m = _RE_BEST_SCORE.search(text)
    if m:
        out["best_score"] = _num(m.group(1))[0]
    entries: list[dict[str, Any]] = []
    cols: Optional[list[str]] = None
    for ln in text.splitlines():
        st = ln.strip()
        if cols is None:
            words = st.split()
            if "ROUND" in words and "PASS_RATE" in words:
                # 1.1.0: ROUND STATUS VALID PASS_RATE SCORE SUMMARY; newer: SUBMISSION_ID first
                cols = words
            continue
        if not st:
            if entries:
                break
            continue
        if st.startswith("-----") or st.startswith(_RULE):
            continue
        n_fixed = len(cols) - 1 if cols[-1] == "SUMMARY" else len(cols)
        parts = st.split(None, n_fixed)
        if len(parts) < n_fixed:
            continue
        row = dict(zip(cols, parts))
        rate, score, valid = row.get("PASS_RATE", "-"), row.get("SCORE", "-"), row.get("VALID", "-")
        entry = {
            "round": None if row.get("ROUND", "-") == "-" else row["ROUND"],
            "status": None if row.get("STATUS", "-") == "-" else row["STATUS"],
            # "no" / "yes"; the newer table writes "-" while no report says either
            "valid": None if valid == "-" else valid != "no",
            "pass_rate": _pct(rate[:-1]) if rate.endswith("%") else None,
            "score": None if score == "-" else _num(score)[0],
            "summary": row.get("SUMMARY", ""),
        }
        if "SUBMISSION_ID" in row:
            entry["submission_id"] = None if row["SUBMISSION_ID"] == "-" else row["SUBMISSION_ID"]
        entries.append(entry)
    out["entries"] = entries


def submit_summary(r: dict[str, Any]) -> str:
    if r.get("mode") == "list":
        n = r.get("total_submissions")
        best = r.get("best_pass_rate")
        s = f"sforge-submit --list: {n if n is not None else '?'} submissions"
        if best is not None:
            s += f", best pass rate {best * 100:.1f}%"
        if r.get("best_score") is not None:
            s += f", best score {r['best_score']:g}"
        return s
    label = r.get("round") or "submission"
    if r.get("mode") == "result":
        label = f"sforge-submit --result {r.get('submission_id') or '?'} ({r.get('round') or '?'}, read again)"
    st = r.get("status")
    if st == "completed":
        parts = []
        if r.get("valid") is False:
            parts.append("INVALID")
        if r.get("score") is not None:
            parts.append(f"score {r['score']:g}")
        if r.get("pass_rate") is not None:
            parts.append(f"pass {r['pass_rate'] * 100:.1f}%")
        if r.get("total") is not None:
            parts.append(f"({r.get('passed')}/{r['total']})")
        return f"{label}: " + (" ".join(parts) or "completed")
    if st == "error":
        return f"{label}: ERROR {r.get('error', '')}"
    if st == "rejected":
        if r.get("rejected") == "judge_full":
            return f"sforge-submit refused: judge full (HTTP 503), no round spent: {r.get('detail', '')}"
        return f"sforge-submit rejected ({r.get('rejected')}): {r.get('detail', '')}"
    if st == "failed":
        return f"sforge-submit failed: {r.get('error', '')}"
    return f"{label}: submitted, no result in output"
