"""The two-list search's CPU kernels (:mod:`.cpu`), written as plain numba code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`.cpu._cpu_funcs`), where the block functions (:mod:`.block_code`: ``ips``, ``narrow``,
``pair_search``) are bound, compiled. Here they are placeholders, so that the module reads, lints and
highlights as the Python it is.
"""

from numba import prange

from .block_code import INT64_MAX

ips = narrow = pair_search = None


def search(a, na, b, nb, cap, e, i0, i1, out_g, out_i, out_q, out_cnt):
    for i in prange(i0, i1):
        jlo, cnt = ips(a, na, b, nb, cap, e, i)
        best = INT64_MAX
        bi = -1
        bq = -1
        for j in range(jlo, jlo + cnt):
            g, gi, gq = pair_search(a, na, b, nb, cap, e, i, j)
            if g < best:
                best = g
                bi = gi
                bq = gq
        out_g[i] = best
        out_i[i] = bi
        out_q[i] = bq
        out_cnt[i] = cnt


def prune(a, na, b, nb, cap, e, out_jlo, out_cnt):
    for i in prange((na + e - 1) // e):
        out_jlo[i], out_cnt[i] = ips(a, na, b, nb, cap, e, i)


def narrow_host(a, na, b, nb, cap, e, i, j):
    return narrow(a, na, b, nb, cap, e, i, j)
