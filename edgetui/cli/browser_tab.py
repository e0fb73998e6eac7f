"""One browser tab of ``edgetui serve``: the app, reading through the process holding the database.

textual-serve runs ``python -m edgetui.cli.browser_tab --db DB [--run KEY]`` for each tab
(:func:`edgetui.cli.serve.tab_command`), with Textual's web driver speaking over its pipes. The
app never opens the database file (:mod:`edgetui.store.holder_connection`); a failure is one line
on stderr, which textual-serve shows in the serving terminal.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from edgetui.error_log import EXIT_INPUT, EXIT_INTERNAL, log_to_file, report_internal_error
from edgetui.views.app import run_app


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="edgetui-browser-tab", description=__doc__)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--run", default=None, help="the run key to open on (else the run picker)")
    args = ap.parse_args(argv)
    log_to_file(logging.DEBUG if os.environ.get("EDGETUI_DEBUG") else logging.WARNING)
    try:
        run_app(args.db, args.run, web=True, through_holder=True)
    except SystemExit as e:
        return int(e.code or 0) if isinstance(e.code, int) else EXIT_INPUT
    except (RuntimeError, OSError) as e:
        print(f"edgetui (browser tab): error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as e:  # noqa: BLE001 - a bug: its traceback to the log file, one line here
        print(report_internal_error(e, "edgetui browser tab"), file=sys.stderr)
        return EXIT_INTERNAL
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
