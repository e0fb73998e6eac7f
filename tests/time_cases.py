"""The ISO-8601 table edgetui.times is held to, on every supported Python (tests/test_times.py).

Plain literals and the standard library only: tests/test_times.py also runs :func:`check` under the
other interpreters found on the machine, with only the repository on their path. An expected value
is (year, month, day, hour, minute, second, microsecond, UTC offset in minutes), turned into epoch
seconds by ``calendar.timegm``, not by the datetime parser under test; ``None`` = not a time.
"""

import calendar

CASES = [
    ("2026-07-11T17:18:23Z", (2026, 7, 11, 17, 18, 23, 0, 0)),
    ("2026-07-11T17:18:23.720Z", (2026, 7, 11, 17, 18, 23, 720000, 0)),
    # Python 3.10's datetime.fromisoformat fails on 1, 2, 4, 5, 7+ fraction digits and on Z
    ("2026-07-11T17:18:56.12Z", (2026, 7, 11, 17, 18, 56, 120000, 0)),
    ("2026-07-11T17:18:56.1Z", (2026, 7, 11, 17, 18, 56, 100000, 0)),
    ("2026-07-11T17:18:56.1234Z", (2026, 7, 11, 17, 18, 56, 123400, 0)),
    ("2026-07-11T17:18:56.12345Z", (2026, 7, 11, 17, 18, 56, 123450, 0)),
    ("2026-07-11T17:18:56.1234567Z", (2026, 7, 11, 17, 18, 56, 123456, 0)),
    # Docker's RFC 3339 nanoseconds: truncated to microseconds
    ("2026-07-11T17:18:56.123456789Z", (2026, 7, 11, 17, 18, 56, 123456, 0)),
    ("2026-07-11T17:18:56.999999999+00:00", (2026, 7, 11, 17, 18, 56, 999999, 0)),
    ("2026-07-11T17:18:56,5Z", (2026, 7, 11, 17, 18, 56, 500000, 0)),
    ("2026-07-11t17:18:56z", (2026, 7, 11, 17, 18, 56, 0, 0)),
    ("2026-07-11 17:18:56", (2026, 7, 11, 17, 18, 56, 0, 0)),
    # naive = UTC
    ("2026-07-11T17:18:23", (2026, 7, 11, 17, 18, 23, 0, 0)),
    ("2026-07-11T17:18", (2026, 7, 11, 17, 18, 0, 0, 0)),
    ("2026-07-11", (2026, 7, 11, 0, 0, 0, 0, 0)),
    ("2026-07-11T22:48:23+05:30", (2026, 7, 11, 22, 48, 23, 0, 330)),
    ("2026-07-11T22:48:23.5+0530", (2026, 7, 11, 22, 48, 23, 500000, 330)),
    ("2026-07-11T12:18:23-05", (2026, 7, 11, 12, 18, 23, 0, -300)),
    ("2026-07-11T17:18:23-00:00", (2026, 7, 11, 17, 18, 23, 0, 0)),
    ("  2026-07-11T17:18:23Z\n", (2026, 7, 11, 17, 18, 23, 0, 0)),
    ("2024-02-29T00:00:00Z", (2024, 2, 29, 0, 0, 0, 0, 0)),
    ("0001-01-01T00:00:00Z", (1, 1, 1, 0, 0, 0, 0, 0)),
    ("", None),
    ("not a time", None),
    ("2026-07-11T", None),
    ("2026-07-11T17", None),
    ("2026-07-11T17:18:23.Z", None),
    ("2026-07-11T17:18:23Zjunk", None),
    ("2026-07-11T17:18:23+24:00", None),
    ("2026-07-11T17:18:23+05:60", None),
    ("2026-13-01T00:00:00Z", None),
    ("2025-02-29T00:00:00Z", None),
    ("2026-07-11T24:00:00Z", None),
    ("2026-07-11T23:59:60Z", None),
    ("20260711T171823Z", None),
    ("2026-W28-6", None),
    ("１２３４-07-11", None),  # full-width digits: str.isdigit, not ASCII
    ("1748779200", None),
]


def expected_epoch(parts):
    if parts is None:
        return None
    y, mo, d, h, mi, s, us, off_min = parts
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) - off_min * 60 + us / 1e6


def check(to_epoch):
    """The cases ``to_epoch`` gets wrong, as lines (empty: all right)."""
    wrong = []
    for text, parts in CASES:
        want = expected_epoch(parts)
        got = to_epoch(text)
        if want is None or got is None:
            ok = want is got
        else:
            ok = abs(got - want) < 1e-6
        if not ok:
            wrong.append(f"{text!r}: got {got!r}, want {want!r}")
    return wrong
