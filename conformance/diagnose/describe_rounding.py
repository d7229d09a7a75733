"""Values rounded to a coarser dtype than the case's: the input before the rotation, or the output after it.

For each low-precision dtype ``T`` (bfloat16, float16) coarser than the case dtype and the precision
the backend declares:

- *input rounded*: the output is the spec's rotation of ``round_T(x)`` (every pair: ``q round_T(z_in)``;
  pass-through channels ``round_T(x)``) within the bound;
- *output rounded*: the output is ``round_T(y_expected)`` within the bound plus the rounding slack
  (an engine's pre-rounding value within its bound may land on the neighbouring ``T`` value).

Both are said only when the output is not right as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..bugs.rounding import round_to, rounding_slack
from ..cases.case import GoldenCase
from ..error_model.tolerance import UNIT_ROUNDOFF, Resolved
from .findings import Finding
from .samples import PairSamples

__all__ = ["rounding_findings"]

Arr = np.ndarray


def _coarser(case: GoldenCase, r: Resolved | None) -> list[str]:
    finest = UNIT_ROUNDOFF.get(case.dtype, 2.0**-53)
    if r is not None:
        finest = min(finest, r.u_out)
    return [t for t in ("bfloat16", "float16") if UNIT_ROUNDOFF[t] > 2.0 * finest]


def rounding_findings(case: GoldenCase, actual: Mapping[str, Arr], expected: Mapping[str, Arr], bound: Mapping[str, Arr],
                      sm: PairSamples | None, r: Resolved | None) -> list[Finding]:
    """Findings for an input or output rounded to a coarser dtype (empty when neither reproduces the output)."""
    if case.stage not in ("cos_sin", "apply", "forward", "backward"):
        return []
    out: list[Finding] = []
    for t in _coarser(case, r):
        ok = True
        for name, e in expected.items():
            got = np.asarray(actual[name], dtype=np.float64)
            b = np.asarray(bound[name], dtype=np.float64)
            with np.errstate(all="ignore"):
                model = round_to(t, e)
                slack = rounding_slack(t, e, b)
                if not np.all(np.abs(got - model) <= b + slack):
                    ok = False
                    break
        if ok:
            return [Finding("rounding", f"the output is rounded to {t} (coarser than the case's {case.dtype} and the declared "
                            "precision): every element equals the expected value rounded to " + t, "output", {}, t, case.dtype)]
        if sm is not None and case.stage != "cos_sin":
            zr = round_to(t, sm.zin.real) + 1j * round_to(t, sm.zin.imag)
            model_z = sm.q[:, None, :] * zr
            with np.errstate(all="ignore"):
                close = np.abs(sm.zout - model_z) <= sm.tol + 1e-300
            moved = np.abs(zr - sm.zin) > 0
            if close[sm.weight > 0].all() and moved.any():
                out.append(Finding("rounding", f"the input is rounded to {t} before the rotation (coarser than the case's "
                                   f"{case.dtype}): every pair is the spec's rotation of round_{t}(x)", "input", {}, t, case.dtype))
                return out
    return out
