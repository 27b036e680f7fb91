"""The two-list block functions, one code for the CPU (njit) and the GPU (cuda device functions),
written as plain numba code.

Not run from here: :func:`.kernels.build` compiles each function's text (:func:`gpudp.kernel.load`)
in a namespace where ``upper_bound`` (the backend's :func:`gpudp.primitives.upper_bound`) and the
functions before it are bound. ``upper_bound`` is a placeholder here, so that the module reads,
lints and highlights as the Python it is.
"""

INT64_MAX = 2**63 - 1
upper_bound = None

# ----------------------------------------------------------------------------------------------------
# The block functions, one source for the CPU (njit) and the GPU (cuda device functions).
# C[q] = cap - B[nb - 1 - q] is the second list read ascending; it is never materialised.
#
# Everything is compiled as generated source (gpudp.kernel.load) with its constants and callees as
# globals (numba cannot cache closures): the block functions are compiled in memory (the kernels
# inline them), the kernels through the persistent cache (gpudp.cache on the CPU,
# gpudp.backends.cuda.generated_kernel on the GPU), so a second process loads the kernels instead of
# compiling them.


def owned(a, na, cap, e, i):
    """The values [lo, hi) whose predecessor in A lies in A-block i."""
    nxt = (i + 1) * e
    hi = cap + 1
    if nxt < na:
        hi = a[nxt]
    return a[i * e], hi


def c_lower(b, nb, cap, lo, hi, v):
    """First q in [lo, hi) with C[q] >= v (hi when none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if cap - b[nb - 1 - mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def ips(a, na, b, nb, cap, e, i):
    """IPS: the C-blocks [jlo, jlo + count) whose values meet A-block i's owned interval."""
    lo, hi = owned(a, na, cap, e, i)
    kc = (nb + e - 1) // e
    x = 0
    y = kc
    while x < y:  # first C-block whose last value >= lo
        mid = (x + y) >> 1
        last = (mid + 1) * e
        if last > nb:
            last = nb
        if cap - b[nb - last] < lo:
            x = mid + 1
        else:
            y = mid
    jlo = x
    y = kc
    while x < y:  # first C-block whose first value >= hi
        mid = (x + y) >> 1
        if cap - b[nb - 1 - mid * e] < hi:
            x = mid + 1
        else:
            y = mid
    return jlo, x - jlo


def narrow(a, na, b, nb, cap, e, i, j):
    """ISS: four binary searches. C-block j is cut to [q0, q1), the values A-block i owns; A-block
    i is cut to [a0, a1), from the predecessor of C[q0] to that of C[q1 - 1] (empty: q0 == q1)."""
    lo, hi = owned(a, na, cap, e, i)
    qe = (j + 1) * e
    if qe > nb:
        qe = nb
    q0 = c_lower(b, nb, cap, j * e, qe, lo)
    q1 = c_lower(b, nb, cap, q0, qe, hi)
    if q0 == q1:
        return q0, q1, i * e, i * e
    ae = (i + 1) * e
    if ae > na:
        ae = na
    a0 = upper_bound(a, i * e, ae, cap - b[nb - 1 - q0]) - 1
    a1 = upper_bound(a, a0 + 1, ae, cap - b[nb - q1])
    return q0, q1, a0, a1


def pair_search(a, na, b, nb, cap, e, i, j):
    """The two-list walk of one block pair: least gap C[q] - a (>= 0) over its narrowed runs, with
    where it is; gap INT64_MAX when the pair holds nothing."""
    q0, q1, ia, a1 = narrow(a, na, b, nb, cap, e, i, j)
    best = INT64_MAX
    bi = -1
    bq = -1
    for q in range(q0, q1):
        c = cap - b[nb - 1 - q]
        while ia + 1 < a1 and a[ia + 1] <= c:
            ia += 1
        g = c - a[ia]
        if g < best:
            best = g
            bi = ia
            bq = q
            if g == 0:
                break
    return best, bi, bq
