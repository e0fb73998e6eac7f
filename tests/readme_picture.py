"""The README's picture: the replay screen of the bundled gravitational-wave sample run, drawn by
the app itself (Textual's ``export_screenshot``, an SVG), at the moment of its biggest jump.

``python tests/readme_picture.py`` writes ``replay.svg`` beside the README;
``tests/test_readme_picture.py`` draws it again and fails when the committed file differs
(run the script and commit the file when a screen change is intended).
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "replay.svg"
SIZE = (120, 36)
RUN = "opus48-edge-3-20260312005800"


async def render() -> str:
    """The SVG text (ids made stable: Textual numbers its SVG classes by a hash of the content)."""
    sys.path.insert(0, str(ROOT))
    from edgetui.views.app import EdgeTUIApp
    from edgetui.cli.main import main

    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "pic.duckdb"
        samples = ROOT / "sample_runs"
        assert (
            main(
                [
                    "--db",
                    str(db),
                    "ingest",
                    "-q",
                    "--sample",
                    "--tasks-dir",
                    str(samples / "tasks"),
                    str(samples / "runs" / RUN),
                ]
            )
            == 0
        )
        from edgetui.store.database import open_db

        conn = open_db(db, read_only=True)
        rk = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [RUN]).fetchone()[0]
        conn.close()
        app = EdgeTUIApp(db, rk)
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(200):
                screen = app.screen
                if getattr(screen, "cursor", None) is not None:
                    break
                await pilot.pause(0.02)
            for _ in range(200):  # the reframing moments (✦) are read after the run
                if getattr(app.screen, "moments", None):
                    break
                await pilot.pause(0.02)
            for key in ("g", "b", "b", "b", "b", "b", "b"):  # along the new bests, into the climb
                await pilot.press(key)
            await pilot.pause(0.2)
            svg = app.export_screenshot(title="edgetui — replay of a 12-hour run")
    return re.sub(r"terminal-\d+", "terminal", svg)


def main() -> None:
    PICTURE.write_text(asyncio.run(render()))
    print(f"wrote {PICTURE}")


if __name__ == "__main__":
    main()
