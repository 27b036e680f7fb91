#!/usr/bin/env bash
# One device call on a multi-GPU machine (issue 18), everything in $OUT/all.tgz (and the logs): the
# distributed tests, then the multi-GPU stage on 1, 2 and 4 GPUs (all the GPUs the machine shows).
set -uo pipefail
FINAL=${OUT:-/tmp/out}
export OUT=/tmp/session-out
mkdir -p "$OUT" "$FINAL"
bash tools/device-run.sh none > "$OUT/setup.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PYTHONWARNINGS=ignore
nvidia-smi -L >> "$OUT/setup.log"
gpus=$(nvidia-smi -L | grep -c "^GPU ")
counts=1; list="1"; for k in 2 4 8; do [ "$k" -le "$gpus" ] && counts="$counts,$k" && list="$list $k"; done
timeout 100 python3 -m pytest -q -p no:cacheprovider -x tests/test_distributed.py > "$OUT/retest.log" 2>&1
SCALE_WORKERS=$counts BAND_WORKERS="1 $gpus" SPLIT_WORKERS="$list" \
  timeout ${MULTI_TIMEOUT:-400} bash tools/device-run.sh multi-gpu > "$OUT/multi.log" 2>&1
tar czf "$FINAL/all.tgz" -C "$OUT" . && cp "$OUT/retest.log" "$OUT/multi.log" "$FINAL/"
tail -3 "$OUT/retest.log"; tail -40 "$OUT/multi.log"
