#!/bin/bash
# make_real_runs.sh — record the GENUINE sample runs of sample_runs/genuine/ with the real SForge
# 1.1.0 harness (sforge build / serve / run, real work and judge containers, the harness's own
# sforge-submit; only the agent CLI is a scripted stand-in: see real_sforge/README.md), then copy
# the run directories and task JSONs here and write their truth (SForge's own visualizer scanner).
# Needs root, Docker and Debian's package mirror; about 35 minutes.
#   sample_runs/make_real_runs.sh            # all five runs
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${REAL_SFORGE_WORK:-/tmp/edgetui-real-sforge}
mkdir -p "$WORK"
REAL_SFORGE_WORK="$WORK" "$HERE/real_sforge/make_real_run.sh" "${@:-all}"
OUT="$HERE/genuine"
rm -rf "$OUT/runs" "$OUT/tasks"
mkdir -p "$OUT/runs" "$OUT/tasks"
# the collect stage's copy: run directories without images or the judge's admin secret
for d in "$WORK/runs-out"/*/; do [ "$(basename "$d")" = tasks ] || cp -a "$d" "$OUT/runs/"; done
cp -a "$WORK/runs-out/tasks/." "$OUT/tasks/"
"$WORK/sfv/bin/python" "$HERE/genuine_truth.py" "$OUT"
echo "genuine runs in $OUT"
