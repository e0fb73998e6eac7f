#!/bin/bash
set -uxo pipefail
echo ">>>>> Start Test Output"
cd /work && sh /opt/judge/grade.sh 2>&1
EXIT_CODE=$?
echo ">>>>> End Test Output"
echo "Exit code: $EXIT_CODE"
exit 0
