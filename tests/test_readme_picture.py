"""The README's picture (replay.svg) is what the app draws today (tests/readme_picture.py)."""

from __future__ import annotations

import asyncio

import readme_picture


def test_readme_picture_is_current():
    fresh = asyncio.run(readme_picture.render())
    committed = readme_picture.PICTURE.read_text()
    assert "ReplayScreen" in fresh or "gw_signal_search" in fresh
    assert fresh == committed, "the replay screen changed: run `python tests/readme_picture.py` and commit replay.svg"
