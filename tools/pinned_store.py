"""The cuda backend's decision store left on the device (``device_store_share``), plain or
page-locked (``pinned_store_max``) for one large layered sweep: Held-Karp on random cities, each way
in a fresh process (the page-locked pool is a process's), the whole call, its kernels and the
sweep's figures, the tour lengths compared; and what page-locking the store's bytes costs alone.

    python tools/pinned_store.py OUT.jsonl [--cities 32] [--plain-from 1073741824]
                                           [--stores device,plain,page-locked]

One JSON line a run: ``store`` "device", "plain" or "page-locked", ``cities``, ``whole_s``, ``seconds``,
``kernel_s``, ``length``, the sweep's ``extra`` (scalars); then ``pin_s``: ``cuda.pinned_array``
of the decision store's bytes. Needs a GPU, and gpudp installed (``pip install -e .``: the runs import
``gpudp.problems``, which a plain ``PYTHONPATH`` does not map).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

_ONE = """
import json, sys, time
import numpy as np
from gpudp import backends
from gpudp.problems.tsp import held_karp as hk
n, limit, share = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
type(backends.get("cuda")).pinned_store_max = limit
type(backends.get("cuda")).device_store_share = share
xy = np.random.default_rng(n).integers(0, 1000, (n, 2))
d = np.rint(np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))).astype(np.int64)
t = time.perf_counter()
sol = hk.solve(hk.from_matrix(d), backend="cuda", progress=False)
whole = time.perf_counter() - t
extra = {k: v for k, v in sol.stats.extra.items() if isinstance(v, (int, float, str, bool))}
print(json.dumps(dict(whole_s=whole, seconds=sol.stats.seconds, kernel_s=sol.stats.kernel_seconds,
                      length=str(sol.value), extra=extra)))
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cities", type=int, default=32)
    ap.add_argument("--plain-from", type=int, default=1 << 30, help="pinned_store_max for the plain runs")
    ap.add_argument("--stores", default="device,plain,page-locked", help="comma list, run in this order")
    args = ap.parse_args(argv)
    # each store: (pinned_store_max, device_store_share); a share of 0 keeps no store on the device
    settings = {
        "device": (args.plain_from, 0.9),
        "plain": (args.plain_from, 0.0),
        "page-locked": (1 << 62, 0.0),
    }
    rows = []
    for store in args.stores.split(","):
        limit, share = settings[store]
        argv = [sys.executable, "-c", _ONE, str(args.cities), str(limit), str(share)]
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode:  # its stderr says why (a device run once lacked gpudp.problems: install first)
            raise SystemExit(f"the {store} run failed:\n{out.stderr[-3000:]}")
        row = dict(store=store, cities=args.cities, **json.loads(out.stdout.strip().splitlines()[-1]))
        rows.append(row)
        print(json.dumps(row), flush=True)
    assert len({r["length"] for r in rows}) == 1, "the stores gave different tours' lengths"
    import numpy as np
    from numba import cuda

    nbytes = int(rows[0]["extra"].get("decision_store_bytes", 0))
    t = time.perf_counter()
    block = cuda.pinned_array(max(nbytes // 4, 1), np.uint32)
    row = dict(pin_s=time.perf_counter() - t, bytes=nbytes)
    del block
    rows.append(row)
    print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main()
