#!/usr/bin/env bash
# On the lent GPU machine (its own python3 3.12 with numba-cuda; no network): install gpudp with the
# carried numpy<2.5 wheel, run the GPU tests and benchmarks, write logs under $OUT.
# Here, first: ../shared/tools/device-wheels.sh rapidfuzz==3.14.6   (fills .whl/, carried)
# There:       bash tools/device-run.sh [tests|gpu-tests|wave|ncu-tiled|multi-gpu|scale-device|scale-made|linear|linear-big|genomes|remeasure-a|remeasure-b|remeasure-36|remeasure-36b|remeasure-36c|remeasure-36d|rows|check|peers|pending|pending-speed|batches|warps|profile|narrow|narrow-layered|store|defaults|ab|bench|tune|ncu|ncu-knapsack|tsp|knapsack|reach-threads|startup|crossover|all]...
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
    gpu-tests)
      python3 -m pytest -q -p no:cacheprovider -m gpu ${TESTS:-tests} 2>&1 | tee "$OUT/gpu_tests.log" ;;
    wave)
      # issues 14-16: batches of user recurrences, LCS batch subsequences, 3-D grids, sparse knapsack
      python3 tools/many_bench.py --count 2000 --n 300 --backend cuda --loop 200 \
        --json "$OUT/many-2000x300-cuda.json" 2>&1 | tail -6
      python3 tools/many_bench.py --count 2000 --n 300 --backend cpu --loop 50 \
        --json "$OUT/many-2000x300-cpu.json" 2>&1 | tail -6
      python3 examples/many_alignments.py --random 2000 --length 150 --backend cuda 2>&1 | tail -4
      python3 -m gpudp.cli bench batch --problems lcs --pairs 100000 --length 1000 --repeat 5 \
        --traceback-pairs 200 --out "$OUT/batch-lcs-subsequences.json" 2>&1 | tail -8
      python3 tools/gallery_bench.py "$OUT/gallery-lcs3.json" --problems lcs3 --lcs3-sizes 200,400,800 \
        --backends cuda,cpu --threads 1,16 2>&1 | tail -8
      python3 examples/lcs3.py --random 500 --backend cuda 2>&1 | tail -3
      timeout 240 python3 -m gpudp.cli bench knapsack-classes --classes 1-6 --sizes 1000,10000 \
        --ranges 1e6,1e7 --out "$OUT/knapsack-classes.json" 2>&1 | tail -30
      timeout 200 python3 -m gpudp.cli bench knapsack-classes --classes hard --sizes 1000 --ranges 1e6,1e7 \
        --seeds 3 --time-limit 60 --no-peers --out "$OUT/knapsack-hard.json" 2>&1 | tail -12 ;;
    ncu-tiled)
      ncu --clock-control none --kernel-name regex:run_tiles --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        --section LaunchStats --section MemoryWorkloadAnalysis python3 tools/ncu_tiled.py gotoh 32768 128 256 --decisions 2>&1 \
        | tee "$OUT/ncu_tiled.txt" | grep -v "^==PROF==" | tail -80 ;;
    multi-gpu)
      # issue 18: one worker a GPU; batch scores (pairs sent from the client, and pairs resident on
      # the workers)
      export NCCL_NVLS_ENABLE=0
      timeout ${SCALE_TIMEOUT:-200} python3 -m gpudp.cli bench scale --backends cuda --workers ${SCALE_WORKERS:-1,2} \
        --pairs ${SCALE_PAIRS:-100000} --length 1000 --repeat 3 --data client \
        --out "$OUT/scale-cuda-client.json" 2>&1 | tail -6
      timeout ${RESIDENT_TIMEOUT:-300} python3 -m gpudp.cli bench scale --backends cuda --workers ${SCALE_WORKERS:-1,2} \
        --pairs ${RESIDENT_PAIRS:-1000000} --length 1000 --repeat 3 --data resident \
        --out "$OUT/scale-cuda-resident.json" 2>&1 | tail -6
      ;;
    scale-device)
      # issue 18: batches whose pairs lie on the workers' GPUs against page-locked host blocks; the
      # device path's GPU tests first (they failed once on the real GPU where the simulator passed)
      export NCCL_NVLS_ENABLE=0
      timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_lcs_many.py tests/test_distributed.py \
        tests/test_examples.py -k "gpu_memory or blocks_on_the_gpus or read_pairs" 2>&1 | tail -3
      timeout 260 python3 -m gpudp.cli bench scale --backends cuda --workers ${SCALE_WORKERS:-1,2} --pairs 4000000 \
        --length 1000 --repeat 5 --data device,pinned --chunks-per-worker 1 --out "$OUT/scale-device-4m.json" \
        2>&1 | grep " workers"
      timeout 200 python3 -m gpudp.cli bench scale --backends cuda --workers ${DEVICE8_WORKERS:-1,2} --pairs 8000000 \
        --length 1000 --repeat 5 --data device --chunks-per-worker 1 --out "$OUT/scale-device-8m.json" \
        2>&1 | grep " workers" ;;
    scale-made)
      # issue 18: batches made on the workers' GPUs (no pair through the client), large enough that
      # Dask's fixed ~0.04 s a call is a small part of a 4-GPU run (32,000,000 pairs: 64 GB on one
      # GPU for the 1-worker run, H200 only)
      export NCCL_NVLS_ENABLE=0
      for pairs in ${MADE_PAIRS:-16000000 32000000}; do
        timeout 280 python3 -m gpudp.cli bench scale --backends cuda --workers ${SCALE_WORKERS:-1,2,4} \
          --pairs $pairs --length 1000 --repeat 5 --data device --made-on workers --chunks-per-worker 1 \
          --out "$OUT/scale-made-$pairs.json" 2>&1 | grep " workers\|rror"
      done ;;
    remeasure-a)
      # issue 13: the headline GPU figures of docs/benchmarks.md, re-measured after a refactor
      python3 -m gpudp.cli bench lcs --backends cuda --sizes 32768,131072 --repeat 3 --tile 256,256 \
        --out "$OUT/re_lcs.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench subset-sum --backends cuda --n-min 36 --n-max 54 --n-step 6 --large 60 \
        --out "$OUT/re_subset_sum.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench tsp --backends cuda --no-peers --sizes 16,20,24,26,28 \
        --out "$OUT/re_tsp.json" 2>&1 | tail -4 ;;
    remeasure-b)
      python3 -m gpudp.cli bench knapsack-bb --backends cuda --classes shen --shen-seeds 20 --time-limit 20 --deadline 420 \
        --out "$OUT/re_knapsack_bb.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench knapsack --backends cuda --no-peers --sizes 10000,100000 \
        --out "$OUT/re_knapsack.json" 2>&1 | tail -4 ;;
    remeasure-36)
      # issue 36: the headline GPU figures after the one-engine redesign (remeasure-a, and the
      # knapsack DP of remeasure-b; its branch-and-bound sweep takes 7 minutes of its own)
      python3 -m gpudp.cli bench lcs --backends cuda --sizes 32768,131072 --repeat 3 --tile 256,256 \
        --out "$OUT/re_lcs.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench subset-sum --backends cuda --n-min 36 --n-max 54 --n-step 6 --large 60 \
        --out "$OUT/re_subset_sum.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench knapsack --backends cuda --no-peers --sizes 10000,100000 \
        --out "$OUT/re_knapsack.json" 2>&1 | tail -4
      python3 -m gpudp.cli bench tsp --backends cuda --no-peers --sizes 16,20,24,26,28 \
        --out "$OUT/re_tsp.json" 2>&1 | tail -4 ;;
    ab)
      # same-machine before/after: each revision unpacked in .ab/REV (here: `git archive REV | tar -x
      # -C .ab/REV`, carried) against this tree, each installed apart and run from /tmp (not this
      # tree's gpudp); pass 0 warms the kernel cache, passes 1 and 2 alternate the order
      mkdir -p "$OUT/ab"; revs="${AB_REVS:-$(ls .ab)}"
      for rev in $revs head; do
        src=".ab/$rev"; [ "$rev" = head ] && src=.
        python3 -m pip install -q --no-deps --no-build-isolation --target "/tmp/ab/$rev" "$src" >>"$OUT/ab/install.log" 2>&1
      done
      order="$revs head"; rorder="head $(echo $revs | tr ' ' '\n' | tac | tr '\n' ' ')"
      for pass in 0 1 2; do
        [ $pass = 2 ] && list=$rorder || list=$order
        for rev in $list; do
          echo "== pass $pass $rev"
          (cd /tmp && export PYTHONPATH="/tmp/ab/$rev:/tmp/site"
           python3 -m gpudp.cli bench subset-sum --backends cuda --n-min 36 --n-max 54 --n-step 6 \
             --out "$OUT/ab/ss-$rev-$pass.json" 2>&1 | tail -5
           python3 -m gpudp.cli bench tsp --backends cuda --no-peers --sizes 24,26,28 --repeat 3 \
             --out "$OUT/ab/tsp-$rev-$pass.json" 2>&1 | tail -4
           python3 -m gpudp.cli bench knapsack --backends cuda --no-peers --sizes 10000 \
             --out "$OUT/ab/kp-$rev-$pass.json" 2>&1 | tail -3)
        done
      done ;;
    rows)
      # issue 37: tile rows pipelined by progress flags instead of a grid sync a tile anti-diagonal:
      # its GPU tests, the gallery's SW and Gotoh over tile heights, this tree against .ab/base
      # (`git archive REV | tar -x -C .ab/base`, carried)
      mkdir -p "$OUT/rows"; here=$PWD
      timeout 300 python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_engine.py tests/test_linear.py \
        tests/test_records.py tests/test_reduce.py tests/test_interval_split.py tests/test_interval.py 2>&1 \
        | tee "$OUT/rows/tests.log" | tail -5
      timeout 240 python3 tools/interval_gpu.py "$OUT/rows/interval.json" 2>&1 | grep -v "^{" | tail -4
      python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/ab/base .ab/base >>"$OUT/install.log" 2>&1
      for ex in local_alignment affine_alignment; do
        timeout 200 python3 tools/tile_sweep.py "$OUT/rows/$ex-head.jsonl" --example $ex --sizes 131072 \
          --tiles ${ROW_TILES:-32x256,64x256,128x256,256x256} 2>&1 | tail -4
        [ -n "${BASE_TILES-128x256,256x256}" ] && (cd /tmp && PYTHONPATH=/tmp/ab/base:/tmp/site timeout 120 \
          python3 "$here/.ab/base/tools/tile_sweep.py" "$OUT/rows/$ex-base.jsonl" --example $ex --sizes 131072 \
          --tiles ${BASE_TILES-128x256,256x256}) 2>&1 | tail -2
      done
      timeout 120 python3 -m gpudp.cli bench lcs --backends cuda --sizes 32768,131072 --repeat 3 --tile 256,256 \
        --out "$OUT/rows/lcs-head.json" 2>&1 | tail -3 ;;
    check)
      # a session's changes in figures: interval sweeps against the cpu (and a first sweep's host block),
      # the gallery's SW and Gotoh whole calls at 2^17, LCS
      mkdir -p "$OUT/check"
      timeout 240 python3 tools/interval_gpu.py "$OUT/check/interval.json" 2>&1 | grep -v "^{" | tail -4
      for ex in local_alignment affine_alignment; do
        timeout 200 python3 tools/tile_sweep.py "$OUT/check/$ex.jsonl" --example $ex --sizes 131072 \
          --tiles ${ROW_TILES:-128x256} 2>&1 | tail -3
      done
      timeout 120 python3 -m gpudp.cli bench lcs --backends cuda --sizes 32768,131072 --repeat 3 --tile 256,256 \
        --out "$OUT/check/lcs.json" 2>&1 | tail -3 ;;
    peers)
      # issue 37's batch goal: sweep_many with the gallery's NW and SW cells beside StringZilla's scores
      mkdir -p "$OUT/peers"
      timeout 400 python3 tools/many_peers.py "$OUT/peers/many-peers.json" --side ${PEERS_SIDE:-316} \
        --length ${PEERS_LENGTH:-1000} 2>&1 | tail -6 ;;
    pending)
      # the GPU tests of the kernels merged since the fourth session of 2026-12-06 (the 2-D layered
      # kernel, the stateful interval walk, the LCS and edit distance a warp a pair, the widened
      # record tiles, sweep_many's record kernels; run on an H100 in the fifth session) and the
      # examples on cuda; pending-speed: their timings (docs/benchmarks.md, "fifth session")
      mkdir -p "$OUT/pending"; P="$OUT/pending"
      timeout 240 python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_layers_2d.py tests/test_interval.py \
        tests/test_lcs_many.py tests/test_edit_distance.py tests/test_cdist.py tests/test_wide_offsets.py \
        tests/test_many_records.py tests/test_many.py tests/test_many_intervals.py 2>&1 \
        | tee "$P/tests.log" | tail -3
      timeout 90 python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_examples.py -k "cyk or floyd" 2>&1 | tail -2
      timeout 20 python3 examples/floyd_warshall.py --backend cuda 2>&1 | tail -2
      timeout 20 python3 examples/cyk_parse.py the dog saw a man in the park --backend cuda 2>&1 | tail -2 ;;
    pending-speed)
      mkdir -p "$OUT/pending"; P="$OUT/pending"
      # the Damerau row of issue 37/39 (offsets to (-2, -2), now tiles with a widened record cell)
      timeout 120 python3 tools/narrow_bench.py "$P/osa.json" --problems osa --sizes 8192 --repeat 3 2>&1 | tail -3
      # sweep_many of a record cell (Gotoh, three int32 fields) beside StringZilla's affine gap
      timeout 150 python3 tools/many_peers.py "$P/many-gotoh.json" --problems gotoh,nw --forms pairs 2>&1 \
        | grep "^{" | cut -c1-330
      timeout 200 python3 tools/long_pairs.py "$P/long-pairs.jsonl" 2>&1 | cut -c1-200
      timeout 120 python3 -m gpudp.cli bench batch --backends cuda --problems edit,lcs --pairs 1000000 --length 100 \
        --repeat 3 --traceback-pairs 0 --forms arrays,cdist --peers stringzilla --out "$P/batch-cdist.json" 2>&1 | tail -4 ;;
    batches)
      # issues 37-38: the batch tests on the GPU, sweep_many's two forms and cdist beside StringZilla,
      # lists of str against arrays in solve_many
      mkdir -p "$OUT/batches"
      timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_cdist.py \
        tests/test_many_pairs.py tests/test_many.py 2>&1 | tee "$OUT/batches/tests.log" | tail -3
      # the object reader of lists of str on this machine's interpreter (3.12 here; CI runs 3.11)
      timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_lcs_many.py -k object_reader 2>&1 | tail -2
      timeout 200 python3 tools/many_peers.py "$OUT/batches/many-peers.json" 2>&1 | grep "^{" | cut -c1-330
      timeout 240 python3 tools/cdist_bench.py --backends cuda --sizes ${CDIST_SIZES:-316x316x1000,1000x1000x100,100x100x10000} \
        --out "$OUT/batches/cdist.json" 2>&1 | grep "^{" | cut -c1-260
      timeout 200 python3 tools/str_forms.py "$OUT/batches/str-forms.json" 2>&1 | grep "^{" | cut -c1-300 ;;
    warps)
      # sweep_many's warp kernel: this tree against the base (.ab/base, carried), alternating, and
      # where the pairs form's whole call goes
      mkdir -p "$OUT/warps"; here=$PWD
      python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/ab/base .ab/base >>"$OUT/install.log" 2>&1
      for tree in base head base head; do
        if [ $tree = base ]; then
          (cd /tmp && PYTHONPATH=/tmp/ab/base:/tmp/site timeout 150 python3 "$here/.ab/base/tools/many_peers.py" \
            "$OUT/warps/$tree.json" --forms pairs)
        else
          timeout 150 python3 tools/many_peers.py "$OUT/warps/$tree.json" --forms pairs
        fi 2>&1 | grep "^{" | cut -c1-330 | sed "s/^/$tree /"
      done
      timeout 100 python3 tools/profile_call.py --pairs nw --n 1000 > "$OUT/warps/profile.txt" 2>&1
      head -45 "$OUT/warps/profile.txt" | cut -c1-200 ;;
    profile)
      # where a whole call's time goes beyond its kernels (tools/profile_call.py), and the same call on
      # the base tree (.ab/base, carried) and this one, alternating
      mkdir -p "$OUT/profile"; here=$PWD
      timeout 150 python3 tools/profile_call.py --example ${PROFILE_EXAMPLE:-affine_alignment} --n 131072 \
        > "$OUT/profile/example.txt" 2>&1; head -80 "$OUT/profile/example.txt"
      timeout 100 python3 tools/profile_call.py --interval ${PROFILE_INTERVAL:-triangulation} --n 1500 \
        > "$OUT/profile/interval.txt" 2>&1; head -60 "$OUT/profile/interval.txt"
      python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/ab/base .ab/base >>"$OUT/install.log" 2>&1
      for tree in base head base head; do
        if [ $tree = base ]; then
          (cd /tmp && PYTHONPATH=/tmp/ab/base:/tmp/site timeout 120 python3 "$here/.ab/base/tools/tile_sweep.py" \
            "$OUT/profile/ab-$tree.jsonl" --example ${PROFILE_EXAMPLE:-affine_alignment} --sizes 131072 --tiles 128x256)
        else
          timeout 120 python3 tools/tile_sweep.py "$OUT/profile/ab-$tree.jsonl" --example \
            ${PROFILE_EXAMPLE:-affine_alignment} --sizes 131072 --tiles 128x256
        fi 2>&1 | grep "^{" | cut -c1-200 | sed "s/^/$tree /"
      done ;;
    narrow)
      # issue 37: plain cells in 32 bits (gpudp.recurrence.narrow): its tests on the GPU, the A/B of
      # plain cells in one process (and their kernels' SASS), LCS (its cell is narrowed) 1, 0, 1
      mkdir -p "$OUT/narrow"
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_narrow.py 2>&1 \
        | tee "$OUT/narrow/tests.log" | tail -5
      python3 tools/narrow_bench.py "$OUT/narrow/plain.json" --sizes ${NARROW_SIZES:-16384,65536} --sass 2>&1 | tail -24
      for flag in 1 0 1; do
        GPUDP_NARROW=$flag python3 -m gpudp.cli bench lcs --backends cuda --sizes 32768,131072 --repeat 3 \
          --tile 256,256 --out "$OUT/narrow/lcs-$flag-$RANDOM.json" 2>&1 | tail -3
      done ;;
    store)
      # issue 37: the full decision store against checkpoints, to set store="auto"'s rule by measurement
      mkdir -p "$OUT/store"
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_narrow.py tests/test_linear.py 2>&1 \
        | tee "$OUT/store/tests.log" | tail -3
      python3 tools/store_bench.py "$OUT/store/store.json" --sizes ${STORE_SIZES:-32768,65536,131072} 2>&1 | tail -12 ;;
    narrow-layered)
      # issue 37: the int32 rewrite on layered recurrences: the knapsack DP (int32 when the profits'
      # sum fits) and Held-Karp, with the rewrite, without, and with it again
      mkdir -p "$OUT/narrowl"
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/test_narrow.py 2>&1 | tail -2
      for flag in 1 0 1; do
        GPUDP_NARROW=$flag python3 -m gpudp.cli bench knapsack --backends cuda --no-peers --sizes 10000 \
          --out "$OUT/narrowl/kp-$flag-$RANDOM.json" 2>&1 | tail -2
      done
      for flag in 1 0 1; do
        GPUDP_NARROW=$flag python3 -m gpudp.cli bench tsp --backends cuda --no-peers --sizes 24 --repeat 3 \
          --out "$OUT/narrowl/tsp-$flag-$RANDOM.json" 2>&1 | tail -2
      done ;;
    defaults)
      # issue 37: what a user gets with no options: the gallery's alignments (store="auto" now takes
      # checkpoints on the GPU), and batches of plain cells with and without the int32 rewrite
      mkdir -p "$OUT/defaults"
      python3 tools/gallery_bench.py "$OUT/defaults/gallery-sw-gotoh.json" --problems sw,gotoh --sizes 65536,131072 \
        --backends cuda 2>&1 | tail -6
      for flag in 1 0 1; do
        GPUDP_NARROW=$flag python3 tools/many_bench.py --count 2000 --n 300 --backend cuda --loop 0 \
          --json "$OUT/defaults/many-$flag-$RANDOM.json" 2>&1 | tail -3
      done ;;
    remeasure-36c)
      # issue 36: the rest of the single-GPU figures: B&B on Shen's class (the 5-seed, 10 s subset
      # table), --method auto on all 200, then Pisinger's classes 1-6 and the hard classes
      mkdir -p "$OUT/re"
      timeout 170 python3 -m gpudp.cli bench knapsack-bb --backends cuda --classes shen --shen-seeds 5 \
        --time-limit 10 --deadline 160 --out "$OUT/re/bb-shen5.json" 2>&1 | tail -14 ;;
    remeasure-36d)
      mkdir -p "$OUT/re"
      timeout 100 python3 -m gpudp.cli bench knapsack-bb --backends cuda --classes shen --shen-seeds 20 \
        --method auto --deadline 90 --out "$OUT/re/bb-shen-auto.json" 2>&1 | tail -12
      timeout 120 python3 -m gpudp.cli bench knapsack-classes --classes 1-6 --sizes 1000,10000 \
        --ranges 1e6,1e7 --no-peers --out "$OUT/re/kp-classes.json" 2>&1 | tail -8
      timeout 170 python3 -m gpudp.cli bench knapsack-classes --classes hard --sizes 1000 --ranges 1e6,1e7 \
        --seeds 3 --time-limit 60 --no-peers --out "$OUT/re/kp-hard.json" 2>&1 | tail -8 ;;
    remeasure-36b)
      # issue 36: the GPU figures of docs/benchmarks.md beyond remeasure-36's headline rows
      mkdir -p "$OUT/re"
      python3 tools/gallery_bench.py "$OUT/re/gallery-sw-gotoh.json" --problems sw,gotoh --sizes 16384,32768,131072 \
        --backends cuda 2>&1 | tail -8
      python3 -m gpudp.cli bench batch --problems lcs --pairs 100000 --length 1000 --repeat 5 \
        --traceback-pairs 200 --out "$OUT/re/batch-lcs.json" 2>&1 | tail -8
      python3 -m gpudp.cli bench lcs --backends cuda --store checkpoints --sizes 131072,524288,1048576,2097152 \
        --repeat 1 --out "$OUT/re/lcs-linear.json" 2>&1 | tail -5
      python3 tools/interval_bench.py --sizes 500,2000 --threads 16 --cuda 2>&1 | tee "$OUT/re/interval.txt" | tail -6
      python3 tools/tsp_many.py 2>&1 | tee "$OUT/re/tsp-many.txt" | tail -8
      python3 tools/knapsack_many.py --backend cuda --compare 2>&1 | tee "$OUT/re/knapsack-many.txt" | tail -6
      python3 tools/many_bench.py --count 2000 --n 300 --backend cuda --loop 200 \
        --json "$OUT/re/many-2000x300-cuda.json" 2>&1 | tail -6
      python3 tools/gallery_bench.py "$OUT/re/gallery-lcs3.json" --problems lcs3 --lcs3-sizes 200,400,800 \
        --backends cuda 2>&1 | tail -6 ;;
    linear)
      # issue 19: LCS with the subsequence from checkpoints (linear space), and the full store beside
      python3 -m gpudp.cli bench lcs --backends cuda --store full --sizes 131072,524288 --repeat 1 \
        --out "$OUT/lcs_full.json" 2>&1 | tail -3
      python3 -m gpudp.cli bench lcs --backends cuda --store checkpoints --sizes 131072,524288,1048576,2097152 \
        --repeat 1 --out "$OUT/lcs_linear.json" 2>&1 | tail -5 ;;
    linear-big)
      python3 -m gpudp.cli bench lcs --backends cuda --store checkpoints --sizes 4194304 --repeat 0 \
        --out "$OUT/lcs_linear_4m.json" 2>&1 | tail -3 ;;
    genomes)
      python3 tools/related_genomes.py /tmp/genomes "${GENOME_BP:-5000000}"
      python3 tools/genome_lcs.py /tmp/genomes/strain_a.fa /tmp/genomes/strain_b.fa cuda 2>&1 \
        | tee "$OUT/genomes.json" ;;
    crossover)
      python3 tools/crossover.py "$OUT/crossover.jsonl" --repeat "${REPEAT:-1}" ${CROSSOVER_ARGS:-} 2>&1 \
        | tee "$OUT/crossover.log" ;;
    tune|all)
      python3 tools/lcs_tune.py 2>&1 | tee "$OUT/tune.log" ;;&
    ncu)
      ncu --clock-control none --kernel-name regex:run_tiles --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section SourceCounters python3 tools/ncu_lcs.py 2>&1 \
        | tee "$OUT/ncu.txt" | grep -v "^==PROF==" ;;
    ncu-knapsack)
      python3 tools/ncu_knapsack.py 20000 "$OUT/blocked" 2>&1 | tail -3
      ncu --clock-control none --kernel-name regex:run_blocked --launch-skip 12 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
        python3 tools/ncu_knapsack.py 20000 2>&1 | tee "$OUT/ncu_knapsack.txt" | grep -v "^==PROF==" ;;
    bench|all)
      tile=""; [ -s "$OUT/best_tile" ] && tile="--tile $(cat "$OUT/best_tile")"
      python3 -m gpudp.cli bench lcs --sizes 32768,131072 --repeat 3 $tile ${BENCH_ARGS:-} \
        --out "$OUT/bench_lcs.json" 2>&1 | tee "$OUT/bench_lcs.log" ;;
    tsp)
      # python-tsp (one core) runs beside the GPU tests and bench; the cpu rows share the machine with it
      # (TSP_PEER_SIZES= empty: no peer run)
      peer_sizes=${TSP_PEER_SIZES-16,20}; peer=""
      if [ -n "$peer_sizes" ]; then
        python3 -m gpudp.cli bench tsp --backends none --sizes "$peer_sizes" --peer-timeout ${TSP_PEER_TIMEOUT:-600} \
          --out "$OUT/bench_tsp_peer.json" >/tmp/bench_tsp_peer.log 2>&1 &
        peer=$!
      fi
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" ${TSP_TESTS:-tests/tsp/test_tsp.py tests/tsp/test_tsplib.py} \
        2>&1 | tee "$OUT/tsp_tests.log"
      python3 -m gpudp.cli bench tsp --backends cuda --no-peers ${TSP_CUDA_ARGS:-} \
        --out "$OUT/bench_tsp_cuda.json" 2>&1 | tee -a "$OUT/bench_tsp.log"
      python3 -m gpudp.cli bench tsp --backends cpu --no-peers ${TSP_CPU_ARGS:-} \
        --out "$OUT/bench_tsp_cpu.json" 2>&1 | tee -a "$OUT/bench_tsp.log"
      if [ -n "$peer" ]; then wait $peer; tee -a "$OUT/bench_tsp.log" </tmp/bench_tsp_peer.log; fi ;;
    startup)
      # issue 12: each command as a fresh process, cold and warm cache
      python3 -m gpudp.cli bench startup --repeat ${STARTUP_REPEAT:-2} --backend ${STARTUP_BACKEND:-cuda} \
        --commands ${STARTUP_COMMANDS:-demo,lcs,knapsack,subset-sum,tsp} --out "$OUT/bench_startup.json" \
        2>&1 | tee "$OUT/bench_startup.log" ;;
    reach-threads)
      # issue 41: where knapsack reach's time goes at 1, 2, 4 and 16 threads on this machine (the 16
      # cores ran it slower than a 2-core host on 2026-12-08), on published instances carried in
      # .data/jooken (tools/jooken_subset.py) or REACH_FILES
      mkdir -p "$OUT/reach"
      files=${REACH_FILES:-$(ls -d .data/jooken/*/*/test.in 2>/dev/null | head -6)}
      timeout ${REACH_TIMEOUT:-400} python3 tools/reach_threads.py "$OUT/reach/threads.jsonl" $files \
        --threads ${REACH_THREADS:-1,2,4,16} 2>&1 | cut -c1-300 ;;
    knapsack)
      # knapsack DP (issue 3): its GPU and simulator-marked tests on the GPU, then the benchmark
      python3 -m pytest -q -p no:cacheprovider -m "gpu or sim" tests/knapsack/test_knapsack_dp.py \
        tests/test_layer_ranges.py ${KNAPSACK_TESTS:-} 2>&1 | tee "$OUT/knapsack_tests.log"
      [ -n "${KNAPSACK_TUNE:-}" ] && python3 tools/knapsack_tune.py $KNAPSACK_TUNE 2>&1 | tee "$OUT/knapsack_tune.log"
      timeout ${KNAPSACK_TIMEOUT:-240} python3 -m gpudp.cli bench knapsack ${KNAPSACK_ARGS:-} \
        --out "$OUT/bench_knapsack.json" 2>&1 | tee "$OUT/bench_knapsack.log" ;;
  esac
done
