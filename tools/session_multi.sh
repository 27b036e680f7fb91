#!/usr/bin/env bash
# One device call on a multi-GPU machine (issue 18), everything in $OUT/all.tgz (and the two logs):
# the GPU tests that a previous call lost, the batch of user recurrences, then the multi-GPU stage.
set -uo pipefail
FINAL=${OUT:-/tmp/out}
export OUT=/tmp/session-out
mkdir -p "$OUT" "$FINAL"
bash tools/device-run.sh none > "$OUT/setup.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PYTHONWARNINGS=ignore
nvidia-smi -L >> "$OUT/setup.log"
{
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_lcs_many.py tests/test_many.py 2>&1 | tail -4
  timeout 90 python3 tools/many_bench.py --count 2000 --n 300 --backend cuda --loop 200 \
    --json "$OUT/many-2000x300-cuda.json" 2>&1 | tail -4
} > "$OUT/retest.log" 2>&1
SCALE_WORKERS=1,2 timeout ${MULTI_TIMEOUT:-330} bash tools/device-run.sh multi-gpu > "$OUT/multi.log" 2>&1
tar czf "$FINAL/all.tgz" -C "$OUT" . && cp "$OUT/retest.log" "$OUT/multi.log" "$FINAL/"
tail -5 "$OUT/retest.log"; tail -30 "$OUT/multi.log"
