"""`edgetui edgebench-csv`: EdgeBench's README (its Leaderboard section's tables) turned into the CSV files
the analysis commands read (edgetui.replay.analysis.published_tables). edgetui ships none of EdgeBench's
data: the README here is written by the test, in the layout of EdgeBench's, from the shared data folder's
tables, and the command must give those tables back byte for byte."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from conftest import SHARED_DATA, need_shared_data
from edgetui.cli.main import main

FILES = ("edgebench_leaderboard.csv", "edgebench_category_12h.csv", "edgebench_open51_per_task.csv")
TITLES = {"full134": "Full Benchmark (134 tasks)", "open51": "Open-Source Subset (51 tasks)"}


def _rows(name: str) -> list[dict]:
    with open(need_shared_data(SHARED_DATA / name), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _readme() -> str:
    """A README laid out as EdgeBench's: a leaderboard per suite, its category table folded under it,
    the per-task table folded, bold first rows, short model names in the per-task headings."""
    lb, cat, pt = (_rows(n) for n in FILES)
    out = ["# EdgeBench", "", "## Leaderboard", ""]
    for suite, title in TITLES.items():
        models = list(dict.fromkeys(r["model"] for r in lb if r["suite"] == suite))
        hours = list(dict.fromkeys(r["hours"] for r in lb if r["suite"] == suite))
        out += [f"### {title}", "", "| Model | " + " | ".join(f"@{h}h" for h in hours) + " |"]
        out += ["|:------|" + ":---:|" * len(hours)]
        for i, m in enumerate(models):
            vals = [
                next(r["score"] for r in lb if (r["suite"], r["model"], r["hours"]) == (suite, m, h)) for h in hours
            ]
            b = "**" if i == 0 else ""
            out.append(f"| {b}{m}{b} | " + " | ".join(f"{b}{v}{b}" for v in vals) + " |")
        n = title.split("(")[1].rstrip(")")
        cats = list(dict.fromkeys(r["category"] for r in cat if r["suite"] == suite))
        out += ["", "<details>", f"<summary><b>Category Scores @12h ({n})</b></summary>", ""]
        out += ["| Model | " + " | ".join(cats) + " |", "|:------|" + ":---:|" * len(cats)]
        for m in models:
            vals = [
                next(r["score"] for r in cat if (r["suite"], r["model"], r["category"]) == (suite, m, c)) for c in cats
            ]
            out.append(f"| {m} | " + " | ".join(vals) + " |")
        out += ["", "</details>", ""]
    models = list(dict.fromkeys(r["model"] for r in pt))
    out += ["<details>", "<summary><b>Per-Task Scores by Time Budget (51 tasks)</b></summary>", ""]
    out += [
        "Each model cell reports scores at `@2h / @4h / @6h / @8h / @10h / @12h`. Missing valid results "
        "are shown as `—`.",
        "",
    ]
    out += ["| Task | Category | " + " | ".join(m.replace("Claude ", "") for m in models) + " |"]
    out += ["|:-----|:-------|" + ":---------|" * len(models)]
    by: dict[tuple, list[str]] = {}
    for r in pt:
        by.setdefault((r["task"], r["category"], r["model"]), []).append(r["score"] or "—")
    for task, category in dict.fromkeys((r["task"], r["category"]) for r in pt):
        out.append(f"| {task} | {category} | " + " | ".join("/".join(by[(task, category, m)]) for m in models) + " |")
    return "\n".join(out + ["", "</details>", ""])


def test_readme_tables_come_back_as_the_csv_files_the_commands_read(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(_readme(), encoding="utf-8")
    out = tmp_path / "tables"
    out.mkdir()
    assert main(["edgebench-csv", str(readme), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "(1530 rows)" in said
    # the learning-speed table is not in the README: said, with how to get learning speed instead
    assert "no edgebench_learning_speed.csv" in said and "--release-dates FILE" in said
    assert not (out / "edgebench_learning_speed.csv").exists()
    for name in FILES:
        assert (out / name).read_bytes() == (SHARED_DATA / name).read_bytes(), name
    # and the commands read them: the leaderboard of the per-task table
    assert main(["leaderboard", "--csv", str(out / FILES[2]), "--no-categories", "--hours", "12"]) == 0
    assert "Claude Opus 4.8" in capsys.readouterr().out


def test_a_bad_cell_is_one_line_naming_the_line(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("### Full Benchmark (134 tasks)\n\n| Model | @2h | @4h |\n|:--|:--:|:--:|\n| M | 3.0 | x |\n")
    assert main(["edgebench-csv", str(readme), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{readme}: line 5: 'x' is not a score" in err and len(err.strip().splitlines()) == 1
    readme.write_text("no tables here\n")
    assert main(["edgebench-csv", str(readme), "-o", str(tmp_path)]) == 2
    assert "no EdgeBench table found" in capsys.readouterr().err


def test_a_missing_readme_is_one_line_saying_what_to_do(tmp_path, capsys):
    """Issue 37 trial: a missing file printed Python's `[Errno 2] No such file or directory: 'FILE'`."""
    readme = tmp_path / "edgebench-README.md"
    assert main(["edgebench-csv", str(readme), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Errno" not in err, err
    assert f"{readme}: no such file: save EdgeBench's README.md as {readme} first" in err
    assert "docs/analysis.md" in err


@pytest.mark.parametrize("cell", ["1.0/2.0", "1/2/3/4/5/6/7"])
def test_a_per_task_cell_of_another_length_is_refused(tmp_path, capsys, cell):
    readme = tmp_path / "README.md"
    readme.write_text(f"| Task | Category | Opus 4.8 |\n|:--|:--|:--|\n| t | c | {cell} |\n")
    assert main(["edgebench-csv", str(readme), "-o", str(tmp_path)]) == 2
    assert "line 3" in capsys.readouterr().err and not Path(tmp_path / FILES[2]).exists()
