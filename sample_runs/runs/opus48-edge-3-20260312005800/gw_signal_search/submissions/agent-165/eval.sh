#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /workspace/gw_search && python /opt/judge/evaluate.py --submission /workspace/gw_search --injections /opt/judge/data/blind_o4_400.hdf5 --background-days 30 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
