"""What the judge hands a backend: fresh copies, never the judge's own objects; and what the backend changed.

A backend receives copies of everything it is given (the case for ``supports``; the spec, the
inputs, the positions and ``cu_seqlens`` for a stage). A frozen :class:`~roperef.spec.RopeSpec`
can still be changed with ``object.__setattr__``, and a case's ``arrays`` is a dict of writable
arrays, so a copy is what keeps the judge's expected values, bounds and diagnosis out of the
backend's reach; comparing the copy afterwards says what the backend changed, which the runner
reports (a FAIL: "input(s) spec.theta modified in place").

Comparisons are bitwise (NaN equals NaN; a changed dtype, shape or type is a change) and run
where backend code runs (a call thread, a worker): an object the backend planted may have
methods of its own.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase

__all__ = ["fresh_spec", "spec_changes", "handed_case", "case_changes", "same_array"]


def fresh_spec(spec: RopeSpec) -> RopeSpec:
    """A deep copy of ``spec`` (its scaling and tuples included)."""
    return copy.deepcopy(spec)


def same_array(before: Any, after: Any) -> bool:
    """``after`` is still a plain ndarray bit for bit equal to ``before`` (dtype and shape included)."""
    if type(after) is not np.ndarray or type(before) is not np.ndarray:
        return before is after
    return before.dtype == after.dtype and before.shape == after.shape and before.tobytes() == after.tobytes()


def spec_changes(original: RopeSpec, handed: Any, name: str = "spec") -> list[str]:
    """``["spec.theta", ...]``: the fields of ``handed`` that no longer equal ``original``'s."""
    try:
        if type(handed) is not type(original):
            return [name]
        want, got = original.to_dict(), handed.to_dict()
    except Exception:
        return [name]
    if want == got:
        return []
    keys = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    return [f"{name}.{k}" for k in keys] or [name]


def handed_case(case: GoldenCase) -> GoldenCase:
    """A copy of ``case`` for ``supports(case)``: its own spec, arrays and call form."""
    return dataclasses.replace(case, spec=fresh_spec(case.spec), flags=tuple(case.flags),
                               arrays={k: np.array(v, copy=True) for k, v in case.arrays.items()},
                               form=copy.deepcopy(case.form))


def case_changes(original: GoldenCase, handed: Any) -> list[str]:
    """What the backend changed in the copy ``handed`` of ``original``: field names, ``spec.X``, ``arrays.Y``."""
    changed: list[str] = []
    for field_name in ("id", "family", "stage", "dtype", "tier", "flags", "form"):
        try:
            if getattr(handed, field_name) != getattr(original, field_name):
                changed.append(field_name)
        except Exception:
            changed.append(field_name)
    changed += spec_changes(original.spec, getattr(handed, "spec", None))
    arrays = getattr(handed, "arrays", None)
    if not isinstance(arrays, Mapping):
        return changed + ["arrays"]
    try:
        keys = sorted(set(arrays) | set(original.arrays))
        changed += [f"arrays.{k}" for k in keys if k not in arrays or k not in original.arrays
                    or not same_array(original.arrays[k], arrays[k])]
    except Exception:
        changed.append("arrays")
    return changed
