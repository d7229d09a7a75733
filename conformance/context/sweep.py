"""The context sweep: each stage x dtype a backend declares, judged at positions spread over every octave.

One row per (stage, dtype): a single case whose ``[1, P]`` positions are :func:`sample_positions`
(``2^k - 1, 2^k, 2^k + 1`` and a seeded random set per octave, up to ``2^31 - 1`` or the backend's
``max_position``), inputs unit normals rounded to the dtype (``heads`` heads), the expected values by
:mod:`roperef.reference` (float64, exact two-term angles) and the golden judge's bound
(:func:`conformance.error_model.expected.expected_and_bounds`, the backend's declared precision).
The row's verdict is the golden judge's own (:func:`conformance.judge.runner.judge_case`); per sampled
position the sweep keeps ``budget(p) = max |err| / bound`` over the token's elements and
``admitted(p)`` (:func:`conformance.error_model.tolerance.admitted_error` at that token), and says:

- ``certified``: the largest sampled ``P`` such that every sampled position ``<= P`` PASSes and
  informs (``budget <= 1`` and ``admitted < 1/2``); None when position 0 does not;
- ``first_fail``: the first sampled position over its bound (``budget > 1``);
- ``imprecise_from``: the first sampled position over its bound by at most the IMPRECISE factor 8
  (:data:`conformance.diagnose.precision.MAX_FACTOR`; the precision mechanism is tested on the row);
- ``uninformative_from``: the first sampled position that PASSes within a bound as large as the output;
- ``resolution``: ``(certified, first bad)``: the sampled positions the boundary lies between.

The sampled positions are evidence, not a proof; the report lists them. The row's result
(family ``context``) carries ``metrics.admitted`` over its certified positions only: a row that
certifies a span is informative there, whatever it PASSes uninformatively beyond it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef import reference
from roperef.errors import bad
from roperef.positions import POSITION_MAX
from roperef.spec import PAIRINGS, RopeSpec

from ..backends.base import backend_stages
from ..calls.stage_call import DEFAULT_TIMEOUT_S, StageError
from ..cases.case import GoldenCase, numpy_dtype
from ..diagnose.precision import MAX_FACTOR
from ..error_model.expected import expected_and_bounds
from ..error_model.tolerance import UNINFORMATIVE_C, Profile, default_profile_name, get_profile
from ..judge.runner import CaseResult, InProcess, RunReport, check_outputs, judge_case
from ..vocabulary import DTYPES
from .positions import resolution, sample_positions

__all__ = ["CONTEXT_STAGES", "ContextPlan", "ContextRow", "sweep_row", "run_context", "row_id"]

#: the stages a context sweep judges (the ones whose outputs depend on the position)
CONTEXT_STAGES = ("cos_sin", "forward", "backward")
#: the sweep retries a declined row with positions below 2^k, down to this limit (then NOT_SUPPORTED)
_SHORTEST = 2**10
#: scalings whose tables depend on the sequence length (a sweep has no single length)
_LENGTH_DEPENDENT = ("dynamic", "longrope")


@dataclass(frozen=True)
class ContextPlan:
    """What to sweep: the spec, random positions per octave, their seed, heads of x, stages, dtypes."""

    spec: RopeSpec
    per_octave: int = 4
    seed: int = 0
    heads: int = 2
    stages: tuple[str, ...] = CONTEXT_STAGES
    dtypes: tuple[str, ...] = DTYPES

    def __post_init__(self) -> None:
        if not isinstance(self.spec, RopeSpec):
            bad("spec", self.spec, "must be a RopeSpec", TypeError)
        if self.spec.mrope_section is not None or self.spec.vision is not None:
            bad("--long-spec", "mRoPE/vision", "the context sweep takes a spec with one position row (no mrope_section, no vision grid)")
        if self.spec.scaling.type in _LENGTH_DEPENDENT:
            bad("--long-spec scaling", self.spec.scaling.type,
                f"depends on the sequence length; the context sweep samples positions without one (not {', '.join(_LENGTH_DEPENDENT)})")
        if isinstance(self.heads, bool) or not isinstance(self.heads, int) or not 1 <= self.heads <= 64:
            bad("heads", self.heads, "must be an integer in [1, 64]")
        for s in self.stages:
            if s not in CONTEXT_STAGES:
                bad("stage", s, f"expected one of {', '.join(CONTEXT_STAGES)}")
        for d in self.dtypes:
            if d not in DTYPES:
                bad("dtype", d, f"expected one of {', '.join(DTYPES)}")
        sample_positions(0, self.per_octave, self.seed)  # validates per_octave


@dataclass
class ContextRow:
    """One stage x dtype of a sweep: per sampled position its budget and admitted error, and the lengths."""

    stage: str
    dtype: str
    positions: list[int] = field(default_factory=list)
    budgets: list[float] = field(default_factory=list)
    admitted: list[float] = field(default_factory=list)
    certified: int | None = None
    first_fail: int | None = None
    imprecise_from: int | None = None
    uninformative_from: int | None = None
    resolution: tuple[int, int] | None = None
    status: str = "ERROR"
    message: str = ""
    mechanism: str | None = None
    declined: str | None = None  # why the sweep stopped below the limit (supports() declined larger positions)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage, "dtype": self.dtype, "status": self.status, "message": self.message,
            "certified": self.certified, "first_fail": self.first_fail, "imprecise_from": self.imprecise_from,
            "uninformative_from": self.uninformative_from,
            "resolution": list(self.resolution) if self.resolution else None, "mechanism": self.mechanism,
            "declined": self.declined,
            "positions": self.positions, "budgets": self.budgets, "admitted": self.admitted,
            "seconds": round(self.seconds, 6),
        }


def row_id(stage: str, dtype: str) -> str:
    """``context/forward/bfloat16``."""
    return f"context/{stage}/{dtype}"


def _row_case(plan: ContextPlan, stage: str, dtype: str, positions: np.ndarray) -> GoldenCase:
    """The row's case: positions ``[1, P]``, inputs rounded to ``dtype``, expected values by roperef.reference."""
    spec, pos = plan.spec, positions[None, :]
    arrays: dict[str, np.ndarray] = {"positions": pos}
    if stage == "cos_sin":
        c, s = reference.cos_sin(spec, pos)
        arrays.update(cos=np.asarray(c, dtype=np.float64), sin=np.asarray(s, dtype=np.float64))
    else:
        rng = np.random.default_rng([plan.seed, len(dtype), CONTEXT_STAGES.index(stage)])
        x = rng.standard_normal((1, pos.shape[1], plan.heads, spec.head_dim))
        x = x.astype(numpy_dtype(dtype)).astype(np.float64)
        fn = reference.forward if stage == "forward" else reference.backward
        arrays.update({"x" if stage == "forward" else "grad": x,
                       "y" if stage == "forward" else "grad_x": np.asarray(fn(x, pos, spec), dtype=np.float64)})
    family = "table" if stage == "cos_sin" else stage
    return GoldenCase(row_id(stage, dtype), family, stage, spec, dtype, "full", ("long-position", "odd-position"), arrays)


def per_position(case: GoldenCase, got: dict[str, np.ndarray], exp: dict[str, np.ndarray],
                 bnd: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(budget[P], admitted[P])``: per token (one sampled position) the worst ``|err|/bound`` and
    ``sqrt(sum bound^2 / sum expected^2)`` over its elements, the worst output."""
    n = int(case.arrays["positions"].shape[1])
    budget, admitted = np.zeros(n), np.zeros(n)
    for name, e in exp.items():
        e64 = np.asarray(e, dtype=np.float64).reshape(n, -1)
        b = np.asarray(bnd[name], dtype=np.float64).reshape(n, -1)
        err = np.abs(np.asarray(got[name], dtype=np.float64).reshape(n, -1) - e64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(err == 0, 0.0, err / b)
            se, sb = np.sum(e64 * e64, axis=1), np.sum(b * b, axis=1)
            adm = np.where(se > 0, np.sqrt(sb / np.where(se > 0, se, 1.0)), 0.0)
        budget = np.maximum(budget, np.where(np.isnan(ratio), np.inf, ratio).max(axis=1))
        admitted = np.maximum(admitted, adm)
    return budget, admitted


def _first(positions: np.ndarray, mask: np.ndarray) -> int | None:
    return int(positions[mask][0]) if mask.any() else None


def lengths(row: ContextRow) -> None:
    """Fill ``certified``, ``first_fail``, ``imprecise_from``, ``uninformative_from``, ``resolution`` from
    the row's per-position budgets and admitted errors (module docstring)."""
    p = np.asarray(row.positions, dtype=np.int64)
    b, a = np.asarray(row.budgets), np.asarray(row.admitted)
    good = (b <= 1.0) & (a < UNINFORMATIVE_C)
    row.first_fail = _first(p, b > 1.0)
    row.imprecise_from = _first(p, (b > 1.0) & (b <= MAX_FACTOR))
    row.uninformative_from = _first(p, (b <= 1.0) & (a >= UNINFORMATIVE_C))
    first_bad = _first(p, ~good)
    before = p[p < first_bad] if first_bad is not None else p
    row.certified = int(before[-1]) if before.size else None
    row.resolution = resolution(p, first_bad)


def sweep_row(backend: Any, call: InProcess, plan: ContextPlan, stage: str, dtype: str, profile: Profile,
              positions: np.ndarray, *, diagnose: bool = True) -> tuple[ContextRow, CaseResult]:
    """Judge one stage x dtype at ``positions`` (never raises for a backend problem: the row says it)."""
    t0 = time.perf_counter()
    row = ContextRow(stage, dtype)
    case = _row_case(plan, stage, dtype, positions)
    res = CaseResult(case.id, "context", stage, dtype, "ERROR", flags=tuple(case.flags))
    caps = backend.capabilities
    try:
        verdict, _ = call.supports(case)
        declined = verdict
        while verdict is not True and int(positions[-1]) > _SHORTEST:
            # a table the backend sizes without declaring max_position: the largest octave it takes
            positions = positions[positions < 2 ** (int(positions[-1]).bit_length() - 1)]
            case = _row_case(plan, stage, dtype, positions)
            verdict, _ = call.supports(case)
        if verdict is not True:
            res.status, res.message = "NOT_SUPPORTED", str(declined)
        else:
            if declined is not True:
                row.declined = f"positions above {int(positions[-1])} declined by supports(): {declined}"
            got, modified = call(case)
            problem = check_outputs(case, got)
            j = judge_case(case, got, caps, profile, modified=modified, diagnose=False)
            res.status, res.message, res.metrics, res.tolerance = j.status, j.message, j.metrics, j.tolerance
            if j.tolerance is not None and not (problem and "non-finite" not in problem) and not modified:
                exp, bnd = expected_and_bounds(case, caps, j.tolerance)  # the bound the row was judged with
                budget, admitted = per_position(case, got, exp, bnd)
                row.positions, row.budgets, row.admitted = positions.tolist(), budget.tolist(), admitted.tolist()
                lengths(row)
                if res.metrics is not None and row.certified is not None:
                    # the row informs over its certified span: its admitted error there (the context
                    # section says where UNINFORMATIVE begins beyond it)
                    res.metrics.admitted = float(admitted[positions <= row.certified].max())
                if diagnose and row.first_fail is not None:
                    row.mechanism = _mechanism(case, got, caps, profile, row)
    except StageError as exc:
        res.status, res.message = "ERROR", str(exc)
    row.status, row.message = res.status, res.message
    row.seconds = res.seconds = time.perf_counter() - t0
    return row, res


def _mechanism(case: GoldenCase, got: dict[str, np.ndarray], caps: Any, profile: Profile, row: ContextRow) -> str | None:
    """The golden judge's diagnosis of the row (the measured operator, the likely bug) in words."""
    try:
        j = judge_case(case, got, caps, profile, diagnose=True)
    except Exception as exc:  # the diagnosis is words beside the verdict: it never takes the sweep down
        return f"diagnosis failed: {type(exc).__name__}: {exc}"
    return str(j.diagnosis["summary"]) if j.diagnosis and j.diagnosis.get("summary") else None


def run_context(backend: Any, plan: ContextPlan, profile: Profile | None = None, *, diagnose: bool = True,
                timeout: float | None = DEFAULT_TIMEOUT_S, adapt_pairing: bool = False) -> RunReport:
    """Every declared stage x dtype of ``plan`` on ``backend``: a :class:`RunReport` (family ``context``)
    whose ``context`` holds the sampled positions and the lengths per row (docs/report-schema.md).
    ``adapt_pairing``: when the backend does not declare the spec's pairing, sweep the first it declares
    (the default spec's choice; a spec the user gave is swept as given)."""
    caps = backend.capabilities
    declared_pairings = set(getattr(caps, "pairings", ()) or ())
    if adapt_pairing and declared_pairings and plan.spec.pairing not in declared_pairings:
        pairing = next(p for p in PAIRINGS if p in declared_pairings)
        plan = replace(plan, spec=plan.spec.replace(pairing=pairing))
    profile = profile or get_profile(None, default=default_profile_name(caps))
    limit = POSITION_MAX if caps.max_position is None else min(POSITION_MAX, int(caps.max_position))
    positions = sample_positions(limit, plan.per_octave, plan.seed)
    report = RunReport(backend=str(getattr(backend, "name", "backend")),
                       capabilities=caps.to_dict() if hasattr(caps, "to_dict") else {}, profile=profile.to_dict())
    declared = set(backend_stages(backend))
    rows: list[ContextRow] = []
    t0 = time.perf_counter()
    call = InProcess(backend, timeout)
    try:
        for stage in plan.stages:
            if stage not in declared or stage not in caps.stages:
                continue
            for dtype in plan.dtypes:
                if dtype not in caps.dtypes:
                    continue
                row, res = sweep_row(backend, call, plan, stage, dtype, profile, positions, diagnose=diagnose)
                rows.append(row)
                report.results.append(res)
    finally:
        call.close()
    report.seconds = time.perf_counter() - t0
    report.context = {"limit": limit, "per_octave": plan.per_octave, "seed": plan.seed, "heads": plan.heads,
                      "spec": plan.spec.to_dict(), "sampled": len(positions), "rows": [r.to_dict() for r in rows]}
    return report
