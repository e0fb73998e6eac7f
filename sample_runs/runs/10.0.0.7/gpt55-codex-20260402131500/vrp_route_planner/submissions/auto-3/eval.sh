#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /workspace/vrp && python /opt/judge/run_cases.py --solver 'python solve.py' --cases /opt/judge/cases --time-limit 20 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
