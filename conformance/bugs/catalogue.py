"""The catalogue of RoPE bug classes (data): one :class:`~conformance.bugs.model.BugClass` each.

Every class cites the docs/spec.md section it protects, says where it can occur, carries its
decoy family (:mod:`conformance.bugs.decoy`) and a rule for which cases expose it. The
diagnosis (:mod:`conformance.diagnose.likely_bug`) tries every class that can occur in a failing case;
the case generator (:mod:`conformance.generated.plan`) builds cases from the probes so that every
class a backend's interface can express is judged; the coverage section of each report
(:mod:`conformance.judge.coverage`) says which classes were judged. ``docs/conformance.md`` lists
them (kept in sync by ``tests/conformance/bugs/test_bug_catalogue.py``).
"""

from __future__ import annotations

from .classes_freq import FREQ_CLASSES
from .classes_layout import LAYOUT_CLASSES
from .classes_positions import POSITION_CLASSES
from .classes_precision import PRECISION_CLASSES
from .model import BugClass

__all__ = ["CATALOGUE", "BY_ID", "bug_class"]

CATALOGUE: tuple[BugClass, ...] = POSITION_CLASSES + LAYOUT_CLASSES + FREQ_CLASSES + PRECISION_CLASSES
BY_ID: dict[str, BugClass] = {c.id: c for c in CATALOGUE}
assert len(BY_ID) == len(CATALOGUE), "bug class ids must be unique"


def bug_class(class_id: str) -> BugClass:
    """The class with this id (KeyError naming the known ids otherwise)."""
    try:
        return BY_ID[class_id]
    except KeyError:
        raise KeyError(f"bug class {class_id!r}: unknown; expected one of {', '.join(BY_ID)}") from None
