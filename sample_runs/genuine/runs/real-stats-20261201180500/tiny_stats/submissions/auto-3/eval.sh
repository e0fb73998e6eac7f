#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /workspace/tiny_stats && python3 -m pytest -v -p no:cacheprovider tests/ 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
