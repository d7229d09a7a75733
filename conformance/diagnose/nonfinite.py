"""Say where and why a backend returned NaN/inf where the expected value is finite.

The pattern of the non-finite elements usually names the cause: exactly the tokens whose
positions round past float16's 65504 (positions or angles in float16 overflow to inf, and cos(inf) is NaN),
exactly the pairs with frequency 0 (a division by zero, e.g. the wavelength 2*pi/w of a
proportional or partial spec), only the channels outside the rotary window (not copied),
every element (an uninitialised output or a failed kernel), or large inputs in float16
(overflow of the products).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import pair_map

from ..cases.case import GoldenCase
from ..error_model.tolerance import position_rows

__all__ = ["nonfinite_findings"]

_FP16_OVERFLOW = 65520  # the first magnitude float16 rounds to inf (its largest number is 65504)


def _bad(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for name, exp in expected.items():
        got = np.asarray(actual[name], dtype=np.float64)
        if got.shape != np.shape(exp):
            continue
        b = ~np.isfinite(got) & np.isfinite(np.asarray(exp, dtype=np.float64))
        if b.any():
            out[name] = b
    return out


def nonfinite_findings(case: GoldenCase, actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> str | None:
    """Words for the non-finite outputs of a case, or None if there are none."""
    bad = _bad(actual, expected)
    if not bad:
        return None
    total = sum(int(b.sum()) for b in bad.values())
    size = sum(b.size for b in bad.values())
    pattern = _pattern(case, bad, total)
    if pattern:
        return pattern
    if total >= 0.9 * size:
        return f"every output element is non-finite ({total} of {size}): an uninitialised output, a failed kernel or an overflow everywhere"
    return f"{total} non-finite value(s)"


def _pattern(case: GoldenCase, bad: dict[str, np.ndarray], total: int) -> str | None:
    spec, stage = case.spec, case.stage
    if stage == "inv_freq":
        w, _ = inv_freq(spec, int(np.asarray(case.arrays["seq_len"])))
        b = bad.get("inv_freq")
        if b is not None and b.any() and np.all(w[b] == 0):
            return "inv_freq is non-finite exactly where the frequency is 0: a division by zero (1/w or 2*pi/w)"
        return None
    if stage not in ("cos_sin", "forward", "backward"):
        return None
    name = next(iter(bad))
    b = bad[name]
    if stage == "cos_sin":
        grid = b.shape[:-1]
        per_pair = b.reshape(-1, b.shape[-1])
        token_bad = b.any(axis=-1).reshape(-1)
    else:
        grid = b.shape[:-2]
        pm = pair_map(spec) if stage == "forward" else pair_map(spec).transposed()
        rotated = np.union1d(pm.out_a, pm.out_b)
        channel_bad = np.asarray(b.reshape(-1, b.shape[-1]).any(axis=0))  # an array (any over a 2-D array's axis 0)
        if channel_bad.any() and not channel_bad[rotated].any():
            return "non-finite values only in channels outside the rotary window: they are not copied from the input"
        per_pair = (b[..., pm.out_a] | b[..., pm.out_b]).any(axis=-2).reshape(-1, spec.n_pairs)
        token_bad = per_pair.any(axis=1)
    rows = position_rows(spec, case.arrays["positions"], grid)
    pmax = np.abs(rows).max(axis=0).reshape(-1)
    w, _ = inv_freq(spec, max(int(rows.max()) + 1, 1))
    pair_bad = per_pair.any(axis=0)
    big = pmax >= _FP16_OVERFLOW
    if big.any() and np.array_equal(token_bad, big):
        return (f"non-finite exactly at the {int(big.sum())} token(s) with |position| >= 65520 (e.g. {int(pmax[big].min())}): "
                "positions in float16 overflow past 65504 to inf, and cos/sin of inf is NaN")
    if (w == 0).any() and np.array_equal(pair_bad, w == 0):
        return "non-finite exactly on the pairs with frequency 0: a division by zero (e.g. the wavelength 2*pi/w)"
    x = case.arrays.get("x", case.arrays.get("grad"))
    if x is not None and case.dtype == "float16" and float(np.max(np.abs(x))) > 256:
        return f"{total} non-finite value(s) with float16 inputs up to {float(np.max(np.abs(x))):.3g}: an overflow of float16 products"
    if total >= 0.9 * sum(b.size for b in bad.values()):
        return None
    where = np.nonzero(token_bad)[0]
    return (f"{total} non-finite value(s) on {where.size} token(s) (positions {sorted(set(pmax[where].astype(int).tolist()))[:6]}) "
            f"and {int(pair_bad.sum())} pair(s)")
