"""Acceptance of the reframing-moment detector on generated gravitational-wave-like runs.

The generator of these runs (``sample_runs/generate.py --moment-runs``: the module
``sample_runs/generator/moment_runs.py`` and every generator module it imports) was frozen first
(the SHA-256 of each of its modules is in docs/moments.md and checked here); the detector's
parameters (``edgetui.replay.moments.DEFAULT_PARAMS``) were tuned on seeds 101-118 (controls 107, 108) and on the earlier test sets docs/moments.md
lists; the seeds below were chosen after the last change (of the generator: its runs gained
submission archives; its later split into modules changed no file of the runs) and never used
for tuning.

Each run plants 4 reframing moments (a behaviour change, then a jump of 1-5 x the spread of
the non-improving scores) and distractors: 3 behaviour changes without a jump, 3 jumps
without a behaviour change, lucky noise (a new best by a hair) and small tuning gains. A
planted moment is found when a ``reframe`` moment lies within ±1 submission of its round,
counted over all graded rounds in result-known order.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from edgetui.store.database import open_db
from edgetui.record.ingest import ingest_paths
from edgetui.record.moments_table import detect_run, load_series

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "sample_runs" / "generator"
PACKAGE = "edgetui.sample_runs.generator"
#: a line of docs/moments.md's list of frozen modules: "- `sample_runs/generator/NAME.py` SHA-256 `HEX`"
FROZEN_LINE = re.compile(r"^- `sample_runs/generator/(\w+\.py)` SHA-256 `([0-9a-f]{64})`$", re.M)
TEST_SEEDS = (10313, 10427, 10531, 10639, 10753)
CONTROL_SEEDS = (10861, 10979)


def frozen_modules() -> set[str]:
    """The generator modules the moment runs depend on: ``moment_runs.py`` and every module of
    ``sample_runs/generator/`` it imports, directly or through another."""
    todo, seen = ["moment_runs"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(ast.parse((GENERATOR / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [a.name[len(PACKAGE) + 1 :] for a in node.names if a.name.startswith(PACKAGE + ".")]
            elif isinstance(node, ast.ImportFrom):
                module = PACKAGE if node.level == 1 else node.module or ""
                if node.level == 1 and node.module:
                    module += "." + node.module
                if module == PACKAGE:  # from . import x / from edgetui.sample_runs.generator import x
                    todo += [a.name for a in node.names]
                elif module.startswith(PACKAGE + "."):
                    todo.append(module[len(PACKAGE) + 1 :])
    return {f"{name}.py" for name in seen}


def test_the_generator_is_the_frozen_one():
    stated = dict(FROZEN_LINE.findall((ROOT / "docs" / "moments.md").read_text(encoding="utf-8")))
    assert stated, "docs/moments.md states the SHA-256 of each frozen generator module"
    frozen = frozen_modules()
    assert {"moment_runs.py", "gw_run.py"} <= frozen  # the walk follows the imports
    assert set(stated) == frozen, "docs/moments.md must list exactly the modules the moment runs import"
    for name in sorted(frozen):
        digest = hashlib.sha256((GENERATOR / name).read_bytes()).hexdigest()
        assert digest == stated[name], (
            f"sample_runs/generator/{name} changed after the moment detector was tuned on its runs: "
            "re-freeze it (new hash in docs/moments.md) and choose new test seeds, unless every "
            "file of the moment runs stayed byte for byte the same (docs/moments.md says how to check)"
        )
    # ruff format leaves exactly these alone (a reformat would change their hashes)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    unformatted = {Path(p).name for p in config["tool"]["ruff"]["format"]["exclude"] if "/generator/" in p}
    assert unformatted == frozen, "pyproject.toml's [tool.ruff.format] exclude lists the frozen modules"
    # the package's __init__ runs on every import of a frozen module: it holds only its docstring
    body = ast.parse((GENERATOR / "__init__.py").read_text(encoding="utf-8")).body
    assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("moment-runs")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "sample_runs" / "generate.py"),
            "--moment-runs",
            str(root),
            *map(str, TEST_SEEDS),
            "--control",
            *map(str, CONTROL_SEEDS),
        ],
        check=True,
    )
    truths = [json.loads(p.read_text()) for p in sorted((root / "_truth").glob("*.json"))]
    assert sorted(t["seed"] for t in truths) == sorted(TEST_SEEDS + CONTROL_SEEDS)
    conn = open_db(root / "m.duckdb")
    rep = ingest_paths(conn, [root / "runs"], tasks_dir=root / "tasks")
    assert len(rep.runs) == len(truths) and not rep.failed, rep.messages
    yield conn, truths
    conn.close()


def _check(conn, truth):
    key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [truth["run_id"]]).fetchone()[0]
    series, _ = load_series(conn, key)
    pos = {g.round: g.index for g in series}
    found = [m.index for m in detect_run(conn, key) if m.detector == "reframe"]
    planted = [pos[p["round"]] for p in truth["planted"]]
    recall = sum(any(abs(p - f) <= 1 for f in found) for p in planted)
    true_pos = sum(any(abs(p - f) <= 1 for p in planted) for f in found)
    return planted, found, recall, true_pos


@pytest.mark.parametrize("seed", TEST_SEEDS)
def test_every_planted_moment_is_found_with_precision_at_least_0_6(generated, seed):
    conn, truths = generated
    truth = next(t for t in truths if t["seed"] == seed and not t["control"])
    assert len(truth["planted"]) == 4 and len(truth["distractors"]) == 6
    # the distractors are there: jumps without a behaviour change are new bests as large as the moments
    jumps = [d for d in truth["distractors"] if d["kind"] == "jumponly"]
    assert len(jumps) == 3 and all(1.0 <= d["jump_sigma"] <= 5.0 for d in truth["distractors"] + truth["planted"])
    planted, found, recall, true_pos = _check(conn, truth)
    assert recall == len(planted), f"seed {seed}: planted at {planted}, found {found}"
    assert found and true_pos / len(found) >= 0.6, f"seed {seed}: planted at {planted}, found {found}"


@pytest.mark.parametrize("seed", CONTROL_SEEDS)
def test_a_smooth_control_run_reports_at_most_one_moment(generated, seed):
    conn, truths = generated
    truth = next(t for t in truths if t["seed"] == seed and t["control"])
    assert truth["planted"] == [] and len(truth["tuning_rounds"]) >= 5  # it climbs, in small steps
    _, found, _, _ = _check(conn, truth)
    assert len(found) <= 1, f"control seed {seed}: {found}"


def test_the_why_of_each_planted_moment_diffs_the_generated_archives(generated):
    from edgetui.analysis.why_new_best import why_of

    conn, truths = generated
    truth = next(t for t in truths if t["seed"] == TEST_SEEDS[0])
    key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [truth["run_id"]]).fetchone()[0]
    for p in truth["planted"]:
        w = why_of(conn, key, p["round"])
        d = w["diff"]
        assert d["error"] is None and d["against"] == w["prev_round"] and d["files"], p["round"]
        # the reframing's edits are in the diff; a new module it wrote is an added file
        assert any(x.startswith("+") and "# " in x for f in d["files"] for x in f["lines"])
        if p["new_file"]:
            assert any(f["status"] == "added" for f in d["files"]), p["round"]
        assert w["actions"]["edits"]["n"] >= 3 and w["notes"]["thinking"]
