"""The records of the bug catalogue: a bug class, its decoy family, the probes that expose it.

A :class:`BugClass` is data: a stable id, the docs/spec.md section it protects, words, the
stages and spec kinds where it can occur, its decoy family (the reference with that one bug,
with a free parameter when the bug has one), a rule saying which cases expose it, and
*probes* (named spec variant + named position regime) from which the case generator
(:mod:`conformance.generated.plan`) builds cases that expose it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase, is_empty
from .decoy import Decoy
from .facts import CaseFacts

__all__ = ["Family", "BugClass", "Probe", "Hints"]

#: What the inverse diagnosis learnt from an output (seeds for parametric fits): ``shift``
#: (median effective position - position, per token), ``freq_ratio`` (effective / spec
#: frequency per pair), ``gain`` (per pair); any key may be missing.
Hints = Mapping[str, Any]


@dataclass(frozen=True)
class Family:
    """The decoys of a class on a case: ``make(case, param)`` for each candidate parameter
    (``(None,)`` for a class without one); ``refine`` ("log": a positive real searched on a log
    scale, "int": an integer) refines the best candidate by a 1-D search."""

    make: Callable[[GoldenCase, Any], Decoy | None]
    candidates: Callable[[GoldenCase, Hints], Sequence[Any]] = lambda case, hints: (None,)
    refine: str | None = None


@dataclass(frozen=True)
class Probe:
    """A case that exposes a class: a spec variant and a position regime of the generator,
    optionally limited to some stages."""

    spec: str
    regime: str
    stages: tuple[str, ...] = ()


@dataclass(frozen=True)
class BugClass:
    """One bug class of the catalogue (see the module docstring)."""

    id: str
    section: int
    words: str
    stages: frozenset[str]
    where: str
    decoy: str
    exposes: str
    family: Family
    exposed: Callable[[CaseFacts], bool]
    applies: Callable[[RopeSpec], bool] = lambda spec: True
    probes: tuple[Probe, ...] = ()
    parameter: str | None = None
    fallback: bool = False  # a broad family (theta, factor) that can imitate specific bugs: never preferred to one

    def occurs_in(self, case: GoldenCase) -> bool:
        """Whether the bug can occur in this case's stage and spec at all (never in an empty case: it
        has no output element to be wrong)."""
        return case.stage in self.stages and self.applies(case.spec) and not is_empty(case)
