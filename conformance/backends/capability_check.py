"""Every field of a :class:`~conformance.backends.base.Capabilities` checked against its vocabulary
when the declaration is made, with the dtype spellings engines use normalised to the judge's names.

A dtype may be written as the judge writes it (``float32``), as an engine or a framework writes it
(``bf16``, ``fp16``, ``half``, ``torch.bfloat16``, ``np.float32``, ``jnp.bfloat16``, ``mx.float16``),
or be the dtype object itself (``numpy.float32``, ``numpy.dtype("float16")``, ``torch.bfloat16``,
``ml_dtypes.bfloat16``, Python's ``float``, which NumPy reads as float64). The bare word ``float``
is refused: ``torch.float`` is float32 and NumPy's ``float`` is float64, so it names neither.

Anything else is refused with one error naming the field, the value and the allowed values
(``Capabilities.table_dtype='float8': expected input or one of float64, float32, float16, bfloat16``),
so a declaration never reaches the judge with a word the tolerance model does not know (before:
an accepted ``table_dtype="bf16"`` made every case an internal error, an accepted
``angle_dtype="banana"`` was shown in the header and judged as float64 or float32).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from roperef.errors import bad
from roperef.spec import PAIRINGS, SCALING_TYPES

from ..vocabulary import CALL_FORMS, DTYPES, FEATURES, LAYOUTS, QK_SHAPES, STAGES

__all__ = ["DTYPE_SYNONYMS", "dtype_name", "checked_fields"]

#: engine spellings of the judge's dtype names (lower case, after a framework prefix is removed)
DTYPE_SYNONYMS: dict[str, str] = {
    "f64": "float64", "fp64": "float64", "double": "float64", "float_": "float64",
    "f32": "float32", "fp32": "float32", "single": "float32",
    "f16": "float16", "fp16": "float16", "half": "float16",
    "bf16": "bfloat16",
}
#: framework prefixes removed before a name is looked up (``torch.bfloat16`` -> ``bfloat16``)
_PREFIXES = ("torch.", "numpy.", "np.", "jax.numpy.", "jnp.", "mlx.core.", "mx.", "tf.", "tensorflow.", "ml_dtypes.")
#: names that mean float32 in the framework written before them (``torch.float``)
_FRAMEWORK_FLOAT = {"torch.float": "float32", "torch.double": "float64", "torch.half": "float16"}


def _from_text(text: str) -> str | None:
    word = text.strip().lower()
    if word in _FRAMEWORK_FLOAT:
        return _FRAMEWORK_FLOAT[word]
    for prefix in _PREFIXES:
        if word.startswith(prefix):
            word = word[len(prefix):]
            break
    if word.startswith("dtype(") and word.endswith(")"):  # repr of numpy.dtype('float32')
        word = word[6:-1].strip("'\"")
    word = DTYPE_SYNONYMS.get(word, word)
    return word if word in DTYPES else None


def dtype_name(value: Any, field: str, *, extra: tuple[str, ...] = ()) -> str:
    """The judge's name for the dtype ``value`` (a name, a synonym or a dtype object), or a
    ``ValueError`` naming ``field``, the value and the allowed values. ``extra``: further words
    the field allows as they are (``input`` for a table dtype)."""
    allowed = f"expected {' or '.join(extra) + ' or one of ' if extra else 'one of '}{', '.join(DTYPES)}"
    if isinstance(value, str):
        if value in extra:
            return value
        if value.strip().lower() == "float":
            bad(field, value, f"ambiguous (torch.float is float32, NumPy's float is float64); {allowed}")
        name = _from_text(value)
    elif value is float:
        name = "float64"
    elif value is None or isinstance(value, (bool, int, float)):
        name = None
    else:
        name = _object_dtype(value)
    if name is None:
        bad(field, value, f"{allowed} (synonyms: {', '.join(f'{k}={v}' for k, v in DTYPE_SYNONYMS.items())})")
    return name


def _object_dtype(value: Any) -> str | None:
    """A dtype object's name: NumPy (and ml_dtypes, JAX) through ``numpy.dtype``, others by their text."""
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    if name in DTYPES:
        return name
    return _from_text(str(value))  # torch.bfloat16, mlx.core.float16


def _word_set(value: Any, field: str, vocabulary: Iterable[str], *, dtypes: bool = False) -> frozenset[str]:
    allowed = tuple(vocabulary)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        bad(field, value, f"must be a set of words (e.g. frozenset({{{allowed[0]!r}}})), each one of {', '.join(allowed)}")
    words = set()
    for item in value:
        if dtypes:
            words.add(dtype_name(item, field))
        elif not isinstance(item, str) or item not in allowed:
            bad(field, item, f"unknown word; expected any of {', '.join(allowed)}")
        else:
            words.add(item)
    return frozenset(words)


def checked_fields(caps: Any) -> dict[str, Any]:
    """The fields of ``caps`` checked and normalised (a dict of field -> value to set), or a
    ``ValueError`` naming the first bad field as ``Capabilities.<field>=<value>: <rule>``."""
    def f(name: str) -> str:
        return f"Capabilities.{name}"

    out: dict[str, Any] = {
        "stages": _word_set(caps.stages, f("stages"), STAGES),
        "pairings": _word_set(caps.pairings, f("pairings"), PAIRINGS),
        "dtypes": _word_set(caps.dtypes, f("dtypes"), DTYPES, dtypes=True),
        "scaling_types": _word_set(caps.scaling_types, f("scaling_types"), SCALING_TYPES),
        "features": _word_set(caps.features, f("features"), FEATURES),
        "layouts": _word_set(caps.layouts, f("layouts"), LAYOUTS),
        "call_forms": _word_set(caps.call_forms, f("call_forms"), CALL_FORMS),
        "qk_shapes": _word_set(caps.qk_shapes, f("qk_shapes"), QK_SHAPES),
        "angle_dtype": dtype_name(caps.angle_dtype, f("angle_dtype")),
        "table_dtype": dtype_name(caps.table_dtype, f("table_dtype"), extra=("input",)),
    }
    for name in ("applies_attention_factor", "shared_tables"):
        if not isinstance(getattr(caps, name), bool):
            bad(f(name), getattr(caps, name), "must be True or False")
    if not isinstance(caps.notes, str):
        bad(f("notes"), caps.notes, "must be a string")
    limit = caps.max_position
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
            bad(f("max_position"), limit, "must be None (no limit) or an int >= 0")
        out["max_position"] = int(limit)
    return out
