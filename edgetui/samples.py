"""Where the bundled sample runs live (shipped as package data ``edgetui.sample_runs``)."""

from __future__ import annotations

from pathlib import Path

from importlib.resources import files


def samples_dir() -> Path:
    """Directory holding ``runs/`` and ``tasks/`` of the generated sample runs."""
    try:
        p = Path(str(files("edgetui.sample_runs")))
        if (p / "runs").is_dir():
            return p
    except (ModuleNotFoundError, TypeError):  # no packaged sample runs (a source checkout): the repository's folder
        pass
    return Path(__file__).resolve().parent.parent / "sample_runs"


def sample_sets() -> list[tuple[Path, Path]]:
    """``(runs dir, tasks dir)`` of each bundled set: the generated runs, and the runs recorded with
    the real SForge harness (``genuine/``, with their own tasks) when present."""
    d = samples_dir()
    sets = [(d / "runs", d / "tasks")]
    if (d / "genuine" / "runs").is_dir():
        sets.append((d / "genuine" / "runs", d / "genuine" / "tasks"))
    return sets


def sample_set_of(path: Path) -> tuple[Path, Path] | None:
    """The bundled set (:func:`sample_sets`) ``path`` lies in (a runs root, a run or a task
    directory of it), else None: what lies there is recorded as a sample whoever records it."""
    try:
        p = Path(path).expanduser().resolve()
    except OSError:  # (a path that cannot be resolved, a loop of links: not one of the samples)
        return None
    for runs, tasks in sample_sets():
        r = runs.resolve()
        if p == r or r in p.parents:
            return runs, tasks
    return None
