#!/usr/bin/env bash
# On the GPU machine: cProfile of a warm `gpudp demo` (cache filled by a first run), to see what is
# left of the start-up once nothing compiles. Writes $OUT/startup_profile.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export GPUDP_CACHE_DIR=${GPUDP_CACHE_DIR:-/tmp/gpudp-profile-cache}
python3 -m gpudp.cli demo --backend ${1:-cuda} >/dev/null 2>&1
python3 -X importtime -m gpudp.cli demo --backend ${1:-cuda} 2>"$OUT/importtime.txt" >/dev/null
python3 -m cProfile -s cumtime -m gpudp.cli demo --backend ${1:-cuda} 2>&1 | head -70 >"$OUT/startup_profile.txt"
sort -t'|' -k2 -n -r "$OUT/importtime.txt" | head -25 >>"$OUT/startup_profile.txt"
