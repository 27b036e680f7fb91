"""The schedule: derived orders respect every dependency; windows with no order are rejected."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudp.errors import ScheduleError
from gpudp.schedule import _ray_order, check_offsets, derive

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


def brute_force_order(offs):
    """The reference: every (a, b) of the search box, the same key as ``derive``'s."""
    bound = 2 * max(max(abs(di), abs(dj)) for di, dj in offs) + 2
    best = None
    for a in range(-bound, bound + 1):
        for b in range(-bound, bound + 1):
            lags = [-(a * di + b * dj) for di, dj in offs]
            if (a, b) == (0, 0) or min(lags) <= 0:
                continue
            key = (max(lags), abs(a) + abs(b), a < 0, b < 0, -a, -b)
            if best is None or key < best[0]:
                best = (key, a, b)
    return best and best[1:]


wide_offset = st.tuples(st.integers(-9, 9), st.integers(-9, 9)).filter(lambda o: o != (0, 0))


@given(st.lists(wide_offset, min_size=1, max_size=8, unique=True))
def test_derive_picks_the_brute_force_order(offs):
    want = brute_force_order(offs)
    if want is None:
        with pytest.raises(ScheduleError):
            derive(offs)
        return
    s = derive(offs)
    assert (s.a, s.b) == want


def test_wide_offsets_derive_without_a_quadratic_search():
    """Coin change over coins up to 50,000 (a search over every (a, b) pair would take hours)."""
    coins = [1, 7, 250, 4_999, 50_000]
    s = derive([(0, -c) for c in coins] + [(-1, 0)])
    assert (s.a, s.b, s.window) == (1, 1, 50_000)
    s = derive([(0, -c) for c in coins])
    assert (s.a, s.b, s.window, s.kind()) == (0, 1, 50_000, "columns")


primitive = st.tuples(st.integers(-6, 6), st.integers(-6, 6)).filter(lambda u: math.gcd(*u) == 1)


@given(primitive, st.lists(st.integers(1, 4), min_size=1, max_size=4, unique=True))
def test_offsets_on_one_ray_take_the_closed_form(u, multiples):
    """Coin change's kind of offsets: the closed form gives the brute force's order."""
    offs = [(m * u[0], m * u[1]) for m in multiples]
    assert _ray_order(tuple(offs)) is not None
    s = derive(offs)
    assert (s.a, s.b) == brute_force_order(offs) and s.window == max(multiples)
    assert _ray_order(((0, -1), (-1, 0))) is None and _ray_order(((0, -1), (0, 2))) is None
