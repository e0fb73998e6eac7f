"""``col IN (?, ...)`` for a list of keys, as SQL text and its parameters' order (no Textual)."""

from __future__ import annotations


def in_list(col: str, keys: list) -> str:
    """SQL ``col = ?`` (one key: the scan's zone maps prune as before) or ``col IN (?, ?, ...)``,
    with ``keys`` as its parameters, in order."""
    return f"{col} = ?" if len(keys) == 1 else f"{col} IN ({', '.join('?' for _ in keys)})"
