"""Task variants: one task id can name different work or judge images (a judge repaired by digest,
a copied task definition), and SForge's own guidance is never to mix variants in one comparison or
splice their curves. A run's variant is its pair of image digests (``runs.work_image``,
``runs.judge_image``: docs/sforge-formats.md, "Task variants"); an unknown digest matches any.
"""

from __future__ import annotations

from typing import Iterable, Optional

__all__ = ["variant_of", "mixed_tasks", "mixed_note"]


def _short(image: str) -> str:
    """``sha256:0123456789ab…`` → ``0123456789ab`` (the 12 hex digits Docker shows)."""
    return image.split(":", 1)[1][:12] if image.startswith("sha256:") else image


def variant_of(work_image: Optional[str], judge_image: Optional[str]) -> Optional[str]:
    """A run's variant label, ``work <digest> judge <digest>`` (``?`` for an unknown one), or None
    when neither digest is known."""
    if not work_image and not judge_image:
        return None
    return f"work {_short(work_image) if work_image else '?'} judge {_short(judge_image) if judge_image else '?'}"


def _parts(variant: str) -> tuple[str, str]:
    words = variant.split()
    return (words[1], words[3]) if len(words) == 4 else (variant, variant)


def mixed_tasks(pairs: Iterable[tuple[str, Optional[str]]]) -> list[str]:
    """The tasks, sorted, whose runs among ``(task, variant)`` pairs carry different known work
    digests or different known judge digests (an unknown ``?`` or a None variant mixes nothing)."""
    seen: dict[str, tuple[set, set]] = {}
    for task, variant in pairs:
        if not variant:
            continue
        work, judge = _parts(variant)
        w, j = seen.setdefault(task, (set(), set()))
        if work != "?":
            w.add(work)
        if judge != "?":
            j.add(judge)
    return sorted(t for t, (w, j) in seen.items() if len(w) > 1 or len(j) > 1)


def mixed_note(tasks: Iterable[str]) -> Optional[str]:
    """One line saying that a result mixes task variants, or None when ``tasks`` is empty."""
    tasks = list(tasks)
    if not tasks:
        return None
    return "mixes task variants (different work/judge image digests) of " + ", ".join(tasks)
