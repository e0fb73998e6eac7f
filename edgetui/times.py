"""The one ISO-8601 time parser: the same answer on every supported Python.

``datetime.fromisoformat`` is not that parser: on Python 3.10 it takes neither ``Z`` nor a
fraction of other than 3 or 6 digits (``…:56.12Z`` fails there and parses on 3.11), and 3.11
widened it again (basic format, week dates). Every timestamp edgetui reads from a transcript,
a container engine or a run folder goes through :func:`parse_iso8601`; a source's extras (Claude's
epoch numbers, Docker's zero time) are thin wrappers beside that source's parser.

The grammar (docs/formats.md, "Timestamps"):

    YYYY-MM-DD[(T|t|space)HH:MM[:SS[(.|,)F+]][Z|z|±HH[:]MM|±HH]]

Fraction digits beyond microseconds are dropped (truncated, as Python 3.11+ does); a time
without zone is UTC; surrounding whitespace is ignored. Anything else (leap second ``:60``,
``24:00``, an offset of 24 h or more, trailing text) is ``None``, never an exception.
"""

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

__all__ = ["parse_iso8601", "iso8601_to_epoch"]

_ISO8601 = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?\s*",
    re.ASCII,
)

_ZONES: dict[tuple[str, int, int], timezone] = {}


def _zone(sign: str, hours: int, minutes: int) -> Optional[timezone]:
    key = (sign, hours, minutes)
    tz = _ZONES.get(key)
    if tz is None:
        if hours > 23 or minutes > 59:
            return None
        delta = timedelta(hours=hours, minutes=minutes)
        tz = timezone.utc if not delta else timezone(-delta if sign == "-" else delta)
        if len(_ZONES) < 256:  # a cache of the offsets seen, bounded against hostile input
            _ZONES[key] = tz
    return tz


def parse_iso8601(text: str) -> Optional[datetime]:
    """An aware datetime for an ISO-8601 date or date-time (naive = UTC); ``None`` if not one."""
    m = _ISO8601.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, zulu, sign, oh, om = m.groups()
    if sign is not None:
        tz = _zone(sign, int(oh), int(om or 0))
        if tz is None:
            return None
    else:
        tz = timezone.utc
    us = int((frac + "00000")[:6]) if frac else 0
    try:
        return datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), us, tzinfo=tz)
    except ValueError:  # month 13, February 30, hour 24, second 60, year 0
        return None


def iso8601_to_epoch(value: Any) -> Optional[float]:
    """Epoch seconds UTC of an ISO-8601 string (:func:`parse_iso8601`); ``None`` for anything else."""
    if not isinstance(value, str):
        return None
    dt = parse_iso8601(value)
    return None if dt is None else dt.timestamp()
