"""Same-time A/B of the live benchmarks: this checkout against another commit, both at once.

    .venv/bin/python bench/compare_live.py BASE_REV [--bench bench_live_screen.py] [--rounds 2] [-- bench args]

The speed of a shared 2-core machine drifts from minute to minute (the same
code has measured 18-28 % of a core within an hour), more than most changes
move the figures. Running the two versions *at the same time* (each bench uses
about a quarter of a core plus its writer process) exposes both to the same
conditions, so their difference is the change's. ``BASE_REV`` is checked out
into a temporary git worktree (removed afterwards); both runs use this
checkout's virtualenv (the same library versions). Prints each round's lag and
CPU lines of both, then the mean CPU per phase of each and their ratio.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu_figures(out: str) -> dict[str, float]:
    """The CPU shares (% of one core) a bench printed: ``whole`` and, for the screen bench, each phase."""
    fig: dict[str, float] = {}
    m = re.search(r"= ([\d.]+) % of one core", out)
    if m:
        fig["whole"] = float(m.group(1))
    m = re.search(r"cpu by phase: runs screen ([\d.]+) %, live run screen ([\d.]+) %", out)
    if m:
        fig["runs screen"], fig["live run screen"] = float(m.group(1)), float(m.group(2))
    return fig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="the commit to compare against (any git revision)")
    ap.add_argument("--bench", default="bench_live_screen.py", help="bench_live_screen.py or bench_live.py")
    ap.add_argument("--rounds", type=int, default=2)
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    extra = argv[cut + 1 :]  # after --: arguments for the bench (e.g. --seconds 60)
    with tempfile.TemporaryDirectory(prefix="edgetui-ab-") as tmp:
        base_dir = Path(tmp) / "base"
        r = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(base_dir), args.base],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            print(f"compare_live: cannot check out {args.base}: {r.stderr.strip()}", file=sys.stderr)
            return 2
        try:
            if not (base_dir / "bench" / args.bench).exists():
                print(f"compare_live: {args.base} has no bench/{args.bench}", file=sys.stderr)
                return 2
            figs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
            for rnd in range(1, args.rounds + 1):
                procs = {}
                for name, d in (("base", base_dir), ("this", ROOT)):
                    procs[name] = subprocess.Popen(
                        [sys.executable, str(d / "bench" / args.bench), *extra],
                        cwd=d,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                for name, p in procs.items():
                    out = p.communicate()[0]
                    print(f"== round {rnd}, {name} ({args.base if name == 'base' else 'this checkout'})")
                    for line in out.splitlines():
                        if line.startswith(("lag", "phase", "cpu", "refreshes", "peak")):
                            print("  " + line)
                    if p.returncode != 0:
                        print(f"  (exit code {p.returncode}; last lines:)\n  " + "\n  ".join(out.splitlines()[-5:]))
                    figs[name].append(_cpu_figures(out))
            print(f"== mean CPU share of one core over {args.rounds} same-time rounds: base / this (ratio)")
            for key in ("whole", "runs screen", "live run screen"):
                b = [f[key] for f in figs["base"] if key in f]
                t = [f[key] for f in figs["this"] if key in f]
                if b and t:
                    mb, mt = sum(b) / len(b), sum(t) / len(t)
                    print(f"  {key}: {mb:.1f} % / {mt:.1f} % ({mt / mb:.2f}x)")
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_dir)], capture_output=True
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
