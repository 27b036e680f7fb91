#!/usr/bin/env bash
# One device call on a multi-GPU machine (issue 18): where a batch's time goes with 1, 2 and 4
# processes at once (tools/batch_stages.py), then the batch scores on 1, 2 and 4 Dask workers
# (gpudp bench scale: pairs resident on the workers, 2 and 4 million, one and two chunks a worker;
# pairs sent from the client). NVLink multicast off. JSON under $OUT, summaries on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bash tools/device-run.sh none > "$OUT/setup.log" 2>&1
export PYTHONPATH=/tmp/site:/tmp/gpudp:$PWD:${PYTHONPATH:-} PYTHONWARNINGS=ignore NCCL_NVLS_ENABLE=0
nvidia-smi -L
gpus=$(nvidia-smi -L | grep -c "^GPU ")
counts=1; for k in 2 4 8; do [ "$k" -le "$gpus" ] && counts="$counts,$k"; done
timeout 200 python3 tools/batch_stages.py --pairs 500000 --length 1000 --repeat 3 --procs "$counts" \
  --out "$OUT/stages.jsonl" > "$OUT/stages.log" 2>&1 || tail -5 "$OUT/stages.log"
python3 - "$OUT/stages.jsonl" <<'PY'
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1]) if '"record": "stage"' in x]
for n in sorted({r["procs"] for r in rows}):
    print(n, "procs:", ", ".join(f"{r['stage']} {r['median_s']:.3f} (x{r['slowdown']:.2f})" for r in rows if r["procs"] == n))
PY
for spec in "2000000 1" "4000000 1" "4000000 2"; do
  set -- $spec
  timeout 240 python3 -m gpudp.cli bench scale --backends cuda --workers "$counts" --pairs $1 --length 1000 \
    --repeat 3 --data resident --chunks-per-worker $2 --out "$OUT/scale-resident-$1-cpw$2.json" > "$OUT/scale-$1-$2.log" 2>&1 \
    || tail -5 "$OUT/scale-$1-$2.log"
  tail -4 "$OUT/scale-$1-$2.log"
done
timeout 150 python3 -m gpudp.cli bench scale --backends cuda --workers "$counts" --pairs 100000 --length 1000 \
  --repeat 3 --data client --out "$OUT/scale-client.json" > "$OUT/scale-client.log" 2>&1 || tail -5 "$OUT/scale-client.log"
tail -4 "$OUT/scale-client.log"
# one archive (the device returns a few files only), made outside $OUT and moved in
tar czf /tmp/batch4.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/batch4.tgz "$OUT/"
