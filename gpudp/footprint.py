"""The memory a sweep of a grid or layered recurrence needs, planned before anything is allocated:
:class:`MemoryNeed`, :func:`memory_need` (what :meth:`gpudp.grid.plan.Plan.memory` asks), and
:func:`layered_memory` (the figures of a layered sweep from its layer sizes alone, for solvers
before an instance exists). :mod:`gpudp.engine` re-exports the last two for plug-ins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import backends
from .memory import default_budget, parse_bytes
from .store import WORD_BYTES, LayerLayout, spills

__all__ = ["MemoryNeed", "layered_memory", "memory_need"]


@dataclass
class MemoryNeed:
    """The bytes a sweep needs, planned before anything is allocated (:meth:`gpudp.grid.plan.Plan.memory`,
    :func:`layered_memory`), from the arithmetic of the code that allocates: the layouts' words
    (:mod:`gpudp.store`), the store's spill rule (:func:`gpudp.store.spills`), and the backend's
    slabs and staging (:meth:`Backend.slab_words <gpudp.backends.Backend.slab_words>`,
    :meth:`~gpudp.backends.Backend.sweep_memory`).

    ``values``: the dependency window's values (in the device's memory when the backend keeps them
    there, cuda; else in host memory);
    ``decisions``: the decision store (with the bands codec an upper bound: every computed word);
    ``slab_words``: words of one decision slab (the largest chunk's, at most);
    ``device``: device bytes in all (the values, the decision slabs), 0 on the cpu;
    ``host``: host bytes besides the decision store (the values on the cpu, slabs or page-locked
    staging, the result's copy);
    ``spill``: the decision store goes to a disk file under the memory budget (:attr:`disk` bytes).
    """

    backend: str
    values: int
    decisions: int
    slab_words: int
    device: int
    host: int
    spill: bool

    @property
    def store_ram(self) -> int:
        """Bytes of the decision store in host memory (0 when it spills)."""
        return 0 if self.spill else self.decisions

    @property
    def disk(self) -> int:
        """Bytes of the decision store on disk (0 when it stays in memory)."""
        return self.decisions if self.spill else 0

    @property
    def host_total(self) -> int:
        """Host bytes with the decision store, when it stays in memory."""
        return self.host + self.store_ram


def memory_need(be, budget, values, words, unit_words, bits, codec, result) -> MemoryNeed:
    """The :class:`MemoryNeed` of a sweep on backend ``be`` (a :class:`~gpudp.backends.Backend`)
    under ``budget`` bytes: ``values``, ``result``: bytes; ``words``: the store's decision words
    (``unit_words`` those of its largest unit, a layer or a tile anti-diagonal)."""
    decisions = words * WORD_BYTES if bits else 0
    spill = bool(bits) and spills(words, budget)
    slab = be.slab_words(words, unit_words) if bits else 0
    slabs, staging = be.sweep_memory(slab, bits, codec, spill or (bool(bits) and be.pageable_store(words)))
    on_device = values if be.values_on_device else 0
    host = values - on_device + staging + result
    return MemoryNeed(be.name, values, decisions, slab, on_device + slabs, host, spill)


def _ints(x) -> np.ndarray:
    """int64 as given, or exact Python integers (an object array) for figures past int64."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        return x.astype(np.int64, copy=False)
    return np.array([int(v) for v in x], dtype=object)


def layered_memory(
    sizes,
    bits: int,
    itemsize: int,
    window: int,
    backend: str,
    codec: str = "plain",
    memory_budget=None,
    groups=None,
    edges: int = 0,
    result: int | None = None,
    width: int | None = None,
) -> MemoryNeed:
    """The memory of a layered sweep of layers of ``sizes`` cells (the plan's arithmetic, from the
    sizes alone): :meth:`Plan.memory` of every layered plan, and for solvers the figures before an
    instance exists, or of instances no machine could run (exact Python integers at any size when
    ``sizes`` is not an int64 array). ``groups``: with the bands codec, the computed groups of 32
    cells per layer (default: whole layers); ``edges``: values kept besides the window (a grid's
    last row and column); ``result``: values copied back at the end (default: the last layer);
    ``width``: the cells of each layer of the ring of ``window + 1`` (default: the widest layer's;
    2-D layers keep the most rows by the most columns, :meth:`gpudp.grid.plan.Plan.ring_shape`)."""
    be = backends.get(backend)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    sizes = _ints(sizes)
    widest = int(sizes.max(initial=0))
    per = LayerLayout.layer_words(sizes if groups is None else 32 * _ints(groups), bits)
    values = ((window + 1) * max(widest if width is None else width, 1) + edges) * itemsize
    result = widest if result is None else result
    return memory_need(
        be, budget, values, int(per.sum()), int(per.max(initial=0)), bits, codec, result * itemsize
    )
