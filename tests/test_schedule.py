"""The schedule: derived orders respect every dependency; windows with no order are rejected."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudp.errors import ScheduleError
from gpudp.schedule import check_offsets, derive

offset = st.tuples(st.integers(-3, 3), st.integers(-3, 3)).filter(lambda o: o != (0, 0))
offset_sets = st.lists(offset, min_size=1, max_size=5, unique=True)


def has_open_half_plane(offs) -> bool:
    """Independent test: the offsets lie in an open half-plane iff, sorted by angle, some gap
    between consecutive directions exceeds pi."""
    angles = sorted(math.atan2(dj, di) for di, dj in offs)
    gaps = [b - a for a, b in zip(angles, angles[1:], strict=False)]
    gaps.append(angles[0] + 2 * math.pi - angles[-1])
    return max(gaps) > math.pi + 1e-12


@given(offset_sets, st.integers(1, 7), st.integers(1, 7))
def test_derived_order_respects_every_dependency(offs, rows, cols):
    if not has_open_half_plane(offs):
        with pytest.raises(ScheduleError):
            derive(offs, rows, cols)
        return
    s = derive(offs, rows, cols)
    waves = set()
    for i in range(rows):
        for j in range(cols):
            t = s.wavefront(i, j)
            assert 0 <= t < s.num_wavefronts
            waves.add(t)
            for di, dj in offs:
                ii, jj = i + di, j + dj
                if 0 <= ii < rows and 0 <= jj < cols:
                    assert s.wavefront(ii, jj) < t, (offs, (i, j), (ii, jj))
                    assert t - s.wavefront(ii, jj) <= s.window
    # a wavefront holds at most one cell per slot
    seen = set()
    for i in range(rows):
        for j in range(cols):
            key = (s.wavefront(i, j), i if s.by_row_index else j)
            assert key not in seen
            seen.add(key)


def test_named_orders():
    assert derive([(-1, 0), (0, -1), (-1, -1)]).tiled
    assert derive([(-1, 0), (0, -1), (-1, -1)]).kind() == "tiled anti-diagonals"
    rows = derive([(-1, -1), (-1, 0), (-1, 1)])
    assert (rows.a, rows.b, rows.window, rows.tiled) == (1, 0, 1, False)
    assert rows.kind() == "rows"
    assert derive([(0, -1)]).kind() == "columns"
    assert derive([(1, 0)]).kind() == "rows, bottom-up"
    assert derive([(-1, 1), (0, -1)]).kind() == "wavefronts 2*i + 1*j"


@pytest.mark.parametrize(
    "offs", [[(0, -1), (0, 1)], [(1, 0), (-1, 0)], [(-1, -1), (1, 1)], [(-1, 0), (1, 1), (0, -1), (1, -2)]]
)
def test_cyclic_windows_rejected(offs):
    with pytest.raises(ScheduleError, match="no evaluation order"):
        derive(offs)


@pytest.mark.parametrize("offs", [[], [(0, 0)], [(-1, 0), (-1, 0)], [(-1.5, 0)], ["ab"]])
def test_malformed_offsets(offs):
    with pytest.raises(ScheduleError):
        check_offsets(offs)
