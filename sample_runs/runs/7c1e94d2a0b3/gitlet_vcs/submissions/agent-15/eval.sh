#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /workspace/gitlet && python -m pytest -v tests/ -p no:cacheprovider 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
