"""What a backend returned, turned into the stage's outputs: plain NumPy arrays the judge owns.

Turning a returned object into an array runs the object's own code (``__array__``,
``__len__``, ``__iter__``, a tensor's device copy), so :func:`stage_outputs` runs where backend
code runs: in the call thread under the time limit, or in the worker process. Whatever it raises
(``SystemExit`` and ``KeyboardInterrupt`` included) is a :class:`~conformance.calls.errors.StageError`
(that case's ERROR); what it returns are copies (``np.array(..., copy=True)``, base class
ndarray): the backend keeps no handle on the arrays the judge compares.

An output must be an array of numbers: a float dtype of any precision (bfloat16 via ml_dtypes,
float128 included) or an integer one (judged by :func:`conformance.judge.runner.check_outputs`);
``None``, a string or an array of objects is an ERROR.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..untrusted_text import safe_str
from ..vocabulary import STAGE_OUTPUTS
from .errors import StageError, describe_exception

__all__ = ["stage_outputs", "precision_bits", "is_outputs"]

_PRECISION = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}


def precision_bits(dtype: np.dtype) -> int | None:
    """Significand bits of a float dtype (bfloat16 8 ... float64 53, float128/longdouble 64 or 113); None otherwise."""
    if dtype.name in _PRECISION:
        return _PRECISION[dtype.name]
    if dtype.kind == "f":
        return int(np.finfo(dtype).nmant) + 1
    return None


def _type_name(value: Any) -> str:
    try:
        return safe_str(type(value).__name__, 100)
    except BaseException:
        return "object"


def stage_outputs(stage: str, raw: Any) -> dict[str, np.ndarray]:
    """Map ``raw`` onto the stage's output names as owned arrays; StageError if it is not the stage's
    outputs: not a tuple of the right length, None, a string, or not an array of numbers."""
    names = STAGE_OUTPUTS[stage]
    if len(names) == 1:
        values: tuple[Any, ...] = (raw,)
    else:
        try:
            ok = isinstance(raw, (tuple, list)) and len(raw) == len(names)
            values = tuple(raw) if ok else ()
        except BaseException as exc:
            raise StageError(describe_exception(f"reading the {stage} result", exc)) from None
        if not ok or len(values) != len(names):
            raise StageError(f"{stage} must return a tuple ({', '.join(names)}), got {_type_name(raw)}")
    out = {}
    for name, value in zip(names, values):
        if value is None or isinstance(value, (str, bytes)):
            raise StageError(f"{stage} returned {_type_name(value)} for output {name}, not an array")
        try:
            arr = np.array(value, copy=True)
        except BaseException as exc:  # __array__ is backend code: SystemExit, KeyboardInterrupt too
            raise StageError(describe_exception(f"converting output {name} to a NumPy array", exc)) from None
        if type(arr) is not np.ndarray:  # a subclass that survived np.array: take its plain data
            arr = np.asarray(arr).view(np.ndarray).copy()
        if arr.dtype.kind in "OUSV" and precision_bits(arr.dtype) is None:
            raise StageError(f"{stage} returned {_type_name(value)} for output {name}, not an array of "
                             f"numbers (dtype {arr.dtype})")
        out[name] = arr
    return out


def is_outputs(stage: str, value: Any) -> bool:
    """``value`` is what :func:`stage_outputs` returns for ``stage`` (a dict of plain arrays by output name)."""
    return (type(value) is dict and list(value) == list(STAGE_OUTPUTS[stage])
            and all(type(v) is np.ndarray for v in value.values()))
