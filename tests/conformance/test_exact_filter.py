"""The repro line's ``--filter`` selects exactly the case it names (issue 35, item 5).

A plain id is a substring filter: in the checked-in golden set ``.../offsets`` is a substring of
``.../offsets-zeros`` and ``.../short`` of ``.../short-x0.001``, so ``--filter <id>`` reran two cases.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.golden.store import load_golden
from conformance.selection import exact_pattern, select


def test_every_golden_id_selects_itself_alone() -> None:
    ids = [c.id for c in load_golden().cases]
    cases = [SimpleNamespace(id=i) for i in ids]
    prefixes = [(a, b) for a in ids for b in ids if a != b and a in b]
    assert prefixes, "the set no longer has an id inside another: the test below proves less"
    for a, _ in prefixes:
        assert len(select(cases, a)) > 1  # the plain id picks two cases ...
    for i in ids:
        assert [c.id for c in select(cases, exact_pattern(i))] == [i]  # ... its exact pattern one


@pytest.mark.parametrize("case_id", ["a*b/c", "x?y", "[z]/w", "-dash/forward"])
def test_glob_characters_and_dashes_are_matched_literally(case_id: str) -> None:
    others = [SimpleNamespace(id=i) for i in (case_id, case_id + "x", "a1b/c", "xzy", "z/w", "dash/forward")]
    assert [c.id for c in select(others, exact_pattern(case_id))] == [case_id]


@pytest.mark.parametrize("case_id", ["", "a,b", " a"])
def test_ids_the_pattern_cannot_spell_are_refused(case_id: str) -> None:
    with pytest.raises(ValueError, match="case_id="):
        exact_pattern(case_id)
