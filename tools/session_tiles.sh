#!/usr/bin/env bash
# One device call (issue 14): tiled kernels of several versions of gpudp on the same machine in the
# same run. VERSIONS (default "head new") names them: "new" is the working tree, any other V a copy
# in ab_V/gpudp made here beforehand (`mkdir ab_head && git archive HEAD gpudp | tar -x -C ab_head`;
# not committed). For each: Smith-Waterman and Gotoh at 2^17 (tools/cell_forms.py, int32 cells,
# TILES), LCS 2^17 (gpudp bench lcs, 256 x 256); then, with GPU_TESTS=1, the GPU tests of the
# working tree. JSON under $OUT, a summary line per run on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bash tools/device-run.sh none > "$OUT/setup.log" 2>&1
export PYTHONPATH=/tmp/site:/tmp/gpudp:$PWD:${PYTHONPATH:-} PYTHONWARNINGS=ignore
TILES=${TILES:-64x128,64x256}
for v in ${VERSIONS:-head new}; do
  pp=$PYTHONPATH; [ "$v" != new ] && pp=$PWD/ab_$v:$PYTHONPATH
  PYTHONPATH=$pp timeout 200 python3 tools/cell_forms.py "$OUT/cells-$v.jsonl" --forms scalars-int32 \
    --tiles "$TILES" --repeat ${REPEAT:-5} > /tmp/cells-$v.log 2>&1 || tail -3 /tmp/cells-$v.log
  PYTHONPATH=$pp timeout 120 python3 -m gpudp.cli bench lcs --backends cuda --sizes 131072 --repeat 3 \
    --tile 256,256 --out "$OUT/lcs-$v.json" > /tmp/lcs-$v.log 2>&1 || tail -3 /tmp/lcs-$v.log
  python3 - "$v" "$OUT" <<'PY'
import json, sys
v, out = sys.argv[1:]
for line in open(f"{out}/cells-{v}.jsonl"):
    r = json.loads(line)
    print(v, r["problem"], r["tile"], "kernels", round(r["gcups_kernels"], 1), "whole", round(r["gcups"], 1),
          "sweep", round(r["sweep_seconds"], 3), "gpu", round(r["gpu_seconds"], 3), "score", r["score"])
for r in json.load(open(f"{out}/lcs-{v}.json")).get("results", []):
    if "gcups_kernel" in r:
        print(v, "lcs", r["size"], "kernels", round(r["gcups_kernel"], 1), "solve", round(r["gcups_solve"], 1))
PY
done
if [ "${GPU_TESTS:-0}" = 1 ]; then
  timeout ${TEST_TIMEOUT:-280} python3 -m pytest -q -p no:cacheprovider -m gpu ${TESTS:-tests} > "$OUT/gpu_tests.log" 2>&1
  tail -3 "$OUT/gpu_tests.log"
fi
