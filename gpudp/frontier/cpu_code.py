"""The frontier's CPU kernels, written as plain numba code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`gpudp.frontier.cpu.kernels`), where the problem's ``child_c`` and the node table's
``_key_c`` and ``_hash_c`` are bound (compiled functions). Here they are placeholders, so that the
module reads, lints and highlights as the Python it is.
"""

child_c = _key_c = _hash_c = None


def expand(m, level, best, slack, f0, f1, bits, data, nvars, sym, kb, table, used, o0, o1, obits):
    """Expand ``m`` nodes of ``level``; write the survivors; return (count, best, best son).

    ``bits`` and ``obits`` are node-major: ``bits[i, w]`` is word ``w`` of node ``i``."""
    last = level + 1 >= nvars
    mask = len(table) - 1
    nused = 0
    wl = level >> 5
    bp = level & 31
    pw = (level - 1) >> 5
    pb = (level - 1) & 31
    cnt = 0
    barg = -1
    for i in range(m):
        blocked = sym[level] != 0 and ((bits[i, pw] >> pb) & 1) == 0
        for t in range(2):
            take = 1 - t
            if take == 1 and blocked:
                continue
            ok, c0, c1, u, lo = child_c(level, f0[i], f1[i], take, data, nvars)
            if not ok:
                continue
            if lo > best:
                best = lo
                barg = 2 * i + t
            if not last and u > best - slack:
                if kb > 0:  # drop exact duplicates (same fields, same next-copy bit)
                    key = _key_c(c0, c1, take if sym[level + 1] != 0 else 0, kb)
                    slot = _hash_c(key, mask)
                    while table[slot] != -1 and table[slot] != key:
                        slot = (slot + 1) & mask
                    if table[slot] == key:
                        continue
                    table[slot] = key
                    used[nused] = slot
                    nused += 1
                o0[cnt] = c0
                o1[cnt] = c1
                for w in range(wl):
                    obits[cnt, w] = bits[i, w]
                prev = bits[i, wl] if bp != 0 else 0
                obits[cnt, wl] = prev | (take << bp)
                cnt += 1
    for j in range(nused):
        table[used[j]] = -1
    return cnt, best, barg


# the problem's child called from the host (the incumbent's fields): a kernel of its own, so that it
# is cached too (the child itself, made by exec, cannot be)
def child_host(level, f0, f1, take, data, nvars):
    return child_c(level, f0, f1, take, data, nvars)
