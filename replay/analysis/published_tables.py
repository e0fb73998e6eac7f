"""EdgeBench's published tables, read from the Markdown of its README (the *Leaderboard* section of
https://github.com/ByteDance-Seed/EdgeBench), as the CSV rows the analysis commands read
(``edgetui edgebench-csv README.md -o DIR``; docs/analysis.md). Nothing of EdgeBench ships with
edgetui: the user downloads the README, this turns its tables into three tables:

* **leaderboard** ``suite,model,hours,score``: each ``### … (N tasks)`` table of ``| Model | @2h | … |``
  (suite ``full134`` for "Full Benchmark (134 tasks)", ``open51`` for "Open-Source Subset (51 tasks)");
* **category** ``suite,model,category,score``: each "Category Scores @12h (N tasks)" table;
* **per-task** ``task,category,model,hours,score``: the "Per-Task Scores by Time Budget" table, each
  model cell ``a/b/c/d/e/f`` at @2h … @12h, ``—`` a missing value (an empty score); a column heading
  (``Opus 4.8``) is named as the leaderboard names its model (``Claude Opus 4.8``) when one ends with it.

Bold markers are dropped. Raises ``ValueError`` naming the line of a table it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["PublishedTables", "read_published_tables"]

_TASKS = re.compile(r"\((\d+)\s+tasks\)", re.IGNORECASE)
_HOUR = re.compile(r"^@(\d+(?:\.\d+)?)h$")
_MISSING = {"—", "–", "-", ""}


@dataclass
class PublishedTables:
    """The rows of each table (header first in :attr:`HEADERS`)."""

    leaderboard: list[tuple] = field(default_factory=list)
    category: list[tuple] = field(default_factory=list)
    per_task: list[tuple] = field(default_factory=list)
    #: the suite of the per-task table (from its title's task count: ``open51``)
    per_task_suite: str = "per_task"

    HEADERS = {
        "leaderboard": ("suite", "model", "hours", "score"),
        "category": ("suite", "model", "category", "score"),
        "per_task": ("task", "category", "model", "hours", "score"),
    }


def _cells(line: str) -> list[str]:
    return [c.strip().replace("**", "").strip() for c in line.strip().strip("|").split("|")]


def _suite(title: str, known: dict[str, str]) -> str:
    """``full134`` / ``open51`` from a heading; a category table's title ("Category Scores @12h (51
    tasks)") takes the suite of the leaderboard table of that many tasks."""
    m = _TASKS.search(title)
    n = m.group(1) if m else ""
    low = title.lower()
    if "full" in low or "open" in low:
        known[n] = ("full" if "full" in low else "open") + n
    return known.get(n, "suite" + n)


def _num(text: str, where: str) -> float | None:
    if text in _MISSING:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a score") from None


def read_published_tables(text: str, source: str = "README.md") -> PublishedTables:
    """The tables of EdgeBench's README ``text`` (see the module)."""
    out = PublishedTables()
    lines = text.splitlines()
    title = ""
    suites: dict[str, str] = {}
    per_task_models: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            title = line.lstrip("#").strip()
        elif "<summary>" in line:
            title = re.sub(r"<[^>]+>", "", line).strip()
        if not (line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|:- ")):
            i += 1
            continue
        head = _cells(line)
        body = []
        j = i + 2
        while j < len(lines) and lines[j].strip().startswith("|"):
            body.append((j + 1, _cells(lines[j])))
            j += 1
        low = title.lower()
        if head and head[0].lower() == "model" and all(_HOUR.match(h) for h in head[1:]) and len(head) > 1:
            hours = [float(m.group(1)) for h in head[1:] if (m := _HOUR.match(h))]
            for n, row in body:
                for h, v in zip(hours, row[1:]):
                    out.leaderboard.append((_suite(title, suites), row[0], h, _num(v, f"{source}: line {n}")))
        elif head and head[0].lower() == "model" and "categor" in low:
            for n, row in body:
                for cat, v in zip(head[1:], row[1:]):
                    out.category.append((_suite(title, suites), row[0], cat, _num(v, f"{source}: line {n}")))
        elif head[:2] and [h.lower() for h in head[:2]] == ["task", "category"]:
            per_task_models = head[2:]
            out.per_task_suite = _suite(title, suites)
            hours = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
            m = re.search(r"`([^`]*@[^`]*)`", " ".join(lines[max(0, i - 6) : i]))
            if m:  # "Each model cell reports scores at `@2h / @4h / …`"
                hours = [float(x) for x in re.findall(r"@(\d+(?:\.\d+)?)h", m.group(1))]
            for n, row in body:
                for model, cell in zip(per_task_models, row[2:]):
                    vals = [v.strip() for v in cell.split("/")]
                    if len(vals) != len(hours):
                        raise ValueError(
                            f"{source}: line {n}: {cell!r} has {len(vals)} values, the table's hours are {len(hours)}"
                        )
                    for h, v in zip(hours, vals):
                        out.per_task.append((row[0], row[1], model, h, _num(v, f"{source}: line {n}")))
        i = j
    names = sorted({r[1] for r in out.leaderboard} | {r[1] for r in out.category})
    rename = {}
    for m in {r[2] for r in out.per_task}:
        full = [nm for nm in names if nm == m or nm.endswith(" " + m)]
        rename[m] = full[0] if len(full) == 1 else m
    out.per_task = [(t, c, rename[m], h, v) for t, c, m, h, v in out.per_task]
    if not (out.leaderboard or out.category or out.per_task):
        raise ValueError(f"{source}: no EdgeBench table found (a '| Model | @2h | … |' or '| Task | Category | … |')")
    return out
