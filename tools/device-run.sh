#!/usr/bin/env bash
# On the lent GPU machine (its own python3 3.12 with numba-cuda; no network): install gpudp with the
# carried numpy<2.5 wheel, run the GPU tests and benchmarks, write logs under $OUT.
# Here, first: ../shared/tools/device-wheels.sh rapidfuzz==3.14.6   (fills .whl/, carried)
# There:       bash tools/device-run.sh [tests|bench|tune|all]...
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
if ! python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1; then
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gpudp . >>"$OUT/install.log" 2>&1 \
    && export PYTHONPATH=/tmp/gpudp:$PYTHONPATH || { cat "$OUT/install.log"; exit 1; }
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -m gpudp.cli info | tee "$OUT/info.txt"
for stage in "${@:-all}"; do
  case $stage in
    tests|all)
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" ${TESTS:-tests} 2>&1 | tee "$OUT/tests.log" ;;&
    tune|all)
      python3 tools/lcs_tune.py 2>&1 | tee "$OUT/tune.log" ;;&
    ncu)
      ncu --clock-control none --kernel-name regex:run_tiles --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section SourceCounters python3 tools/ncu_lcs.py 2>&1 \
        | tee "$OUT/ncu.txt" | grep -v "^==PROF==" ;;
    bench|all)
      tile=""; [ -s "$OUT/best_tile" ] && tile="--tile $(cat "$OUT/best_tile")"
      python3 -m gpudp.cli bench lcs --sizes 32768,131072 --repeat 3 $tile ${BENCH_ARGS:-} \
        --out "$OUT/bench_lcs.json" 2>&1 | tee "$OUT/bench_lcs.log" ;;
  esac
done
