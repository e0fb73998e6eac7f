#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /workspace/tiny_pack && python3 grader/evaluate.py 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
