"""Write two related synthetic genomes as FASTA: ``python tools/related_genomes.py OUT_DIR [LENGTH]``.

A stand-in for two strains of one bacterium (issue 19 asks for two ~5 Mbp E. coli genomes; the GPU
machine reaches no network and ../shared/data holds no such pair): a uniform random genome of LENGTH
bases (default 5,000,000) and a copy with 1 % substitutions, 0.1 % short insertions and deletions
(1..10 bases) and one inverted segment of 1 % of the length. Seeded: the same files every time.
"""

import sys
from pathlib import Path

import numpy as np

out = Path(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000_000
rng = np.random.default_rng(19)
bases = np.frombuffer(b"ACGT", np.uint8)
a = bases[rng.integers(0, 4, n)]
b = a.copy()
sub = rng.random(n) < 0.01
b[sub] = bases[(np.searchsorted(bases, b[sub]) + rng.integers(1, 4, sub.sum())) % 4]
lo = int(rng.integers(0, n - n // 100))
comp = np.zeros(256, np.uint8)
comp[bases] = bases[::-1]
b[lo : lo + n // 100] = comp[b[lo : lo + n // 100][::-1]]  # an inversion, reverse-complemented
pieces, at = [], 0
for pos in np.sort(rng.choice(n, n // 1000, replace=False)):
    pieces.append(b[at:pos])
    k = int(rng.integers(1, 11))
    if rng.random() < 0.5:
        pieces.append(bases[rng.integers(0, 4, k)])  # an insertion
        at = pos
    else:
        at = min(pos + k, n)  # a deletion
pieces.append(b[at:])
b = np.concatenate(pieces)
out.mkdir(parents=True, exist_ok=True)
for name, seq in (("strain_a", a), ("strain_b", b)):
    text = seq.tobytes().decode()
    lines = "\n".join(text[k : k + 80] for k in range(0, len(text), 80))
    (out / f"{name}.fa").write_text(f">{name} synthetic, {len(seq)} bp (tools/related_genomes.py)\n{lines}\n")
    print(out / f"{name}.fa", len(seq))
