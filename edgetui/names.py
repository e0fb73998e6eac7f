"""Names shown in fewer cells than they have: the part that tells a name apart from its neighbours.

Run ids of one runs root often share a long head (``opus48-copilot-``) and a long tail (a
timestamp); a cut in the middle then shows every run alike. As ``git`` abbreviates a hash to
the shortest prefix no other object shares, :func:`abbreviate` keeps of a name the head or the
tail that no other name of its column shares (:func:`shared_ends`), and fills the rest of the
width with the other end. Pure functions, no I/O; used by the command line's tables and the
screens alike.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["abbreviate", "abbreviate_all", "distinguishing_width", "shared_ends"]

#: what stands for the cells left out
ELLIPSIS = "…"


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def shared_ends(names: Iterable[str]) -> dict[str, tuple[int, int]]:
    """For each distinct name: how many of its first characters, and of its last, it shares with
    another name of ``names`` (the longest such head and tail). The first character past the head
    (or before the tail) is where it differs from every other name."""
    distinct = sorted(set(names))
    heads = {s: 0 for s in distinct}
    for a, b in zip(distinct, distinct[1:]):  # the longest shared head is with a neighbour in order
        n = _common_prefix(a, b)
        heads[a] = max(heads[a], n)
        heads[b] = max(heads[b], n)
    rev = sorted(distinct, key=lambda s: s[::-1])
    tails = {s: 0 for s in distinct}
    for a, b in zip(rev, rev[1:]):
        n = _common_prefix(a[::-1], b[::-1])
        tails[a] = max(tails[a], n)
        tails[b] = max(tails[b], n)
    return {s: (heads[s], tails[s]) for s in distinct}


def _need(name: str, head: int, tail: int) -> int:
    """Cells :func:`abbreviate` needs to keep ``name`` told apart (head or tail past the shared one)."""
    return min(len(name), 1 + min(head + 1, tail + 1))


def distinguishing_width(names: Iterable[str], floor: int = 8) -> int:
    """The fewest cells in which every name of ``names`` is still told apart by :func:`abbreviate`
    (at least ``floor``, at most the longest name)."""
    ends = shared_ends(names)
    if not ends:
        return 0
    longest = max(len(s) for s in ends)
    need = max(_need(s, h, t) for s, (h, t) in ends.items())
    return min(longest, max(floor, need))


def abbreviate(name: str, width: int, head: int = 0, tail: int = 0) -> str:
    """``name`` in at most ``width`` cells: whole when it fits; else a head and a tail around ``…``,
    one of them long enough to pass the ``head`` / ``tail`` it shares with other names (from
    :func:`shared_ends`), the other end filling what is left; when neither fits, the head and a
    window over the first character that differs (``opus…-task-b…``)."""
    n = len(name)
    if n <= width:
        return name
    if width < 3:
        return name[:width]
    room = width - 1
    options = []
    if head + 1 <= room:
        options.append((head + 1, 0))
    if tail + 1 <= room:
        options.append((0, tail + 1))
    if options:
        need_a, need_b = min(options, key=lambda o: o[0] + o[1])
        a = max(need_a, min(room - need_b, (room + 1) // 2))
        b = room - a
        return name[:a] + ELLIPSIS + (name[n - b :] if b else "")
    # neither end alone tells it apart within the width: a short head, then the first difference
    lead = min(6, room // 4)
    k = width - lead - 2  # the window, between two ellipses
    end = min(n, head + 1 + k // 3)
    start = end - k
    if start <= lead:
        return name[: width - 1] + ELLIPSIS
    if end >= n:
        return name[:lead] + ELLIPSIS + name[n - (width - lead - 1) :]
    return name[:lead] + ELLIPSIS + name[start:end] + ELLIPSIS


def abbreviate_all(names: list[str], width: int) -> list[str]:
    """Each of ``names`` in at most ``width`` cells, told apart from the others (:func:`abbreviate`)."""
    ends = shared_ends(names)
    return [abbreviate(s, width, *ends.get(s, (0, 0))) for s in names]
