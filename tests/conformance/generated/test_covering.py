"""The pairwise covering-array generator: every feasible pair covered, constraints kept, deterministic,
close to the lower bound; checked by brute force, independently of the generator's own bookkeeping."""

from __future__ import annotations

from itertools import combinations, product

import pytest

from conformance.generated.covering import complete_row, covering_array


def _pairs_in(rows, k):
    return {(i, r[i], j, r[j]) for r in rows for i, j in combinations(range(k), 2)}


def _feasible_by_brute_force(sizes, allowed):
    """Every pair that some complete allowed row holds (enumerating all rows)."""
    out = set()
    for row in product(*(range(s) for s in sizes)):
        if allowed(row):
            out |= _pairs_in([row], len(sizes))
    return out


def test_every_pair_of_an_unconstrained_design_appears_and_the_size_is_near_the_bound():
    dims = [range(5), range(4), range(3), range(3), range(2)]
    rows = covering_array(dims)
    sizes = [len(d) for d in dims]
    everything = {(i, a, j, b) for i, j in combinations(range(5), 2) for a in range(sizes[i]) for b in range(sizes[j])}
    assert _pairs_in(rows, 5) == everything
    assert 20 <= len(rows) <= 26  # 5 x 4 = 20 is the lower bound


def test_four_dimensions_of_three_values_need_few_rows():
    rows = covering_array([range(3)] * 4)
    assert len(rows) <= 12  # the optimum (an orthogonal array) is 9; exhaustive is 81
    assert len(_pairs_in(rows, 4)) == 6 * 9


def test_constraints_are_kept_and_every_feasible_pair_is_covered():
    sizes = [4, 5, 3, 3]

    def allowed(row):
        # dimension 0 value 3 forces dimension 1 to 0; value 2 of dimension 2 excludes value 2 of dimension 3;
        # dimension 3 value 1 needs dimension 1 >= 2 (a rule that index 0 does not satisfy)
        a, b, c, d = row
        if a == 3 and b not in (None, 0):
            return False
        if c == 2 and d == 2:
            return False
        return not (d == 1 and b is not None and b < 2)

    rows = covering_array([range(s) for s in sizes], allowed)
    assert all(allowed(r) for r in rows)
    need = _feasible_by_brute_force(sizes, allowed)
    assert need <= _pairs_in(rows, 4)
    assert (2, 2, 3, 2) not in _pairs_in(rows, 4)  # infeasible, never made
    assert (0, 3, 3, 1) not in need  # 3 forces b = 0, which d = 1 forbids: infeasible without being a direct rule


def test_a_completion_is_found_past_index_zero_and_none_when_there_is_none():
    def allowed(row):
        return not (row[0] == 1 and row[1] is not None and row[1] < 3) and not (row[2] == 2 and row[0] is not None and row[0] != 1)

    assert complete_row([2, 4, 3], {0: 1}, allowed) == (1, 3, 0)
    assert complete_row([2, 4, 3], {2: 2}, allowed) == (1, 3, 2)
    assert complete_row([2, 4, 3], {1: 0, 2: 2}, allowed) is None


def test_the_same_input_gives_the_same_rows_and_balanced_dimensions_spread_ties():
    dims = [range(7), range(6), range(3)]
    assert covering_array(dims) == covering_array(dims)
    plain = covering_array([range(6), range(5), range(2)])
    spread = covering_array([range(6), range(5), range(2)], balanced=(2,))
    count = lambda rows, v: sum(r[2] == v for r in rows)  # noqa: E731
    assert abs(count(spread, 0) - count(spread, 1)) <= 1 < abs(count(plain, 0) - count(plain, 1))


def test_bad_dimensions_are_refused():
    with pytest.raises(ValueError, match="at least one value"):
        covering_array([range(3), range(0)])
