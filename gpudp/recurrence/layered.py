"""The layered shape: :class:`LayeredRecurrence`, explicit layers whose cells read whole previous
layers, and its sweep hints (the decision codec, the reach) with their checks."""

from __future__ import annotations

import numpy as np

from ..errors import ContractError, InputError
from .base import Recurrence

#: decision-store codecs a layered sweep may use (``sweep(rec, codec=...)`` or ``decision_codec``);
#: ``"auto"``: ``"bands"`` where the active ranges leave at most half of the cells computed, else
#: ``"plain"`` (:func:`auto_codec`)
CODECS = ("auto", "plain", "bands")


def auto_codec(sizes: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> str:
    """The codec ``"auto"`` stands for: ``"bands"`` where the layers' active ranges hold at most half of
    their cells (the rest keep decision 0 at both ends of each layer: runs the bands codec keeps as
    two values a layer, where the plain store keeps every word; a band of 129 of 20,010 cells a
    layer took 1.9 MB against 200 MB), else ``"plain"``."""
    return "bands" if 2 * int((hi - lo).sum()) <= int(sizes.sum()) else "plain"


class LayeredRecurrence(Recurrence):
    """Explicit layers; a cell reads whole previous layers.

    Subclasses may set ``window`` (default 1: the previous layer only) and define::

        def num_layers(self) -> int
        def layer_size(self, t) -> int
        @staticmethod
        def cell(t, k, prev_1, ..., prev_window, *data) -> value or (value, decision)
        @staticmethod
        def back(t, k, decision, *data) -> (t2, k2)  # traceback only: the predecessor of (t, k)

    ``prev_w`` is the array of layer ``t - w``'s values (holding ``fill`` when ``t - w < 0``).
    ``boundary`` is not used (never called): the layers before the first hold ``fill``. The sweep's
    result keeps the values of the last layer, ``last_layer`` (:class:`gpudp.grid.result.SweepResult`;
    its ``last_row`` and ``last_col`` are None). ``back`` returns a cell ``(t2, k2)`` of an earlier
    layer, ``t2 < t``, which must lie in layer ``t2``'s cells, ``0 <= k2 < layer_size(t2)``;
    ``t2 = -1`` ends the walk. Any other step is a :class:`ContractError` when the traceback is
    walked.

    2-D layers: a class that defines ``layer_shape`` instead of ``layer_size`` has layers of
    ``rows x cols`` cells, addressed ``(t, i, j)``::

        def layer_shape(self, t) -> (rows, cols)
        @staticmethod
        def cell(t, i, j, prev_1, ..., prev_window, *data) -> value or (value, decision)
        @staticmethod
        def back(t, i, j, decision, *data) -> (t2, i2, j2)

    ``prev_w`` is then a 2-D array, ``prev_w[i2, j2]`` the value of cell ``(t - w, i2, j2)`` (its
    shape is at least layer ``t - w``'s: the widest layer's, where the shapes differ; before the
    first layer it holds ``fill``), and ``last_layer`` is 2-D. A cell reads only cells inside its
    layers' shapes. The engine keeps each layer row-major (cell ``(i, j)`` at ``i * cols + j``);
    only what the recurrence sees changes. ``active_range`` and ``reach`` describe 1-D layers: a
    2-D class must leave them None (a :class:`ContractError` otherwise); ``traceback_state`` and
    ``reduce`` are not offered for 2-D layers. :meth:`gpudp.grid.result.SweepResult.traceback_tree`
    walks a ``back`` that returns two predecessors (Floyd-Warshall's path through ``k``).

    Optional:

    ``active_range(self) -> (lo, hi)``
        two integer arrays over the layers: only cells ``lo[t] <= k < hi[t]`` of layer ``t`` are
        computed; the others keep decision 0 and an unspecified value, and the recurrence promises
        that no cell (and no ``back``) reads them (``gpudp.sweep(rec, check=True)`` checks every
        read and step: :mod:`gpudp.checked`). ``None`` (the default) computes every cell.
    ``decision_codec``
        how the decision store keeps each layer's words: ``"plain"`` (every word of every layer),
        ``"bands"``: per layer, the leading and the trailing run of one repeated word (group of
        ``decision_bits`` words) are kept as two run values, and only the band of words between
        them is stored (worth it when decisions are constant towards both ends of a layer); or
        ``"auto"`` (the default): ``"bands"`` where ``active_range`` leaves at most half of the
        cells computed, else ``"plain"``.
        Preferred: the sweep's option, ``gpudp.sweep(rec, codec="bands")`` (it changes how the
        sweep stores, not what a cell is); the attribute is the option's default.
    ``reach(self) -> array``
        with ``window = 1``: one non-negative integer per layer, the promise that cell ``k`` of
        layer ``t`` reads the previous layer only at ``k - reach[t] .. k`` (knapsack: the item's
        weight). ``None`` (the default) promises nothing. On CUDA the engine then runs several
        layers per pass over the layer, each thread block keeping a span of the layer and the
        ``sum(reach)`` cells below it in shared memory, so that a layer costs no trip to device
        memory (temporal blocking); a cell that reads outside its reach gets wrong values there.
        Preferred: the sweep's option, ``gpudp.sweep(rec, reach=array)``; the method is its default.
    """

    family = "layered"
    window = 1
    decision_codec = "auto"
    _INDEX = ("t", "k")
    _SIZES = ("num_layers", "layer_size")
    #: ``layer_shape(self, t) -> (rows, cols)`` in a subclass makes its layers 2-D (None: 1-D)
    layer_shape = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.layer_shape is not None:  # cells (t, i, j), the layers' sizes by their shapes
            cls._INDEX = ("t", "i", "j")
            cls._SIZES = ("num_layers", "layer_shape")

    @classmethod
    def _two_d(cls) -> bool:
        """Whether the layers are 2-D (the class defines ``layer_shape``)."""
        return cls.layer_shape is not None

    def num_layers(self) -> int:
        raise NotImplementedError

    def layer_size(self, t: int) -> int:
        raise NotImplementedError

    def active_range(self):
        return None

    def reach(self):
        return None

    @classmethod
    def _validate_class(cls):
        if isinstance(cls.window, bool) or not (isinstance(cls.window, int) and cls.window >= 1):
            raise ContractError(f"{cls.__name__}.window = {cls.window!r}: must be an int >= 1")
        super()._validate_class()
        if cls._two_d():
            name = cls.__name__
            if cls.layer_size is not LayeredRecurrence.layer_size:
                raise ContractError(
                    f"{name} defines both layer_size and layer_shape: define layer_shape(self, t) -> "
                    "(rows, cols) for 2-D layers, or layer_size(self, t) -> int for 1-D ones"
                )
            for attr, why in (
                ("traceback_state", "a walk with a state"),
                ("reduce", "a whole-table reduction"),
            ):
                if getattr(cls, attr):
                    raise ContractError(
                        f"{name}.{attr} = {getattr(cls, attr)!r}: {why} is offered for 1-D layers only; "
                        f"{name} defines layer_shape (2-D layers)"
                    )
        if cls.decision_codec not in CODECS:
            raise ContractError(
                f"{cls.__name__}.decision_codec = {cls.decision_codec!r}: must be one of {', '.join(CODECS)}"
            )

    @classmethod
    def _n_deps(cls) -> int:
        return cls.window

    @classmethod
    def _cell_form(cls) -> str:
        prev = ", ".join(f"prev_{w}" for w in range(1, cls.window + 1))
        if cls._two_d():
            return f"cell(t, i, j, {prev}, *data), one previous 2-D layer per window = {cls.window}"
        return f"cell(t, k, {prev}, *data), one previous layer per window = {cls.window}"

    def _checked_shapes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """2-D layers: ``layer_shape(t)`` of each of the ``n`` layers as two int64 arrays, rows and
        columns; an :class:`InputError` naming ``layer_shape`` and the layer when one is not a pair
        of integers >= 0."""
        rows, cols = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for t in range(n):
            got = self.layer_shape(t)
            try:
                r, c = got
                ok = all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in (r, c))
            except (TypeError, ValueError):
                ok = False
            if not ok or r < 0 or c < 0:
                raise InputError(
                    "layer_shape", f"layer {t}: must be a pair (rows, cols) of integers >= 0, got {got!r}"
                )
            rows[t], cols[t] = r, c
        return rows, cols

    def _checked_codec(self, codec: str | None = None) -> str:
        """The decision codec a sweep uses: ``codec``, the option of :func:`gpudp.sweep` (an
        :class:`InputError` naming the choices when it is none of :data:`CODECS`), or, when None, the
        class's ``decision_codec`` (checked with the class); ``"plain"`` whatever was asked when the
        class keeps no decisions (``decision_bits`` 0, or a sweep with ``traceback=False``)."""
        if codec is not None and (not isinstance(codec, str) or codec not in CODECS):
            raise InputError("codec", f"{codec!r}: must be one of {', '.join(map(repr, CODECS))}")
        if not type(self).decision_bits:
            return "plain"
        return type(self).decision_codec if codec is None else codec

    def _checked_reach(self, n: int, reach=None) -> np.ndarray | None:
        """The reach a sweep relies on as an int64 array, or None: ``reach``, the option of
        :func:`gpudp.sweep` (an :class:`InputError` naming ``reach`` when malformed), or, when None,
        ``reach()`` (a :class:`ContractError` when malformed)."""
        got = self.reach() if reach is None else reach

        def bad(sep: str, why: str) -> Exception:
            if reach is None:
                return ContractError(f"{type(self).__name__}.reach(){sep}{why}")
            return InputError("reach", why)

        if got is None:
            return None
        if type(self)._two_d():
            raise bad(
                " ", "describes 1-D layers (reads at k - reach .. k); 2-D layers (layer_shape) take none"
            )
        if type(self).window != 1:
            raise bad(" ", f"needs window = 1, the class has {type(self).window}")
        a = np.asarray(got)
        if a.shape != (n,) or (a.size and a.dtype.kind not in "iu"):
            raise bad(" ", f"must give {n} integers, one per layer, got shape {a.shape} {a.dtype}")
        a = a.astype(np.int64)
        if a.size and a.min() < 0:
            raise bad(", ", f"layer {int(a.argmin())}: reach must be >= 0, got {a.min()}")
        return a

    def _checked_active_range(self, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` as int64 arrays, checked against the layer sizes (ContractError otherwise)."""
        got = self.active_range()
        if got is None:
            return np.zeros(len(sizes), np.int64), sizes.copy()
        if type(self)._two_d():
            raise ContractError(
                f"{type(self).__name__}.active_range() describes 1-D layers; a 2-D layer (layer_shape) "
                "computes every cell of its shape: return None, or make the shape smaller"
            )
        try:
            lo, hi = got
        except (TypeError, ValueError):
            raise ContractError(
                f"{type(self).__name__}.active_range() must return a pair (lo, hi) of arrays, or None"
            ) from None
        out = []
        for name, a in (("lo", lo), ("hi", hi)):
            a = np.asarray(a)
            if a.shape != sizes.shape:
                raise ContractError(
                    f"{type(self).__name__}.active_range(): {name} must hold one value per layer "
                    f"({len(sizes)})"
                )
            if a.size and a.dtype.kind not in "iu":
                raise ContractError(
                    f"{type(self).__name__}.active_range(): {name} must be integers, got {a.dtype}"
                )
            out.append(a.astype(np.int64))
        lo, hi = out
        bad = np.flatnonzero((lo < 0) | (lo > hi) | (hi > sizes))
        if bad.size:
            t = int(bad[0])
            raise ContractError(
                f"{type(self).__name__}.active_range(), layer {t}: need 0 <= lo <= hi <= layer_size, "
                f"got lo={lo[t]}, hi={hi[t]}, size={sizes[t]}"
            )
        return lo, hi
