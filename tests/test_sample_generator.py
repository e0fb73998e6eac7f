"""The committed sample runs are what the generator writes.

``sample_runs/generate.py --out DIR`` regenerates the bundled samples into a temporary folder;
every file the generator owns (``OWNED``: ``tasks/``, ``runs/``, ``_truth/``, ``README.md``) is
compared with the committed one, names and bytes, so a generator change that changes a sample
fails here until the samples are regenerated and committed with it. The outputs of
``make_judge_run.py`` (``KEEP``, recorded with the real judge) are copied in first, as the
generator leaves them in place and its README describes them; ``genuine/`` (recorded by the real
harness) is not the generator's and must come out untouched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from edgetui.sample_runs.generator.bundled import KEEP, OWNED

SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"


def owned_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` that the generator owns, by its path relative to ``root``."""
    found = {}
    for name in OWNED:
        top = root / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for p in paths:
            found[p.relative_to(root).as_posix()] = p.read_bytes()
    return found


def test_what_the_generator_owns_leaves_out_the_recorded_runs():
    assert OWNED == ("tasks", "runs", "_truth", "README.md")
    assert "genuine" not in OWNED and all(k.split("/")[0] in OWNED for k in KEEP)
    assert all((SAMPLES / k).exists() for k in KEEP)


def test_the_committed_samples_are_what_the_generator_writes(tmp_path):
    out = tmp_path / "samples"
    for rel in KEEP:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (SAMPLES / rel).is_dir() else shutil.copy2
        copy(SAMPLES / rel, out / rel)
    sentinel = out / "genuine" / "runs" / "recorded.txt"
    sentinel.parent.mkdir(parents=True)
    sentinel.write_text("recorded by the real harness\n")

    subprocess.run([sys.executable, str(SAMPLES / "generate.py"), "--out", str(out)], check=True)

    # nothing outside what it owns: the recorded runs are left as they were
    assert sorted(p.name for p in out.iterdir()) == sorted([*OWNED, "genuine"])
    assert [p for p in (out / "genuine").rglob("*") if p.is_file()] == [sentinel]
    assert sentinel.read_text() == "recorded by the real harness\n"

    want, got = owned_files(SAMPLES), owned_files(out)
    assert len(want) > 1000  # every run's files, not an empty walk
    assert sorted(set(want) - set(got)) == [], "committed but no longer generated"
    assert sorted(set(got) - set(want)) == [], "generated but not committed"
    differ = sorted(rel for rel in want if want[rel] != got[rel])
    assert differ == [], (
        f"{len(differ)} generated sample files differ from the committed ones, e.g. {differ[:5]}: "
        "regenerate with `python sample_runs/generate.py` and commit the samples with the change"
    )
