"""Viterbi decoding on gpudp: the most likely hidden-state path of a hidden Markov model.

    python examples/viterbi.py [--states 300] [--symbols 4] [--steps 12] [--seed 0] [--backend auto|cpu|cuda]

Layer ``t`` is the time step, cell ``k`` a state; it holds the log-probability of the likeliest
path that ends in state ``k`` at step ``t`` having emitted ``obs[0..t]``::

    V(0, k) = log_init[k] + log_emit[k, obs[0]]
    V(t, k) = max over j of V(t - 1, j) + log_trans[j, k]  +  log_emit[k, obs[t]]

The decision is the best predecessor ``j``: with ``decision_bits = 16`` models of up to 65,536
states keep it whole (a decision that does not fit is an error, never truncated). The path is the
traceback from the likeliest last state.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import InputError, LayeredRecurrence, sweep


class Viterbi(LayeredRecurrence):
    value_dtype = np.float64
    decision_bits = 16  # the best predecessor state: up to 65,536 states
    fill = -np.inf

    def __init__(self, log_init, log_trans, log_emit, obs):
        self.log_init = np.asarray(log_init, dtype=np.float64)
        n = len(self.log_init)
        self.trans_to = np.ascontiguousarray(np.asarray(log_trans, dtype=np.float64).T)  # [k, j]: j -> k
        self.log_emit = np.asarray(log_emit, dtype=np.float64)
        self.obs = np.asarray(obs, dtype=np.int64)
        if not 1 <= n <= 1 << 16 or self.trans_to.shape != (n, n) or self.log_emit.shape[0] != n:
            raise InputError("model", f"need 1 to 65,536 states and n x n, n x symbols matrices ({n} states)")
        symbols = self.log_emit.shape[1]
        if self.obs.ndim != 1 or not self.obs.size or not 0 <= self.obs.min() <= self.obs.max() < symbols:
            raise InputError("obs", f"need one or more observations, symbols 0 .. {symbols - 1}")

    def num_layers(self):
        return len(self.obs)

    def layer_size(self, t):
        return len(self.log_init)

    def data(self):
        return self.log_init, self.trans_to, self.log_emit, self.obs

    @staticmethod
    def cell(t, k, prev, log_init, trans_to, log_emit, obs):
        if t == 0:
            return log_init[k] + log_emit[k, obs[0]], 0
        row = trans_to[k]
        best, arg = prev[0] + row[0], 0
        for j in range(1, len(row)):
            x = prev[j] + row[j]
            if x > best:
                best, arg = x, j
        return best + log_emit[k, obs[t]], arg

    @staticmethod
    def back(t, k, j, log_init, trans_to, log_emit, obs):
        return t - 1, j


def decode(log_init, log_trans, log_emit, obs, **sweep_options):
    """``(log-probability, state path, stats)`` of the likeliest path (ties: the lowest states);
    ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``memory_budget``, ...)."""
    rec = Viterbi(log_init, log_trans, log_emit, obs)
    result = sweep(rec, **sweep_options)
    end = int(np.argmax(result.last_layer))
    path = result.traceback((len(rec.obs) - 1, end))  # rows (t, k, j), the last step first
    result.close()
    return float(result.last_layer[end]), path[::-1, 1].copy(), result.stats


def random_model(states: int, symbols: int, seed: int = 0):
    """Log-probabilities of a random model: ``(log_init, log_trans, log_emit)``."""
    rng = np.random.default_rng(seed)

    def dist(*shape):
        p = rng.random(shape) + 1e-3
        return np.log(p / p.sum(axis=-1, keepdims=True))

    return dist(states), dist(states, states), dist(states, symbols)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Viterbi decoding on gpudp")
    parser.add_argument("--states", type=int, default=300)
    parser.add_argument("--symbols", type=int, default=4)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    model = random_model(args.states, args.symbols, args.seed)
    obs = np.random.default_rng(args.seed + 1).integers(0, args.symbols, args.steps)
    logp, path, stats = decode(*model, obs, backend=args.backend)
    print(f"log-probability {logp:.4f} ({stats.backend} backend), {args.states} states")
    print("states", " ".join(map(str, path)))


if __name__ == "__main__":
    main()
