"""Longest common subsequence on the wavefront engine, with the subsequence itself; and the lengths
of many pairs at once, with their subsequences when asked (:func:`solve_many`, bit-parallel).

``H[i, j] = H[i-1, j-1] + 1`` when ``a[i] == b[j]``, else ``max(H[i-1, j], H[i, j-1])``: a grid
recurrence over offsets ``(-1, 0), (0, -1), (-1, -1)``, so the engine runs it tiled by
anti-diagonals. One decision bit per cell suffices for the traceback: where the symbols match the
path always goes diagonally (taking a match is never worse), elsewhere the bit says up or left.
"""

from __future__ import annotations

import functools
import time
from importlib import resources

import numpy as np

from gpudp import backends, lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, predicted_seconds
from gpudp.backends import where as backend_words
from gpudp.checkpoints import check_every
from gpudp.engine import sweep
from gpudp.errors import InputError, TimeLimitReached
from gpudp.inputs import parse_time_limit
from gpudp.memory import parse_bytes
from gpudp.progress import announce
from gpudp.recurrence import GridRecurrence
from gpudp.solution import BatchResult, NoSolutions, Solution, Stats, warn_unproven

from . import batch, cross, pair
from .fasta import read_fasta, read_fasta_records
from .greedy import count_bound, greedy_common
from .sequences import encode, kernel_codes, kind

__all__ = [
    "LCSRecurrence",
    "cdist",
    "count_bound",
    "encode",
    "greedy_common",
    "read_fasta",
    "read_fasta_records",
    "solve",
    "solve_many",
]


class LCSRecurrence(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 1
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # a[i] and b[j] reach the cell as ai, bj (kept in registers on the GPU)

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return (self.a, self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, up, left, diag, ai, bj, a, b):
        if ai == bj:
            return diag + 1, 0
        if up >= left:
            return up, 1
        return left, 0

    @staticmethod
    def boundary(i, j, a, b):
        return 0

    @staticmethod
    def back(i, j, d, a, b):
        if a[i] == b[j]:
            return i - 1, j - 1
        if d:
            return i - 1, j
        return i, j - 1


def solve(
    a,
    b,
    backend: str = "auto",
    memory_budget=None,
    progress=None,
    tile=None,
    store: str = "auto",
    checkpoint_every=None,
    time_limit=None,
    method: str = "auto",
) -> Solution:
    """The length of a longest common subsequence of ``a`` and ``b`` and one such subsequence.

    ``a``, ``b``: str, bytes, or 1-D integer arrays, lists or tuples. Symbols compare as the values
    they are: integers exactly, whatever their dtypes (a uint64 2**64 - 1 never equals an int64 -1;
    Python ints beyond 64 bits are accepted), bytes as the integers 0..255, str as characters. A str
    pairs only with a str; floats, bools and arrays of more than one dimension raise
    :class:`~gpudp.InputError`. Returns a checked :class:`gpudp.Solution` whose ``value`` is the
    length and ``solution`` the subsequence (of the type of ``a``; for arrays, ``a``'s dtype);
    ``details["indices_a"]`` / ``["indices_b"]`` are its positions in each input.

    ``store``: where the traceback's decisions come from (see :func:`gpudp.engine.sweep`):
    ``"full"`` keeps a bit per cell (32 GiB at 2^19 x 2^19); ``"checkpoints"`` keeps every K-th
    row and column (``checkpoint_every``) and sweeps again the blocks the subsequence crosses, so
    that alignments of millions of symbols need a few GiB; ``"auto"`` takes checkpoints when the
    full store would not stay within ``memory_budget`` (a budget of 0: the full store, all on disk;
    checkpoints need memory, and ``"checkpoints"`` refuses 0). ``checkpoint_every``: a positive integer,
    checked first (see :func:`gpudp.checkpoints.check_every`); one at least as long as the longer
    sequence makes the whole grid one block (no checkpoints; its decisions a byte a cell on the
    cpu), refused before the sweep when that block does not fit the memory there is.

    ``time_limit``: seconds after which the sweep stops (between chunks of about 4 M cells); the
    solution is then not optimal (``optimal`` False, ``details["stopped"] == "time"``): ``value``
    and ``solution`` are a common subsequence found greedily (checked like any other), a proven lower
    bound, and ``details["upper_bound"]`` the sum over symbols of the lesser count in the two
    sequences (at most ``min(len(a), len(b))``). A solve predicted to take over a minute says so on
    stderr first (unless ``progress=False``). The bit vectors cannot stop: ``method="bitparallel"``
    refuses a limit, and ``"auto"`` takes them under one only where they are predicted to take at
    most a tenth of it (:data:`.pair.VECTORS_LIMIT_SHARE`), else the engine.

    ``method``: ``"wavefront"`` sweeps the recurrence with the engine (:func:`gpudp.engine.sweep`:
    any backend, linear space with checkpoints, a time limit, progress); ``"bitparallel"`` runs
    Hyyrö's bit-vector recurrence on one CPU thread, 64 cells a word operation, keeping every
    column's vector (``min(len) / 64`` words a column: ``len(a) * len(b) / 8`` bytes, 0.5 GB for
    56,000 x 72,000) and walking the subsequence back through them (the CPU kernels of
    ``solve_many(..., traceback=True)``), one to two orders of magnitude faster than the engine's
    CPU sweep; it has no GPU kernel (one pair is one thread's work there). ``"auto"``: the bit
    vectors where they take at most :data:`.pair.PAIR_VECTORS_MAX` and half the memory budget, no
    engine option (below) is given, the backend asked for runs them (``"auto"`` or ``"cpu"``)
    and, with ``backend="auto"``, they are predicted no slower than the engine on the backend it
    would take (the rates of ``gpudp info``); else the engine. Either way the subsequence is
    checked against both inputs; ``stats.extra["method"]`` says which ran. The engine's options
    ``tile``, ``store`` (other than ``"auto"``) and ``checkpoint_every`` apply to the engine only:
    given (not None), ``"auto"`` takes the engine, so that each does what it says, and
    ``"bitparallel"`` refuses them (and ``time_limit``, above).

    Raises
    ------
    InputError
        bad sequences or options; ``method="bitparallel"`` with a backend that has no such kernel,
        vectors that would not fit, or an engine option (named: ``tile``, ``store``,
        ``checkpoint_every``, ``time_limit``).
    """
    t_start = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    checkpoint_every = check_every(checkpoint_every)
    xa, xb = encode(a, "a"), encode(b, "b")
    ka, kb = kind(a), kind(b)
    if (ka == "str") != (kb == "str"):
        raise InputError(
            "b",
            f"a is {type(a).__name__} but b is {type(b).__name__}: a str pairs only with a str "
            "(characters are not integers); encode both alike",
        )
    if memory_budget is not None:
        memory_budget = parse_bytes(memory_budget, "memory_budget")
    ea, eb = kernel_codes(xa, xb)
    cells = len(ea) * len(eb)
    given = dict(tile=tile, store=None if store == "auto" else store, checkpoint_every=checkpoint_every)
    given.update(time_limit=time_limit)
    engine_options = {k: v for k, v in given.items() if v is not None}  # the defaults: not given
    bits_on, why = pair.choose_method(method, backend, engine_options, len(ea), len(eb), memory_budget)
    if bits_on is not None:
        return pair.solve_bitparallel(ka, xa, xb, ea, eb, bits_on, why, t_start)
    chosen = choose_backend(backend, cells)[0]  # the sweep's own choice (gpudp.engine.plan_sweep)
    what = f"lcs {len(ea):.3g} x {len(eb):.3g} = {cells:.3g} cells"
    announce(what, predicted_seconds(cells, chosen), backend_words(chosen), time_limit, progress)
    try:
        result = sweep(
            LCSRecurrence(ea, eb),
            backend=backend,
            memory_budget=memory_budget,
            progress=progress,
            tile=tile,
            store=store,
            checkpoint_every=checkpoint_every,
            time_limit=time_limit,
            started=t_start,
        )
    except TimeLimitReached as stop:
        return _stopped(ka, xa, xb, ea, eb, stop, chosen, time.perf_counter() - t_start)
    try:
        n, m = len(ea), len(eb)
        length = int(result.last_row[-1]) if n and m else 0
        if n and m:
            path = result.traceback((n - 1, m - 1))
            i, j = path[:, 0], path[:, 1]
            match = ea[i] == eb[j]
            ia, ib = i[match][::-1].copy(), j[match][::-1].copy()
        else:
            ia = ib = np.zeros(0, dtype=np.int64)
    finally:
        result.close()
    backends.observe("grid", cells, result.stats)
    return pair.solution(ka, xa, xb, ea, eb, length, ia, ib, result.stats)


def _stopped(ka, xa, xb, ea, eb, stop: TimeLimitReached, backend: str, seconds: float) -> Solution:
    """The checked, not optimal :class:`Solution` of a sweep stopped by its time limit: the common
    subsequence :func:`greedy_common` finds (a proven lower bound, the witness) and the symbol-count
    upper bound (:func:`count_bound`)."""
    ia, ib = greedy_common(ea, eb)
    upper = count_bound(ea, eb)
    stats = Stats(backend=backend, device=device_name(backend), cells=stop.done, seconds=seconds)
    sol = pair.solution(ka, xa, xb, ea, eb, len(ia), ia, ib, stats, checked=False)
    sol.optimal = False
    sol.details.update(
        stopped="time",
        message=f"{stop}: a common subsequence found greedily (a lower bound), not proven optimal",
        lower_bound=len(ia),
        upper_bound=upper,
    )
    sol.check()
    return sol


def _witness(a, b, length, ia, ib, stats) -> Solution:
    """A batch pair's checked :class:`Solution` from its positions (``solve_many`` with
    ``traceback=True`` makes them when read)."""
    xa, xb = encode(a, "a"), encode(b, "b")
    ea, eb = kernel_codes(xa, xb)
    return pair.solution(kind(a), xa, xb, ea, eb, length, ia, ib, stats)


def _pick(a, ia):
    """The symbols of ``a`` at positions ``ia``, in ``a``'s type (a batch pair's subsequence)."""
    return pair.subsequence(kind(a), encode(a, "a"), ia)


def demo(backend: str = "auto") -> Solution:
    """The bundled example: HIV-1 (9,181 nt) against the Yersinia pestis plasmid pPCP1 (9,609 nt)."""
    data = resources.files("gpudp.data")
    with (
        resources.as_file(data / "hiv1_NC_001802.fna") as pa,
        resources.as_file(data / "yersinia_pPCP1_NC_005816.fna") as pb,
    ):
        (na, a), (nb, b) = read_fasta(pa), read_fasta(pb)
    sol = solve(a, b, backend=backend)
    sol.details.update(name_a=na, name_b=nb)
    return sol


def summary(sol: Solution, width: int = 70) -> str:
    seq = sol.solution if isinstance(sol.solution, str) else repr(sol.solution)
    shown = seq if len(seq) <= width else seq[: width - 3] + "..."
    st = sol.stats
    lines = []
    if "name_a" in sol.details:
        lines += [f"a: {sol.details['name_a']}", f"b: {sol.details['name_b']}"]
    spilled = " (spilled to disk)" if st.spilled_to_disk else ""
    compile_s = st.extra.get("compile_seconds", 0.0)
    compiling = f" ({compile_s:.2f} s of it compiling)" if compile_s > 0.05 else ""
    run_s = st.seconds - compile_s
    gcups = st.cells / run_s / 1e9 if run_s > 0 else 0.0
    kept = f"{st.bytes_evicted / 2**20:.1f} MiB of decisions{spilled}"
    if "vector_bytes" in st.extra:  # method="bitparallel"
        kept = f"{st.extra['vector_bytes'] / 2**20:.1f} MiB of bit vectors"
    tb = st.extra.get("traceback")
    if tb:  # swept with checkpoints: the forward sweep's figures, then the traceback's
        kept = (
            f"{st.extra['checkpoint_bytes'] / 2**20:.1f} MiB of checkpoints (every "
            f"{st.extra['checkpoint_every']}); traceback {tb['seconds']:.3f} s, {tb['rounds']} "
            f"round{'s' if tb['rounds'] != 1 else ''} over {tb['blocks']} blocks"
        )
    if sol.details.get("stopped"):  # a time limit: bounds, not the optimum
        return "\n".join(
            lines
            + [
                f"LCS length of {sol.details['len_a']} x {sol.details['len_b']}: between "
                f"{sol.details['lower_bound']} and {sol.details['upper_bound']} (not optimal: "
                f"{sol.details['message']})",
                f"common subsequence of length {sol.value} (checked): {shown}",
                f"{st.backend} on {st.device}: stopped after {st.seconds:.3f} s, {st.cells:.3g} cells swept",
            ]
        )
    lines += [
        f"LCS length {sol.value} of {sol.details['len_a']} x {sol.details['len_b']} (checked)",
        f"subsequence: {shown}",
        f"{st.backend} on {st.device}: {st.seconds:.3f} s{compiling}, {gcups:.2f} GCUPS, {kept}",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# CLI


def cli_arguments(p):
    p.add_argument("a", help="FASTA file (first record; every record with --pairs) or plain sequence file")
    p.add_argument("b", help="FASTA file (first record; every record with --pairs) or plain sequence file")
    p.add_argument(
        "--pairs",
        choices=["zip", "all"],
        default=None,
        help="a batch over every record: zip pairs record k of a with record k of b, all every record "
        "of a with every record of b (a cross product, lcs.cdist: no pair made, unless --traceback "
        "or a Dask cluster); one line a pair (TSV, or JSON lines with --json), lengths only unless "
        "--traceback",
    )
    p.add_argument(
        "--traceback",
        action="store_true",
        help="with --pairs: each pair's subsequence too (the bit vectors of every column kept and "
        "walked back, every subsequence checked)",
    )
    p.add_argument(
        "--method",
        choices=list(pair.METHODS),
        default="auto",
        help="bitparallel: the pair's bit vectors on one CPU thread, walked back (len(a) x len(b) / 8 "
        "bytes); wavefront: the engine's sweep (any backend, --store, --time-limit); auto: the bit "
        "vectors where they fit and are predicted faster",
    )
    p.add_argument(
        "--case-sensitive",
        action="store_true",
        help="compare lower- and upper-case symbols as different (default: soft-masked "
        "lower-case bases equal upper-case)",
    )
    p.add_argument(
        "--memory-budget",
        default=None,
        help="host bytes for the decision store before it spills to disk (e.g. 8G; 0: --store full "
        "keeps every decision on disk, --store checkpoints is refused, since its checkpoints need "
        "memory, and auto takes full); with --pairs, for the batch (refused before it starts when "
        "its pairs and results would take more)",
    )
    p.add_argument(
        "--store",
        choices=["auto", "full", "checkpoints"],
        default="auto",
        help="full: a decision bit per cell; checkpoints: every K-th row and column, the blocks the "
        "subsequence crosses swept again (linear space); auto: checkpoints when the full store would "
        "not fit the memory budget",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        help="K, the checkpoints' spacing: a multiple of the tile; K past the grid's longer side means one "
        "block, the whole grid (no checkpoints)",
    )
    p.add_argument(
        "--time-limit",
        default=None,
        help="stop after this many seconds with proven bounds (a greedy common subsequence and a "
        "symbol-count upper bound), exit 1",
    )
    p.add_argument(
        "--scheduler", default=None, help="with --pairs: run the batch on the Dask scheduler at this address"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="with --pairs: run the batch on a local Dask cluster of this many worker processes (one a "
        "GPU with --backend cuda; at most one a pair, and on the cpu one a core)",
    )


def cli_solve(args) -> Solution | int:
    # the options' values before the files are read
    time_limit = parse_time_limit(args.time_limit, "--time-limit")
    budget = None if args.memory_budget is None else parse_bytes(args.memory_budget, "--memory-budget")
    every = check_every(args.checkpoint_every, "--checkpoint-every")
    if args.scheduler is not None or args.workers is not None:
        if not args.pairs:
            raise InputError("workers", "--workers and --scheduler run a batch: give --pairs zip or all")
        from gpudp import distributed

        distributed.check_cluster(args.scheduler, args.workers)
    if args.pairs:
        if time_limit is not None:
            raise InputError("--time-limit", "applies to one pair, not to --pairs batches")
        return _cli_batch(args, budget)
    na, a = read_fasta(args.a, args.case_sensitive, field="a")
    nb, b = read_fasta(args.b, args.case_sensitive, field="b")
    sol = solve(
        a,
        b,
        backend=args.backend,
        memory_budget=budget,
        progress=None,
        store=args.store,
        checkpoint_every=every,
        time_limit=time_limit,
        method=args.method,
    )
    sol.details.update(name_a=na, name_b=nb)
    warn_unproven(sol)
    return sol


def solve_many(
    pairs, backend: str = "auto", traceback: bool = False, verify: int = 2, progress=None, client=None
):
    """The LCS lengths of many pairs of sequences in one call, and with ``traceback=True`` a longest
    common subsequence of each, checked.

    Parameters
    ----------
    pairs : iterable of ``(a, b)``, or a tuple ``(A, B)`` of two 2-D integer arrays, Arrow arrays or Strs
        each pair as :func:`solve` takes it (str, bytes, 1-D integer arrays or lists); or pair
        ``p`` as rows ``A[p]`` and ``B[p]``, the fast form for many pairs of equal lengths (no
        Python work per pair); or as items ``A[p]``, ``B[p]`` of two pyarrow ``string`` /
        ``large_string`` (text, by code point) or ``binary`` / ``large_binary`` arrays (or chunked
        arrays: a table's columns) or two StringZilla ``Strs`` (bytes), any lengths, read from
        their buffers with no Python work per pair (a null is its pair's error;
        :mod:`gpudp.problems.lcs.arrow`). A list whose every
        pair is two ``str``, two ``bytes`` or two 1-D integer arrays (one dtype a side) is read in
        bulk, each side joined into one buffer (non-ASCII text by code point); any other list pair
        by pair. ``A`` and ``B`` may be dask
        arrays (data in a Dask cluster: read from files by ``dask.array``, made by an earlier step,
        or persisted), with ``client`` only: see ``client``. They may lie in GPU memory (CuPy
        arrays, PyTorch CUDA tensors, numba device arrays: anything with
        ``__cuda_array_interface__``), 2-D C-contiguous
        ``uint8``: the batch then runs on the GPU where they lie, nothing copied to the device
        (with ``backend="cpu"`` or ``traceback=True`` they are copied to the host first).
    backend : "auto", "cpu" or "cuda"
    traceback : bool
        False (the default): lengths only, by the bit-parallel recurrence (64 cells per word
        operation; one pair per thread on the GPU, or, in a batch whose longest pattern has 2,048
        symbols or more, a warp a pair with the pattern's words over its lanes; one pair per loop
        iteration on every CPU core).
        True: the same recurrence with every column's bit vector kept (``m * n / 8`` bytes a pair),
        then walked back from the last cell to a longest common subsequence
        (:mod:`gpudp.problems.lcs.bitparallel` derives the walk). On the CPU a pair per loop
        iteration, its vectors freed with it; on the GPU chunks of pairs sized to device memory,
        a thread a pair for the vectors (interleaved so that a warp's writes are contiguous) and
        for the walk, the positions copied back on two streams while the next chunk computes.
        A pair whose vectors would take more than 64 MiB is solved alone by :func:`solve` (its own
        bit vectors on one thread, or the wavefront engine, in linear space when it must). The
        vectors' kernel needs a GPU thread's local memory for the pattern's masks (symbol codes x
        64-bit words a pattern, each rounded up to a power of two); a batch that needs more than
        4,096 words of them (more than 256 bytes x 1,024 symbols, 4 bases x 65,536) runs on the
        cpu (``stats.extra["backend_choice"]`` says so).
    verify : int, bool or None
        how many pairs (chosen at random among the smaller ones) are re-solved on the host by the
        textbook dynamic program (:mod:`gpudp.problems.lcs.plain`, not the batch's bit vectors;
        while the GPU computes) and compared with the batch's lengths; a disagreement raises
        :class:`gpudp.CheckError`. Without ``traceback``
        this is the only check of the lengths; with it, it is the cross-check of their optimality
        (a subsequence found proves only a lower bound). None or True: the default, 2; False: 0.
        Anything but a whole number >= 0 or these raises :class:`gpudp.InputError`.
    progress : bool or None
        unused by this batch (kept for the signature the sequence solvers share).
    client : dask.distributed.Client or None
        run the batch on a Dask cluster (:mod:`gpudp.distributed`): chunks of about equal cells, one
        task a chunk on the workers (one GPU each where each worker sees one), ``verify`` pairs
        checked per chunk, results in input order; ``stats.extra`` gives the workers and chunks.
        Pairs given here (lists, numpy arrays) are sent from this process with their chunks'
        tasks. With ``(A, B)`` dask arrays the chunks are ``A``'s row blocks (``B`` rechunked to
        them along its rows, each array one block along its columns), and each chunk's task
        takes its two blocks as Dask dependencies: Dask computes them on the workers, or finds
        them there, and runs the task on a worker that holds them, so no pair passes through
        this process on the way in (with ``traceback=True`` the results bring their pairs back,
        for ``subsequences`` and ``solutions``). Dask arrays without a client are refused.

    Returns
    -------
    gpudp.BatchResult
        ``values``: lengths in input order; a pair that cannot be read (not two sequences, a float
        array, a str beside bytes ...) gets -1 and its error in ``errors``, naming ``pairs[p]``,
        without stopping the batch, the same error whatever the mode. With
        ``traceback=True`` also ``subsequences``
        (:class:`gpudp.problems.lcs.subsequences.Subsequences`): ``subsequences[p]`` is pair
        ``p``'s subsequence in the type of its ``a`` (str, bytes, or an array of ``a``'s dtype),
        ``subsequences.positions(p)`` its positions in ``a`` and ``b``, and in bulk
        ``pos_a[start[p] : start[p] + values[p]]`` / ``pos_b[...]`` (flat arrays, no object a
        pair); ``solutions[p]`` is pair ``p``'s :class:`gpudp.Solution`, as :func:`solve` returns
        it, made and checked once more (symbols compared as Python values) when first read;
        ``verified`` lists every pair solved.

    Raises
    ------
    gpudp.InputError
        for ``pairs`` that is not an iterable of pairs (None, a number, a str), ``traceback`` that
        is not a bool, ``verify`` as above; for 2-D arrays that are not integers or not of as many
        rows; for dask arrays without ``client`` (or of unknown chunk sizes); and for a list of more
        pairs than the host's memory can hold with their results (``field`` "memory").
    gpudp.CheckError
        when a verified pair disagrees with the batch; with ``traceback=True`` also when a pair's
        subsequence fails its check: before returning, every pair's positions are checked to be
        strictly increasing in both sequences, inside them, on equal symbols, and as many as the
        bit-parallel length (all CPU cores, independently of the walk). No unchecked subsequence
        is returned.

    Examples
    --------
    >>> from gpudp.problems.lcs import solve_many
    >>> solve_many([("GATTACA", "TACCA"), ("AB", "BA"), ("", "X")], backend="cpu").values.tolist()
    [4, 1, 0]
    >>> r = solve_many([("GATTACA", "TACCA"), (b"ACGT", b"TGCA")], backend="cpu", traceback=True)
    >>> r.values.tolist(), list(r.subsequences)
    ([4, 1], ['TACA', b'A'])
    >>> [x.tolist() for x in r.subsequences.positions(0)]
    [[3, 4, 5, 6], [0, 1, 3, 4]]

    Rows of two dask arrays, solved on a cluster's workers where their blocks are:

    >>> import dask.array as da                                  # doctest: +SKIP
    >>> A = da.from_zarr("reads_a.zarr")  # (pairs, length) uint8  # doctest: +SKIP
    >>> B = da.from_zarr("reads_b.zarr")                          # doctest: +SKIP
    >>> solve_many((A, B), client=client).values                  # doctest: +SKIP
    """
    return batch.run(_SOLVER, pairs, backend, traceback, verify, progress, client)


def cdist(queries, choices, *, backend: str = "auto", dtype=None, score_cutoff=None, verify: int = 2):
    """The LCS length of every query against every choice: a 2-D array, as rapidfuzz's
    ``process.cdist(queries, choices, scorer=LCSseq.similarity)`` gives it, without making the
    pairs.

    Each sequence of one side is a pattern of Hyyrö's bit-parallel recurrence (64 cells a word
    operation), its bit masks built once and reused for every sequence of the other side: the
    queries, unless the choices make less work as patterns (the lengths are symmetric). On the cpu
    a parallel loop over the patterns (or patterns and runs of texts, when they are few); on the
    GPU a thread a cell of the result, every pattern's masks built once on the device (patterns of
    up to 1,024 symbols through kernels of their word count, vectors in registers, masks in shared
    memory: :mod:`.cross.cuda`). Exact integers throughout; non-ASCII text is compared by code
    point.

    Parameters
    ----------
    queries, choices : list or tuple of sequences, or a 2-D integer array
        each sequence as :func:`solve` takes it (str, bytes, 1-D integer arrays or lists of
        integers), or the rows of a 2-D integer array (many sequences of one length: no Python
        work per sequence). Lists whose every sequence is a ``str``, or every one ``bytes``, or
        every one a 1-D integer array of one dtype, are read in bulk (each side joined into one
        buffer). A pyarrow string or binary array (or chunked array), or a StringZilla ``Strs``
        (bytes), is read from its buffers (:mod:`gpudp.problems.lcs.arrow`). A str compares only
        with a str: a str on one side and anything else on either side is refused.
    backend : "auto", "cpu" or "cuda"
    dtype : integer dtype or None
        the result's dtype. None: int32, or int64 where a length could exceed it. A dtype that
        cannot hold the longest possible LCS (the shorter of the longest query and the longest
        choice) is refused.
    score_cutoff : int or None
        rapidfuzz's semantics for a similarity: a length below ``score_cutoff`` is reported as 0
        (None or 0: every length as it is). The lengths are exact either way. A pair whose
        shorter sequence is shorter than ``score_cutoff`` is reported 0 without being computed; a
        pair stops once its length so far plus the symbols left falls below ``score_cutoff``
        (tested every 32 symbols, on the cpu and the GPU).
    verify : int, bool or None
        how many cells (chosen at random among the shorter queries and choices) are re-solved on
        the host by the textbook dynamic program (:mod:`gpudp.problems.lcs.plain`) while the kernels
        run, and compared; a disagreement raises :class:`gpudp.CheckError`. None or True: 2;
        False: 0.

    Returns
    -------
    numpy.ndarray
        shape ``(len(queries), len(choices))``: ``out[i, j]`` is the LCS length of ``queries[i]``
        and ``choices[j]`` (after ``score_cutoff``). From the GPU, a result of up to 64 MB lies in
        page-locked memory of the process's pool, given back when the array is dropped.

    Raises
    ------
    gpudp.InputError
        before any kernel runs: a sequence that cannot be read (None, a number, a float array),
        naming it (``queries[i]`` / ``choices[j]``) - the whole call is refused, as the result is
        a matrix with no place for an error; a str beside a non-str; a side that is one sequence
        (a str, a 1-D array) rather than a list of them; ``dtype``, ``score_cutoff`` or
        ``verify`` as above; and a result that would not fit the host's memory (``field``
        "memory", with its size). A cross product that does not fit the GPU's memory at once is
        run in chunks of rows, not refused.
    gpudp.CheckError
        when a re-solved cell disagrees with the result.

    Examples
    --------
    >>> from gpudp.problems.lcs import cdist
    >>> cdist(["GATTACA", "ACGT"], ["TACCA", "ACGT", ""], backend="cpu").tolist()
    [[4, 2, 0], [2, 4, 0]]
    >>> cdist(["GATTACA", "ACGT"], ["TACCA", "ACGT"], backend="cpu", score_cutoff=3).tolist()
    [[4, 0], [0, 4]]
    """
    return cross.run(_SOLVER, queries, choices, backend, dtype, score_cutoff, verify, distance=False)[0]


#: the batch's lengths, a module a backend (:class:`.batch.PairSolver`)
LENGTHS = "lcs.lengths"
lowering.declare(LENGTHS, cpu=f"{__name__}.cpu", cuda=f"{__name__}.cuda")


_SOLVER = batch.PairSolver(
    solve=solve,
    family=LENGTHS,
    method="bit-parallel (Hyyro 2004)",
    what="LCS length",
    witness=_witness,
    pick=_pick,
    table="lcs_value",
    engine=functools.partial(solve, method="wavefront"),  # not the pair's bit vectors: the sweep
)


#: host bytes a pair of ``--pairs`` takes beside the batch's (:func:`batch.host_bytes`): its tuple
#: in the list of pairs and its place (measured: 75)
CLI_PAIR_BYTES = 100


def _cli_batch(args, budget: int | None) -> int:
    """``gpudp solve lcs A B --pairs zip|all``: one output line per pair, in order (a pair that
    failed says why in an ``error`` column); 0 when every pair was solved, else 1. A batch whose
    pairs and results would not fit the host's memory (or ``--memory-budget``) is refused first."""
    import json
    import sys

    ra = read_fasta_records(args.a, args.case_sensitive, field="a")
    rb = read_fasta_records(args.b, args.case_sensitive, field="b")
    la, lb = sum(len(s) for _, s in ra), sum(len(s) for _, s in rb)
    if args.pairs == "zip":
        if len(ra) != len(rb):
            raise InputError(
                "b", f"--pairs zip needs as many records in b as in a ({len(rb)} against {len(ra)})"
            )
        n, symbols = len(ra), la + lb
    else:  # every record of a with every record of b
        n, symbols = len(ra) * len(rb), la * len(rb) + lb * len(ra)
    # every record of a against every record of b, lengths only, here: a cross product (no pair made)
    product = args.pairs == "all" and not args.traceback and not (args.scheduler or args.workers)
    what = f"--pairs {args.pairs} of {len(ra):,} x {len(rb):,} records ({n:,} pairs)"
    change = "give fewer records (split the files)" + (", or --pairs zip" if args.pairs == "all" else "")
    if product:  # the result, int32; the lines are written one by one
        need = cross.host_bytes(len(ra), len(rb), la + lb, 4)
    else:
        need = batch.host_bytes(_SOLVER, n, symbols, args.traceback) + n * CLI_PAIR_BYTES
    batch.check_memory(need, what, change, budget, "--memory-budget")

    def records(p: int) -> tuple[int, int]:
        return (p, p) if args.pairs == "zip" else divmod(p, len(rb))

    if product:
        seqs_a, seqs_b = [x for _, x in ra], [x for _, x in rb]
        matrix, stats = cross.run(_SOLVER, seqs_a, seqs_b, args.backend, None, None, None, False)
        checked = [i * len(rb) + j for i, j in stats.extra.get("rechecked", [])]
        res = BatchResult(matrix.reshape(-1), {}, NoSolutions(n), checked, stats)
    else:
        res = _pairs_batch(args, [(ra[i][1], rb[j][1]) for i, j in map(records, range(n))])
    out = sys.stdout
    if not args.json:
        out.write(
            "name_a\tname_b\tlen_a\tlen_b\tlcs"
            + ("\tsubsequence" if args.traceback else "")
            + ("\terror" if res.errors else "")
            + "\n"
        )
    for p, (i, j) in enumerate(map(records, range(n))):
        row = {"name_a": ra[i][0], "name_b": rb[j][0], "len_a": len(ra[i][1]), "len_b": len(rb[j][1])}
        failed = res.errors.get(p)
        row["lcs"] = "-" if failed else int(res.values[p])
        if args.traceback:  # checked with the batch; no Solution kept a pair
            row["subsequence"] = "-" if failed else res.subsequences[p]
        if failed or res.errors:
            row["error"] = failed or ("" if not args.json else None)
        if args.json:
            out.write(json.dumps(row) + "\n")
        else:
            out.write("\t".join(str(v) for v in row.values()) + "\n")
    st = res.stats
    print(
        f"# {n} pairs, {st.cells:.3g} cells, {st.seconds:.3f} s on {st.backend} "
        f"({st.extra.get('method')}; {len(res.verified)} re-solved and checked"
        + (
            f"; {st.extra['dask_workers']} Dask workers, {st.extra['dask_chunks']} chunks)"
            if "dask_workers" in st.extra
            else ")"
        )
        + (f"; {len(res.errors)} failed" if res.errors else ""),
        file=sys.stderr,
    )
    return 1 if res.errors else 0


def _pairs_batch(args, pairs: list) -> BatchResult:
    """``--pairs``' batch by :func:`solve_many`: here, or on a Dask cluster (``--scheduler``,
    ``--workers``)."""
    pinned = args.backend != "auto" and backends.get(args.backend).one_device_a_worker
    workers, gpus = args.workers, pinned and (args.workers or 0) > 1
    if workers is not None:
        from gpudp.distributed import fit_workers

        workers = fit_workers(workers, len(pairs), gpus)  # 0: no pairs, no cluster
        gpus = gpus and workers > 1
    if args.scheduler or workers:
        from gpudp import distributed

        with distributed.cluster(args.scheduler, workers or None, gpus=gpus) as client:
            return solve_many(pairs, backend=args.backend, traceback=args.traceback, client=client)
    return solve_many(pairs, backend=args.backend, traceback=args.traceback)


# ------------------------------------------------------------------------------------------------
# The measurements of the rates auto predicts by (gpudp.backends.rates)


def _random_codes(rng, shape) -> np.ndarray:
    return rng.integers(0, 4, shape, dtype=np.uint8)


def _measure_grid(backend: str, step: int):
    """The generic grid sweep's measurement: the LCS of two random DNA-like sequences of about
    ``1024 x 2^(step/2)`` symbols each (``step`` doubles the cells, up to step 12), a whole solve.

    Returns
    -------
    (cells, the solve's :class:`gpudp.Stats`)
    """
    rng = np.random.default_rng(step)
    n = int(1024 * 2 ** (min(step, 12) / 2))
    a, b = _random_codes(rng, n), _random_codes(rng, n - 7)
    sol = solve(a, b, backend=backend, progress=False, method="wavefront")
    return len(a) * len(b), sol.stats


def _measure_bitparallel(backend: str, step: int):
    """The bit-parallel batch kernels' measurement: the LCS lengths of ``64 x 2^step`` random pairs
    (up to step 10) of 1,000 x 1,024 symbols, as rows of two arrays (the fast form).

    Returns
    -------
    (cells, the batch's :class:`gpudp.Stats`)
    """
    rng = np.random.default_rng(step)
    pairs = 64 << min(step, 10)
    a, b = _random_codes(rng, (pairs, 1000)), _random_codes(rng, (pairs, 1024))
    res = solve_many((a, b), backend=backend, verify=0)
    return pairs * 1000 * 1024, res.stats


backends.calibrator("grid", _measure_grid)
backends.calibrator(batch.FAMILY, _measure_bitparallel)
