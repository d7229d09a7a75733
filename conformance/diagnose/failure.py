"""Everything said about one FAIL beyond its numbers: diagnosis, declaration hints, error profile per pair.

Called by :func:`conformance.judge.runner.judge_case` on every FAIL (unless diagnosis is off). The
per-pair profile (the worst error/bound of each pair, with the pair's wavelength ``2*pi/w``)
feeds the run-level verdict (:mod:`conformance.judge.verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import pair_map

from ..bugs.freqs import plain_spec
from ..cases.case import GoldenCase
from ..error_model.expected import attention_divisor
from ..error_model.tolerance import Profile, Resolved, position_rows
from .declaration import declaration_hints
from .likely_bug import diagnose
from .separate import separating_case

__all__ = ["explain_failure", "pair_profile"]


def pair_profile(case: GoldenCase, outputs: Mapping[str, np.ndarray], exp: Mapping[str, np.ndarray],
                 bnd: Mapping[str, np.ndarray]) -> dict[str, list[float]] | None:
    """``{"ratio": [...], "wavelength": [...]}``: per pair, the worst |error|/bound and the wavelength
    2*pi/w of its *unscaled* frequency (the quantity llama3 bands and YaRN ramps are defined on)."""
    if case.stage not in ("cos_sin", "forward", "backward", "inv_freq"):
        return None
    name = next(iter(exp))
    with np.errstate(all="ignore"):
        err = np.abs(np.asarray(outputs[name], dtype=np.float64) - exp[name])
        ratio = np.where(err == 0, 0.0, err / bnd[name])
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    spec = case.spec
    if case.stage == "inv_freq":
        per = ratio
        seq = int(np.asarray(case.arrays["seq_len"]))
    elif case.stage == "cos_sin":
        per = np.maximum(ratio, np.abs(np.asarray(outputs["sin"], dtype=np.float64) - exp["sin"]) / bnd["sin"]).reshape(-1, spec.n_pairs).max(axis=0)
        seq = max(int(position_rows(spec, case.arrays["positions"]).max()) + 1, 1)
    else:
        pm = pair_map(spec) if case.stage == "forward" else pair_map(spec).transposed()
        per = np.maximum(ratio[..., pm.out_a], ratio[..., pm.out_b]).reshape(-1, spec.n_pairs).max(axis=0)
        seq = max(int(position_rows(spec, case.arrays["positions"]).max()) + 1, 1)
    base = plain_spec(spec) if spec.scaling.type not in ("default", "proportional") else spec
    w, _ = inv_freq(base or spec, seq)
    lam = [2 * math.pi / float(x) if x > 0 else math.inf for x in w]
    return {"ratio": [float(x) for x in per], "wavelength": lam}


def explain_failure(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, r: Resolved,
                    exp: Mapping[str, np.ndarray], bnd: Mapping[str, np.ndarray], out_dtype: Any) -> dict[str, Any]:
    """The diagnosis dict of a FAIL (see :func:`conformance.diagnose.likely_bug.diagnose`) plus ``profile``."""
    hints = declaration_hints(case, outputs, caps, profile, out_dtype)
    diag = diagnose(case, outputs, r, exp, divisor=attention_divisor(case, caps), hints=hints, separate=separating_case)
    prof = pair_profile(case, outputs, exp, bnd)
    if prof is not None:
        diag["profile"] = prof
    return diag
