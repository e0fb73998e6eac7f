#!/usr/bin/env python3
"""Generate the synthetic SForge sample runs committed under ``sample_runs/``.

Everything written by this script is GENERATED: seeded, synthetic, and not
real agent output.  The shapes follow SForge 1.1.0 (``sforge`` on PyPI) and
the Claude Code / Codex transcript formats described in docs/; the text
content is invented.  The writers are in ``generator/`` (its package docstring
lists the modules and which of them are frozen).

Usage::

    python sample_runs/generate.py                  # rewrites tasks/, runs/, _truth/, README.md here
    python sample_runs/generate.py --out DIR        # the same, into DIR
    python sample_runs/generate.py gw vrp           # only these runs (no README)
    python sample_runs/generate.py --moment-runs DIR SEED... [--control SEED...]

Properties:

* fixed seed, no wall-clock reads: the output is byte-for-byte identical on
  every run (file mtimes are not part of the contract: SForge readers must not
  rely on them, and git does not keep them); tests/test_sample_generator.py
  regenerates the samples and compares them with the committed tree;
* it needs the project installed (``pip install -e .``): the graded rounds'
  rescaled scores and best rounds come from ``edgetui.replay.rescale`` and
  ``edgetui.replay.selection``;
* ground truth for tests lives in ``_truth/<run_id>__<task_id>.json`` (never
  inside a run directory), see ``README.md`` for its format;
* ``check_with_sforge.py`` loads the result with SForge's own scanner,
  parsers, grader, selection and rescale code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgetui.sample_runs.generator import bundled, moment_runs

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--moment-runs"]:  # --moment-runs DIR SEED... [--control SEED...]
        return moment_runs.main(argv[1:])
    parser = argparse.ArgumentParser(prog="generate.py", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: sample_runs/)")
    names = [name for name, _ in bundled.BUILDERS]
    parser.add_argument("runs", nargs="*", metavar="RUN", help=f"only these runs, among {', '.join(names)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.runs) - set(names))
    if unknown:
        parser.error(f"unknown run {', '.join(unknown)} (known: {', '.join(names)})")
    bundled.write_samples(args.out, set(args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
