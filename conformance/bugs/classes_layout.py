"""Bug classes of the channel layout and position axes: pairing, direction, rotary window,
mRoPE rows, 2-D vision (docs/spec.md sections 2, 4 and 5)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from roperef.layout import pair_map
from roperef.spec import PAIRINGS, RopeSpec

from ..cases.case import GoldenCase
from .decoy import Decoy
from .facts import CaseFacts
from .model import BugClass, Family, Hints, Probe

__all__ = ["LAYOUT_CLASSES"]

ROT = frozenset({"apply", "forward", "backward"})
POS = frozenset({"cos_sin", "forward", "backward"})
TENSOR = frozenset({"forward", "backward"})


def _other_pairings(case: GoldenCase, hints: Hints) -> list[str]:
    if case.spec.vision is not None:
        return ["adjacent"]
    return [p for p in PAIRINGS if p != case.spec.pairing]


def _pairing(case: GoldenCase, p: object) -> Decoy | None:
    spec = case.spec
    words = f"pairing '{p}' used instead of '{spec.pairing}' (rotate_half vs interleaved channels)"
    if spec.vision is not None:
        adj = RopeSpec(spec.head_dim, pairing="adjacent")
        return Decoy("pairing:other", words, param=p, pairs=lambda s: pair_map(adj))
    return Decoy("pairing:other", words, param=p, spec=spec.replace(pairing=str(p)))


def _reversed(case: GoldenCase, _: object) -> Decoy:
    if case.stage == "backward":
        words = "rotation direction reversed: the forward rotation R(phi) used for the backward pass instead of R(-phi)"
    elif case.stage == "cos_sin":
        words = "sin sign flipped (rotation direction reversed)"
    else:
        words = "rotation direction reversed (sin sign flipped: R(-phi) instead of R(phi))"
    return Decoy("direction:reversed", words, reverse=True)


def _wrong_end(case: GoldenCase, _: object) -> Decoy | None:
    spec = case.spec
    r, d = spec.resolved_rotary_dim, spec.head_dim
    if r >= d:
        return None
    start = d - r if spec.rotary_start == 0 else 0
    return Decoy("window:wrong-end", f"rotary window at the wrong end (channels [{start}, {start + r}) rotated instead of "
                 f"[{spec.rotary_start}, {spec.rotary_start + r}))", spec=spec.replace(rotary_start=start))


def _mrope_layout(case: GoldenCase, _: object) -> Decoy:
    spec = case.spec
    other = "interleaved" if spec.mrope_layout == "chunked" else "chunked"
    return Decoy("mrope:layout", f"mRoPE layout '{other}' instead of '{spec.mrope_layout}' (wrong position row per frequency)",
                 spec=spec.replace(mrope_layout=other))


_PERMS = [p for p in itertools.permutations(range(3)) if p != (0, 1, 2)]


def _mrope_rows(case: GoldenCase, perm: Sequence[int]) -> Decoy:
    order = "".join("thw"[i] for i in perm)
    rows_order = list(perm)
    return Decoy("mrope:rows-permuted", f"mRoPE position rows read in order {order} instead of thw", param=order,
                 rows=lambda r: r[rows_order])


def _mrope_text(case: GoldenCase, _: object) -> Decoy:
    return Decoy("mrope:text-rows", "mRoPE collapsed to the t row (h and w rows ignored: plain RoPE)",
                 rows=lambda r: np.broadcast_to(r[:1], r.shape).copy())


def _vision_form(case: GoldenCase, _: object) -> Decoy:
    spec = case.spec
    other = "pixtral" if spec.vision == "qwen_vl" else "qwen_vl"
    return Decoy("vision:form", f"2-D vision RoPE in the {other} form instead of {spec.vision}", spec=spec.replace(vision=other))


def _hw(case: GoldenCase, _: object) -> Decoy:
    return Decoy("vision:hw-swapped", "2-D vision positions with h and w swapped", rows=lambda r: r[::-1].copy())


def _turns(f: CaseFacts) -> bool:
    """Some pair rotates by a visible angle (apply: the given tables rotate)."""
    return f.stage == "apply" or (f.has_positions and f.any_nonzero and f.tight(f.min_abs_nonzero))


LAYOUT_CLASSES: tuple[BugClass, ...] = (
    BugClass(
        "pairing:other", 2, "the other pairing: rotate_half (j, j+n) vs interleaved (2j, 2j+1) vs DeepSeek V3 order", ROT,
        "apply, forward, backward; every spec (2-D vision: interleaved pairs)", "the rotation with another pairing (best of the others)",
        "any rotation by a non-zero angle, with two pairs or more", Family(_pairing, _other_pairings), _turns,
        applies=lambda s: s.n_pairs >= 2,  # one pair: every pairing rotates channels (0, 1)
        probes=(Probe("default", "near4096"), Probe("vision-pixtral", "vision-grid")), parameter="pairing",
    ),
    BugClass(
        "direction:reversed", 5, "rotation direction reversed (sin sign flipped; forward rotation used for backward)", ROT | POS,
        "cos_sin, apply, forward, backward; every spec", "R(-phi) instead of R(phi) (backward: R(phi) instead of R(-phi))",
        "any rotation by an angle that is not a multiple of pi", Family(_reversed), _turns,
        probes=(Probe("default", "near4096"),),
    ),
    BugClass(
        "window:wrong-end", 2, "rotary window at the wrong end of the head (first r channels vs last r)", ROT,
        "apply, forward, backward; partial rotary (r < D)", "the window moved to the other end",
        "a partial (or window-last) spec", Family(_wrong_end), _turns,
        applies=lambda s: s.resolved_rotary_dim < s.head_dim, probes=(Probe("partial", "near4096"), Probe("window-last", "near4096")),
    ),
    BugClass(
        "mrope:layout", 4, "mRoPE sections laid out chunked instead of interleaved (or the reverse)", POS,
        "cos_sin, forward, backward; mRoPE", "the other layout", "mRoPE positions whose t, h, w rows differ",
        Family(_mrope_layout), lambda f: _turns(f) and f.multi_axis_differ,
        applies=lambda s: s.mrope_section is not None,
        probes=(Probe("mrope-chunked", "mrope-image"), Probe("mrope-interleaved", "mrope-image")),
    ),
    BugClass(
        "mrope:rows-permuted", 4, "mRoPE position rows read in another order than t, h, w", POS,
        "cos_sin, forward, backward; mRoPE", "rows permuted (best of the five other orders)",
        "mRoPE positions whose t, h, w rows differ", Family(_mrope_rows, lambda c, h: _PERMS), lambda f: _turns(f) and f.multi_axis_differ,
        applies=lambda s: s.mrope_section is not None, probes=(Probe("mrope-chunked", "mrope-image"),), parameter="order",
    ),
    BugClass(
        "mrope:text-rows", 4, "mRoPE collapsed to the t row (h and w ignored)", POS,
        "cos_sin, forward, backward; mRoPE", "every pair driven by the t row", "image tokens (h or w differs from t)",
        Family(_mrope_text), lambda f: _turns(f) and f.multi_axis_differ,
        applies=lambda s: s.mrope_section is not None, probes=(Probe("mrope-interleaved", "mrope-image"),),
    ),
    BugClass(
        "vision:form", 4, "2-D vision RoPE in the other form (Qwen-VL vs Pixtral frequencies)", POS,
        "cos_sin, forward, backward; 2-D vision", "the other vision form", "any 2-D vision position",
        Family(_vision_form), _turns, applies=lambda s: s.vision is not None,
        probes=(Probe("vision-qwen", "vision-grid"), Probe("vision-pixtral", "vision-grid")),
    ),
    BugClass(
        "vision:hw-swapped", 4, "2-D vision positions with h and w swapped", POS,
        "cos_sin, forward, backward; 2-D vision", "h and w exchanged", "tokens with h != w",
        Family(_hw), lambda f: _turns(f) and f.multi_axis_differ, applies=lambda s: s.vision is not None,
        probes=(Probe("vision-pixtral", "vision-grid"),),
    ),
)
