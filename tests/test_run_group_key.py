"""edgetui's run groups are SForge's: ``edgetui.replay.analysis.score_at.run_group_key`` against the
visualizer's own ``sforge.visualizer.scanner.run_group_key`` (the installed sforge==1.1.0) on the
run ids of the bundled sample runs, SForge's documented examples, edge cases of the suffix rule, and
generated ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgetui.replay.analysis.score_at import run_group_key

scanner = pytest.importorskip("sforge.visualizer.scanner", reason="sforge (a dev dependency) is not installed")

ROOT = Path(__file__).resolve().parents[1]

#: SForge's examples (its docstring and comment), siblings across machines, and the suffix rule's edges
IDS = [
    "glm51-n35-160-152-20260528172933",
    "glm51-n35-160-156-20260528172940",
    "glm51-n35-160",
    "0530-glm51-new-env",
    "opus48-edge-3-20260312005800",
    "gpt55-codex-20260402131500",
    "legacy-evolve-0115",
    "glm51-game-20260420",
    "judge-demo-001",
    "x-7-20260528172933-retry",
    "x-retry-7-20260528172933",  # -retry before or after the suffix
    "x-123456789012345",
    "x-1-123456789012345",
    "x-1-2026052817293",  # 15 / 13 digits: no timestamp
    "-1-20260528172933",
    "-20260528172933",
    "20260528172933",
    "",
    "a-b-c",
    "x-1-2-20260528172933",
    "x--20260528172933",
    "x-20260528172933-20260528172934",
    "x-1-20260528172933\n",  # `$` matches before a final newline in both: the newline stays
    "a\nb-1-20260528172933",  # a newline inside: SForge strips the suffix all the same
    "x-١٢-٢٠٢٦٠٥٢٨١٧٢٩٣٣",  # Unicode digits are \\d to Python's re in both
]


def _sample_run_ids() -> list[str]:
    """Run ids as SForge names them: the directories under each runs/ folder of sample_runs (flat,
    or one level down under a machine folder such as 10.0.0.7)."""
    out = set()
    for runs in ROOT.glob("sample_runs/**/runs"):
        for d in runs.iterdir():
            if d.is_dir():
                out.add(d.name)
                out.update(c.name for c in d.iterdir() if c.is_dir() and c.name != "tasks")
    return sorted(out)


@pytest.mark.parametrize("run_id", IDS + _sample_run_ids())
def test_same_group_as_sforge(run_id):
    assert run_group_key(run_id) == scanner.run_group_key(run_id)


def test_siblings_merge_and_experiments_stay_apart():
    keys = {run_group_key(r) for r in ("glm51-n35-160-152-20260528172933", "glm51-n35-160-156-20260528172940")}
    assert keys == {"glm51-n35-160"}
    assert run_group_key("0530-glm51-new-env") == "0530-glm51-new-env"
    assert run_group_key(None) == ""  # a run without an id: the empty group, not an error


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["-", "1", "2", "0", "a", "\n", "-20260528172933", "-7", "retry", "9" * 14]), max_size=12
    ).map("".join)
)
def test_generated_ids_group_as_sforge(run_id):
    assert run_group_key(run_id) == scanner.run_group_key(run_id)
