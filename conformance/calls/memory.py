"""Call a backend in a case's call form: x (q, k) in a memory layout, in place, q with k; and check
the memory around what the backend was given.

For a case with a :class:`~conformance.cases.form.CallForm`, :func:`call_in_form` builds the tensors
the backend receives (in the case dtype) and calls the form's method (``forward``, ``forward_``,
``forward_qk``, ``forward_qk_``, ...). Layouts (:data:`~conformance.vocabulary.LAYOUTS`):

===========  ==================================================================================
layout       the view handed over, inside its buffer (guard: buffer elements outside every view)
===========  ==================================================================================
contiguous   a fresh C-contiguous copy (no guard)
qkv          ``buf[..., :Hq, :]`` (q) and ``buf[..., Hq:Hq+Hk, :]`` (k) of ``buf [..., Hq + 2*Hk, D]``: the
             v slice is guard (a lone x: ``buf [..., 3*H, D]``, x in the q slot; q and k of different
             head dims: one buffer each, q in slot 0, k in slot 1)
bhtd         ``buf[:, :, :T].transpose(0, 2, 1, 3)`` of ``buf [B, H, T + 3, D]`` (packed: ``[H, N + 3, D]``):
             the 3 padding tokens are guard
fortran      ``np.asfortranarray(x)`` (no guard)
offset       ``buf[1:1 + x.size].reshape(x.shape)`` of a flat ``buf``: C order, one element past the
             base address; the first and last element are guard
===========  ==================================================================================

Guard memory holds values drawn from the case id (never the case's own values), so a backend that
reads it instead of its view computes a wrong result, and one that writes it is seen: after the call
every guard element must hold the same bits as before (a problem: ``wrote outside the view of q: ...``,
with the region and the first buffer index). A call that is not in place must leave its views (and
every other input) as they were (the input's name is reported); an in-place call's result is read back
from its views, whatever the method returns.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from ..cases.form import CallForm
from ..vocabulary import QK_ARRAYS

__all__ = ["call_in_form", "form_parts", "Placed", "place", "guard_problems", "PAD_TOKENS"]

#: padding tokens after each row of a ``bhtd`` buffer (guard memory)
PAD_TOKENS = 3


@dataclass
class Placed:
    """One tensor handed to a backend: ``view`` (what the backend gets) inside ``buffer``; ``index``:
    the buffer's flat element indices of the view (same shape as the view)."""

    name: str
    view: np.ndarray
    buffer: np.ndarray
    index: np.ndarray


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of ``a`` (compares NaN payloads and signed zeros exactly)."""
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _fill(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """A buffer of guard values: unit normals rounded to ``dtype`` (finite, non-zero, never the case's data)."""
    return (rng.standard_normal(shape) * 3.0 + 0.5).astype(dtype)


def _make(name: str, data: np.ndarray, buffer: np.ndarray, cut: Callable[[np.ndarray], np.ndarray]) -> Placed:
    index = cut(np.arange(buffer.size, dtype=np.int64).reshape(buffer.shape))
    view = cut(buffer)
    view[...] = data
    return Placed(name, view, buffer, index)


def _slots(tensors: dict[str, np.ndarray], rng: np.random.Generator) -> list[Placed]:
    """``qkv``: q and k (or a lone x) as head slices of one fused buffer, the v slice left as guard."""
    items = list(tensors.items())
    if len(items) == 2 and items[0][1].shape[:-2] == items[1][1].shape[:-2] and items[0][1].shape[-1] == items[1][1].shape[-1]:
        (qn, q), (kn, k) = items
        hq, hk = q.shape[-2], k.shape[-2]
        buf = _fill((*q.shape[:-2], hq + 2 * hk, q.shape[-1]), q.dtype, rng)
        return [_make(qn, q, buf, lambda a: a[..., :hq, :]), _make(kn, k, buf, lambda a: a[..., hq:hq + hk, :])]
    out = []
    for slot, (name, t) in enumerate(items):
        h = t.shape[-2]
        buf = _fill((*t.shape[:-2], 3 * h, t.shape[-1]), t.dtype, rng)
        out.append(_make(name, t, buf, _head_slice(slot * h, (slot + 1) * h)))
    return out


def _head_slice(lo: int, hi: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: a[..., lo:hi, :]


def _transposed(name: str, t: np.ndarray, rng: np.random.Generator) -> Placed:
    """``bhtd``: the token-major view of a head-major buffer with padding tokens."""
    if t.ndim == 4:
        b, n, h, d = t.shape
        buf = _fill((b, h, n + PAD_TOKENS, d), t.dtype, rng)
        return _make(name, t, buf, lambda a: a[:, :, :n, :].transpose(0, 2, 1, 3))
    n, h, d = t.shape
    buf = _fill((h, n + PAD_TOKENS, d), t.dtype, rng)
    return _make(name, t, buf, lambda a: a[:, :n, :].transpose(1, 0, 2))


def _offset(name: str, t: np.ndarray, rng: np.random.Generator) -> Placed:
    buf = _fill((t.size + 2,), t.dtype, rng)
    return _make(name, t, buf, lambda a: a[1:1 + t.size].reshape(t.shape))


def place(tensors: dict[str, np.ndarray], layout: str, seed: int) -> list[Placed]:
    """The tensors (name -> array in the case dtype, q before k) laid out in ``layout``."""
    rng = np.random.default_rng(seed)
    if layout == "qkv":
        return _slots(tensors, rng)
    out = []
    for name, t in tensors.items():
        if layout == "bhtd":
            out.append(_transposed(name, t, rng))
        elif layout == "offset":
            out.append(_offset(name, t, rng))
        else:
            view = np.asfortranarray(t) if layout == "fortran" else np.array(t, copy=True, order="C")
            out.append(Placed(name, view, view, np.arange(view.size, dtype=np.int64).reshape(view.shape)))
    return out


def _region(layout: str, buffer: np.ndarray, flat: int, placed: list[Placed]) -> str:
    """Words for the guard region holding buffer element ``flat``."""
    at = np.unravel_index(flat, buffer.shape)
    if layout == "offset":
        return "the element before the view" if flat == 0 else "the element after the view"
    if layout == "bhtd":
        return f"padding token {int(at[-2]) - (buffer.shape[-2] - PAD_TOKENS)} after the tokens"
    if layout == "qkv":
        names = [p.name for p in placed if p.buffer is buffer]
        heads = [p.view.shape[-2] for p in placed if p.buffer is buffer]
        h = int(at[-2])
        if len(names) == 2:
            return "the v slice" if h >= sum(heads) else "a head between the views"
        return "the k and v slices" if names[0] in ("x", "q", "grad") else "the q and v slices"
    return "memory outside the view"


def guard_problems(placed: list[Placed], before: dict[int, np.ndarray], layout: str) -> list[str]:
    """Sentences for every buffer whose guard elements changed (``before``: id(buffer) -> bits before the call)."""
    out = []
    seen: set[int] = set()
    for p in placed:
        key = id(p.buffer)
        if key in seen or key not in before:
            continue
        seen.add(key)
        inside = np.zeros(p.buffer.size, dtype=bool)
        for q in placed:
            if q.buffer is p.buffer:
                inside[q.index.reshape(-1)] = True
        changed = (_bits(p.buffer).reshape(-1) != before[key].reshape(-1)) & ~inside
        if changed.any():
            first = int(np.flatnonzero(changed)[0])
            names = " and ".join(q.name for q in placed if q.buffer is p.buffer)
            at = tuple(int(i) for i in np.unravel_index(first, p.buffer.shape))
            out.append(f"wrote outside the view of {names}: {int(changed.sum())} element(s) of {_region(layout, p.buffer, first, placed)} "
                       f"changed (first at index {list(at)} of the {layout} buffer of shape {list(p.buffer.shape)})")
    return out


def _tensor_names(case: GoldenCase) -> list[tuple[str, str]]:
    """(array name in the case, name the judge reports it by) of the tensors the backend receives."""
    main = "grad" if case.stage == "backward" else "x"
    form = case.form
    if form is not None and form.qk:
        return [(main, "q" if main == "x" else "grad_q"), (QK_ARRAYS[case.stage][0], "k" if main == "x" else "grad_k")]
    return [(main, main)]


def call_in_form(backend: Any, case: GoldenCase) -> tuple[Any, list[str]]:
    """Call ``backend`` on ``case`` in its call form; returns (raw result, problems): the raw result is
    what the method returned, or for an in-place call the views read back (``(q, k)`` for q+k); the
    problems are input names modified by a call that is not in place and sentences for memory written
    outside a view."""
    form = case.form or CallForm()
    names = _tensor_names(case)
    seed = zlib.crc32((case.id + "/guard").encode("utf-8"))
    placed = place({label: case.input_as(name) for name, label in names}, form.layout, seed)
    before = {id(p.buffer): _bits(p.buffer).copy() for p in placed}
    a = case.arrays
    views = [p.view for p in placed]
    kwargs: dict[str, Any] = {}
    if case.stage == "apply":
        others = [case.input_as("cos").copy(), case.input_as("sin").copy()]
        args: list[Any] = [*views, *others, case.spec]
        other_names = ["cos", "sin"]
    else:
        others = [np.array(a["positions"], dtype=np.int64)]
        args = [*views, *others, case.spec]
        other_names = ["positions"]
        if "cu_seqlens" in a:
            kwargs["cu_seqlens"] = np.array(a["cu_seqlens"], dtype=np.int64)
    if form.k_spec is not None:
        kwargs["k_spec"] = form.k_spec
    other_before = [o.copy() for o in others] + [v.copy() for v in kwargs.values() if isinstance(v, np.ndarray)]
    raw = getattr(backend, form.method(case.stage))(*args, **kwargs)
    problems = [n for n, o, b in zip(other_names, others, other_before) if not np.array_equal(o, b, equal_nan=True)]
    if "cu_seqlens" in kwargs and not np.array_equal(kwargs["cu_seqlens"], a["cu_seqlens"]):
        problems.append("cu_seqlens")
    if form.inplace:
        result = [np.array(p.view, copy=True) for p in placed]
        raw = tuple(result) if form.qk else result[0]
    else:
        for p in placed:
            inside = _bits(p.buffer).reshape(-1)[p.index.reshape(-1)]
            if not np.array_equal(inside, before[id(p.buffer)].reshape(-1)[p.index.reshape(-1)]):
                problems.append(p.name)
    problems += guard_problems(placed, before, form.layout)
    return raw, problems


def form_parts(case: GoldenCase, raw: Any) -> list[tuple[str, GoldenCase, Any]]:
    """The parts a result is judged in, as ``(label, case, raw output)``: ``[("", case, raw)]`` for
    one tensor; for a q+k case ``[("q", q case, q_out), ("k", k case, k_out)]``, where the k case has
    k's input and expected output in the stage's names and k's spec. ``ValueError`` when a q+k
    result is not a pair."""
    form = case.form
    if form is None or not form.qk:
        return [("", case, raw)]
    if isinstance(raw, dict) or not isinstance(raw, (tuple, list)) or len(raw) != 2:
        raise ValueError(f"{form.method(case.stage)} returned {type(raw).__name__}, expected a pair (q_out, k_out)")
    k_in, k_out = QK_ARRAYS[case.stage]
    main_in = "grad" if case.stage == "backward" else "x"
    main_out = {"backward": "grad_x"}.get(case.stage, "y")
    common = {n: v for n, v in case.arrays.items() if n not in (k_in, k_out)}
    q_case = GoldenCase(case.id, case.family, case.stage, case.spec, case.dtype, case.tier, case.flags, common)
    k_arrays = {**common, main_in: case.arrays[k_in], main_out: case.arrays[k_out]}
    k_case = GoldenCase(case.id + "#k", case.family, case.stage, form.k_spec or case.spec, case.dtype, case.tier,
                        case.flags, k_arrays)
    return [("q", q_case, raw[0]), ("k", k_case, raw[1])]
