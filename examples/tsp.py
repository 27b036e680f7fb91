"""Exact travelling salesman tours by Held-Karp: a TSPLIB file, a networkx graph, and a drawing.

    python examples/tsp.py [FILE.tsp] [--backend auto|cpu|cuda] [--plot tour.png]

The first solve reads a TSPLIB file (default: ulysses16, 16 places of the Odyssey with GEO
coordinates; its proven optimum is 6859) and draws the tour with matplotlib when it is installed
(otherwise it says the plot was skipped). The second builds a directed networkx graph of travel
times between a few towns, where going uphill takes longer than coming down, and finds the fastest
round trip. Both answers are checked against their instance before they return.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import networkx as nx

from gpudp.problems.tsp import held_karp as tsp_held_karp
from gpudp.problems.tsp import tsplib

HERE = Path(__file__).resolve().parent
ULYSSES = HERE.parent / "tests" / "data" / "tsplib" / "ulysses16.tsp"

#: town -> (x km, y km, altitude m)
TOWNS = {
    "Chamonix": (0, 0, 1035),
    "Argentière": (8, 5, 1252),
    "Les Houches": (-6, -4, 1008),
    "Megève": (-20, -12, 1113),
    "Saint-Gervais": (-12, -10, 807),
    "Sallanches": (-16, -2, 550),
    "Vallorcine": (12, 12, 1260),
}


def alpine_graph() -> nx.DiGraph:
    """Minutes by bike between every two towns: 3 min/km on the flat, plus 1 min per 10 m up."""
    g = nx.DiGraph(name="alpine towns")
    for a, (xa, ya, za) in TOWNS.items():
        for b, (xb, yb, zb) in TOWNS.items():
            if a != b:
                km = ((xa - xb) ** 2 + (ya - yb) ** 2) ** 0.5
                g.add_edge(a, b, minutes=round(3 * km + max(0, zb - za) / 10))
    return g


def plot_tour(inst: tsplib.TSPLIBInstance, sol, path) -> str:
    """Draw the tour over the instance's coordinates; return what happened, in words."""
    if inst.coords is None:
        return "plot skipped: the instance has no coordinates"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install matplotlib)"
    idx = sol.details["tour_index"] + sol.details["tour_index"][:1]
    # GEO coordinates are (latitude, longitude): draw longitude across, latitude up
    xy = inst.coords[:, ::-1] if inst.edge_weight_type == "GEO" else inst.coords[:, :2]
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot(xy[idx, 0], xy[idx, 1], "-o", color="tab:blue", markersize=4)
    for k, label in enumerate(inst.labels):
        ax.annotate(str(label), xy[k], textcoords="offset points", xytext=(3, 3), fontsize=8)
    ax.set_title(f"{inst.name}: optimal tour, length {sol.value}")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return f"tour drawn in {path}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(ULYSSES), help="TSPLIB file (default: ulysses16)")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--plot", default="tsp_tour.png", help="PNG file for the drawing of the tour")
    args = ap.parse_args(argv)

    inst = tsplib.read_tsplib(args.file)
    sol = tsp_held_karp.solve(inst, backend=args.backend)
    st = sol.stats
    print(f"{inst.name}: tour length {sol.value} ({inst.edge_weight_type}, {inst.dimension} cities)")
    print("tour:", " ".join(map(str, sol.solution)))
    print(f"{st.backend}: {st.seconds:.3f} s, {st.bytes_evicted} bytes of decisions")
    print(plot_tour(inst, sol, args.plot))

    g = alpine_graph()
    sol = tsp_held_karp.solve(g, backend=args.backend, weight="minutes")
    print(f"networkx {g.graph['name']}: fastest round trip {sol.value} minutes")
    print("  " + " -> ".join(sol.solution + sol.solution[:1]))
    d = tsp_held_karp.from_networkx(g, weight="minutes").matrix
    backwards = tsp_held_karp.tour_length(d, sol.details["tour_index"][::-1])
    print(f"  the same loop ridden backwards: {backwards} minutes (climbs cost time)")


if __name__ == "__main__":
    main()
