"""Long context: judge forward and backward at real sequence lengths, chunk by chunk.

A row of the check is one (length ``T``, stage, dtype). The sequence ``[1, T, H, D]`` is
never built: chunk ``k`` holds tokens ``[k*C, min((k+1)*C, T))``, i.e. ``x`` of shape
``[1, c, H, D]`` in the row's dtype and the positions ``k*C + arange(c)`` (a contiguous range
starting at the chunk's offset, so a backend that only takes a per-row offset can run it).
For every chunk:

1. its input: a block of ``[1, C, H, D]`` unit normals rounded to the dtype is drawn once per
   row from the seed; chunk ``k`` is that block rolled by ``7919*k`` tokens along the sequence
   (every chunk sees different values at each position, and no random numbers are drawn
   per chunk);
2. the expected values by :mod:`roperef.fast` (float64, exact two-term angles);
3. ``backend.forward(x, positions, spec)`` (or ``backward``), judged by
   :func:`conformance.judge.runner.judge_case` exactly as a golden case of that chunk would be
   (output checks, the tolerance model of docs/conformance.md, inputs not modified).

The row keeps the worst budget, where it was (global token index and position), the count
of elements over the bound and the NMSE over the whole sequence; memory holds one chunk at a
time (measured in ``benchmarks/bench_long_context.py``). A failing row is diagnosed on a
window of :data:`DIAGNOSIS_TOKENS` tokens around its worst element (the worst chunk's output is
kept while streaming). A backend that declines a chunk (``supports()``: stage, dtype,
scaling, pairing or a position it cannot take) makes the row NOT_SUPPORTED with its reason.

Only length-independent scalings can be judged per chunk: ``dynamic`` and ``longrope``
depend on the whole sequence's length (docs/spec.md section 3), which a chunk call does not
pass, so :class:`LongContextPlan` refuses them.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef import fast
from roperef.errors import bad
from roperef.frequencies import inv_freq
from roperef.layout import pair_map
from roperef.positions import POSITION_MAX
from roperef.spec import PAIRINGS, RopeSpec

from ..calls.handoff import fresh_spec, spec_changes
from ..calls.results import stage_outputs
from ..calls.stage_call import DEFAULT_TIMEOUT_S, CallThread, StageError, SupportsAsker
from ..cases.case import GoldenCase, numpy_dtype
from ..error_model.expected import expected_and_bounds
from ..error_model.tolerance import Metrics, Profile, admitted_error, default_profile_name, get_profile, pair_coefficients, resolve
from ..judge.runner import CaseResult, Judged, RunReport, check_outputs, judge_case
from ..vocabulary import DTYPES

__all__ = [
    "LongContextPlan",
    "default_spec",
    "row_id",
    "judge_row",
    "run_long_context",
    "chunk_inputs",
    "DEFAULT_LENGTHS",
    "DEFAULT_CHUNK",
    "DEFAULT_HEADS",
    "DEFAULT_DTYPES",
    "MAX_CHUNK",
]

DEFAULT_LENGTHS = (131072, 1048576)
DEFAULT_CHUNK = 4096
DEFAULT_HEADS = 8
DEFAULT_DTYPES = ("bfloat16", "float32")
STAGES = ("forward", "backward")
#: tokens per chunk at most (a chunk's float64 copy must stay small next to the machine's memory)
MAX_CHUNK = 2**20
#: tokens around the worst element that a failing row is diagnosed on
DIAGNOSIS_TOKENS = 64
_ROLL = 7919
LENGTH_DEPENDENT = ("dynamic", "longrope")


def default_spec(pairings: Sequence[str] = PAIRINGS) -> RopeSpec:
    """Plain RoPE, ``D = 128``, ``theta = 500000`` (Llama 3's base), the first declared pairing of
    ``half``, ``adjacent``, ``adjacent_in_half_out``."""
    pairing = next((p for p in PAIRINGS if p in set(pairings)), "half")
    return RopeSpec(128, theta=500000.0, pairing=pairing)


@dataclass(frozen=True)
class LongContextPlan:
    """What to judge: sequence lengths, chunk tokens, heads, the spec, dtypes, stages, input seed."""

    lengths: tuple[int, ...]
    spec: RopeSpec
    chunk: int = DEFAULT_CHUNK
    heads: int = DEFAULT_HEADS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    stages: tuple[str, ...] = STAGES
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.lengths:
            bad("--long-context", list(self.lengths), "needs at least one length")
        for t in self.lengths:
            if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= POSITION_MAX + 1:
                bad("--long-context", t, "each length must be an integer in [1, 2^31] (positions 0..T-1 < 2^31)")
        if isinstance(self.chunk, bool) or not isinstance(self.chunk, int) or not 1 <= self.chunk <= MAX_CHUNK:
            bad("--chunk", self.chunk, f"must be an integer in [1, {MAX_CHUNK}] tokens")
        if isinstance(self.heads, bool) or not isinstance(self.heads, int) or not 1 <= self.heads <= 1024:
            bad("--long-heads", self.heads, "must be an integer in [1, 1024]")
        for d in self.dtypes:
            if d not in DTYPES:
                bad("dtype", d, f"expected one of {', '.join(DTYPES)}")
        for s in self.stages:
            if s not in STAGES:
                bad("stage", s, f"expected one of {', '.join(STAGES)}")
        if not isinstance(self.spec, RopeSpec):
            bad("spec", self.spec, "must be a RopeSpec", TypeError)
        if self.spec.scaling.type in LENGTH_DEPENDENT:
            bad("--long-spec scaling", self.spec.scaling.type,
                "depends on the whole sequence length, which a chunked check cannot pass to the backend; "
                f"use a length-independent scaling (not {' or '.join(LENGTH_DEPENDENT)})")
        if self.spec.n_axes != 1:
            bad("--long-spec", "mRoPE/vision", "the long-context check takes plain RoPE (one position per token)")


def row_id(plan: LongContextPlan, length: int, stage: str, dtype: str) -> str:
    """``long/forward/default/half/bfloat16/t1048576-h8-d128-c4096``: the row's id (and ``--filter`` key)."""
    s = plan.spec
    return f"long/{stage}/{s.scaling.type}/{s.pairing}/{dtype}/t{length}-h{plan.heads}-d{s.head_dim}-c{plan.chunk}"


# ----------------------------------------------------------------------------- inputs


def _base_block(plan: LongContextPlan, stage: str, dtype: str) -> np.ndarray:
    """``[1, C, H, D]`` unit normals rounded to ``dtype``, drawn once per row; held as float32 (exact for
    bfloat16, float16 and float32 values, half the traffic of float64) or, for float64 rows, float64."""
    rng = np.random.default_rng([plan.seed, STAGES.index(stage), DTYPES.index(dtype)])
    shape = (1, plan.chunk, plan.heads, plan.spec.head_dim)
    if dtype == "float64":
        return rng.standard_normal(shape)
    block = rng.standard_normal(shape, dtype=np.float32)
    return block if dtype == "float32" else block.astype(numpy_dtype(dtype)).astype(np.float32)


def chunk_inputs(plan: LongContextPlan, base: np.ndarray, length: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x [1, c, H, D], positions int64 [1, c])`` of chunk ``k`` of a row of ``length`` tokens (``x`` holds
    values of the row's dtype, as float32 or float64: see :func:`_base_block`)."""
    start = k * plan.chunk
    c = min(plan.chunk, length - start)
    shift = (_ROLL * k) % plan.chunk
    x = np.roll(base, -shift, axis=1)[:, :c] if shift else base[:, :c]
    return np.ascontiguousarray(x), (start + np.arange(c, dtype=np.int64))[None]


def _chunk_case(plan: LongContextPlan, stage: str, dtype: str, x: np.ndarray, pos: np.ndarray, rid: str) -> GoldenCase:
    key, out = ("x", "y") if stage == "forward" else ("grad", "grad_x")
    expected = getattr(fast, stage)(x, pos, plan.spec)
    flags = ("long-position", "odd-position") if int(pos[0, -1]) >= 2**17 else ("odd-position",)
    return GoldenCase(id=rid, family=stage, stage=stage, spec=plan.spec, dtype=dtype, tier="full", flags=flags,
                      arrays={key: x, "positions": pos, out: expected})


# ----------------------------------------------------------------------------- one row


def _call(backend: Any, case: GoldenCase) -> tuple[np.ndarray, list[str]]:
    """The backend's stage on the chunk in the case dtype; returns (output, inputs it modified).

    Runs backend code (a call thread): the backend gets copies of the input, the positions and the
    spec (the row's spec builds every later chunk's expected values), and its result is turned into
    an array the judge owns here (:func:`~conformance.calls.results.stage_outputs`)."""
    name = "x" if case.stage == "forward" else "grad"
    x = case.input_as(name)
    held = case.arrays[name]
    keep = held if held.dtype == x.dtype else x.copy()  # the case's own copy when it is in the input dtype
    pos = np.array(case.arrays["positions"], dtype=np.int64)
    spec = fresh_spec(case.spec)
    raw = getattr(backend, case.stage)(x, pos, spec)
    out = stage_outputs(case.stage, raw)[_out_name(case.stage)]
    modified = [name] if not np.array_equal(x, keep) else []
    if not np.array_equal(pos, case.arrays["positions"]):
        modified.append("positions")
    return out, modified + spec_changes(case.spec, spec)


def _out_name(stage: str) -> str:
    return "y" if stage == "forward" else "grad_x"


def _window(case: GoldenCase, lo: int, hi: int, copy: bool = False) -> GoldenCase:
    """The tokens ``[lo, hi)`` of a chunk case (views, or copies with ``copy``; expected values sliced,
    not recomputed)."""
    arrays = {k: (v[:, lo:hi].copy() if copy else v[:, lo:hi]) for k, v in case.arrays.items()}
    return GoldenCase(case.id, case.family, case.stage, case.spec, case.dtype, case.tier, case.flags, arrays)


def _shape_dtype_problem(case: GoldenCase, got: np.ndarray) -> str | None:
    """The output rules of :func:`conformance.judge.runner.check_outputs` that need no pass over the chunk
    (shape; float dtype at least as precise as the case dtype); the fused pass counts non-finite values."""
    name = _out_name(case.stage)
    want = case.arrays[name].shape
    if got.shape != want:
        return f"output {name} has shape {got.shape}, expected {want}"
    return check_outputs(_window(case, 0, 1), {name: got[:, :1]})


def _fusable(caps: Any, spec: RopeSpec) -> bool:
    """The fused pass judges what :func:`judge_case` would, unless the backend leaves out an attention
    factor ``s != 1`` (then the expected values are divided by ``s``: the NumPy path does that)."""
    if getattr(caps, "applies_attention_factor", True):
        return True

    return float(inv_freq(spec, None)[1]) in (0.0, 1.0)


@dataclass
class _Row:
    """Running totals of a row (fused statistics), and the tokens around its worst element (copies of
    :data:`DIAGNOSIS_TOKENS` tokens of that chunk's inputs and output: the location and the diagnosis)."""

    budget: float = -1.0
    n: int = 0
    over: int = 0
    err2: float = 0.0
    exp2: float = 0.0
    max_err: float = 0.0
    worst_k: int = -1
    worst_case: GoldenCase | None = None
    worst_out: np.ndarray | None = None
    worst_lo: int = 0  # where the kept window starts in the worst chunk
    first_over: int | None = None  # position of the first element over its bound (None: none, or not known)
    admitted: float = 0.0  # Metrics.admitted of the last chunk (the largest positions, so the largest angle terms)

    def add(self, k: int, case: GoldenCase, got: np.ndarray, budget: float, n: int, over: int, err2: float,
            exp2: float, max_err: float, first_token: int, worst_token: int) -> None:
        if over and self.first_over is None and first_token >= 0:
            self.first_over = int(case.arrays["positions"][0, first_token])
        self.n, self.over, self.err2, self.exp2 = self.n + n, self.over + over, self.err2 + err2, self.exp2 + exp2
        self.max_err = max(self.max_err, max_err)
        if budget > self.budget:
            lo, hi = _around(case, worst_token)
            self.budget, self.worst_k, self.worst_lo = budget, k, lo
            self.worst_case, self.worst_out = _window(case, lo, hi, copy=True), got[:, lo:hi].copy()


def _judge_chunk(case: GoldenCase, got: np.ndarray, modified: list[str], caps: Any, profile: Profile,
                 fused: bool) -> tuple[str | None, tuple[float, int, int, float, float, float, int, int]]:
    """``(problem or None, (budget, n, n_over, sum err^2, sum expected^2, max |err|, first token over the
    bound or -1, worst token))`` of one chunk (tokens counted in the chunk)."""
    name = _out_name(case.stage)
    expected = case.arrays[name]
    if not fused:
        j = judge_case(case, {name: got}, caps, profile, modified=modified, diagnose=False)
        if j.metrics is None or modified:
            return j.message, _NOTHING
        m = j.metrics
        e2 = float(np.dot(expected.reshape(-1), expected.reshape(-1)))
        return None, (m.budget_used, m.n_elements, m.n_over, m.nmse * e2, e2, m.max_abs_error, -1, int(m.worst["token"]))
    problem = _shape_dtype_problem(case, got)
    if problem:
        return problem, _NOTHING
    from .kernel import judge_chunk  # lazy: Numba kernels, compiled on first use

    r = resolve(profile, caps, case, got.dtype)
    x = case.arrays["x" if case.stage == "forward" else "grad"]
    coef = pair_coefficients(case.spec, case.arrays["positions"], r, x.shape[:-2])
    pm = pair_map(case.spec).transposed() if case.stage == "backward" else pair_map(case.spec)
    st = judge_chunk(x[0], expected[0], got[0], coef[0], pm.in_a, pm.in_b, pm.out_a, pm.out_b, r.floor)
    if st.n_nonfinite:
        return check_outputs(case, {name: got}), _NOTHING
    if modified:
        return f"input(s) {', '.join(modified)} modified in place", _NOTHING
    per_token = x.shape[-2] * x.shape[-1]
    first = st.first_over // per_token if st.first_over >= 0 else -1
    return None, (st.budget, expected.size, st.n_over, st.sum_err2, st.sum_exp2, st.max_err, first,
                  st.worst_flat // per_token)


_NOTHING = (0.0, 0, 0, 0.0, 0.0, 0.0, -1, 0)


def _admitted(case: GoldenCase, got: np.ndarray, caps: Any, profile: Profile) -> float:
    """:func:`~conformance.error_model.tolerance.admitted_error` of one chunk (the NumPy bound)."""
    name = _out_name(case.stage)
    exp, bnd = expected_and_bounds(case, caps, resolve(profile, caps, case, got.dtype))
    return admitted_error(case, exp[name], bnd[name])


def _global_worst(worst: dict[str, Any], start: int) -> dict[str, Any]:
    """A chunk's worst location with the token (and index) counted from the start of the sequence."""
    out = dict(worst)
    if isinstance(out.get("token"), int):
        out["token"] += start
    if isinstance(out.get("index"), list) and len(out["index"]) == 4:
        out["index"] = [out["index"][0], out["index"][1] + start, *out["index"][2:]]
    return out


def _around(case: GoldenCase, token: int) -> tuple[int, int]:
    """The :data:`DIAGNOSIS_TOKENS` tokens of a chunk around ``token``: ``[lo, hi)``."""
    c = case.arrays["positions"].shape[1]
    lo = max(0, min(token - DIAGNOSIS_TOKENS // 2, c - DIAGNOSIS_TOKENS))
    return lo, min(c, lo + DIAGNOSIS_TOKENS)


def _finish(res: CaseResult, row: _Row, plan: LongContextPlan, caps: Any, profile: Profile, diagnose: bool,
            n_chunks: int) -> None:
    """The row's verdict. The tokens around the worst element, judged again by the NumPy path
    (:func:`judge_case`, with the diagnosis on a FAIL), give its location and must give the fused
    budget exactly (the maximum over a window holding the worst element is the maximum)."""
    case, got = row.worst_case, row.worst_out
    assert case is not None and got is not None
    name = _out_name(case.stage)
    slow: Judged | None = None
    try:
        judged = judge_case(case, {name: got}, caps, profile, diagnose=diagnose and row.budget > 1)
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    else:
        slow, problem = judged, f"the NumPy path gives {judged.metrics and judged.metrics.budget_used!r}"
    if slow is None or slow.metrics is None or slow.metrics.budget_used != row.budget:
        res.status = "ERROR"
        res.message = (f"internal error of the judge (a roperef bug, not the backend's): the fused pass gave budget "
                       f"{row.budget!r} on chunk {row.worst_k}; {problem}")
        return
    start = row.worst_k * plan.chunk + row.worst_lo
    res.metrics = Metrics(max_abs_error=row.max_err, budget_used=row.budget,
                          nmse=row.err2 / row.exp2 if row.exp2 else (0.0 if row.err2 == 0 else math.inf),
                          n_elements=row.n, n_over=row.over, worst=_global_worst(slow.metrics.worst, start),
                          admitted=max(row.admitted, slow.metrics.admitted))
    res.tolerance = slow.tolerance
    w = res.metrics.worst
    where = f"token {w.get('token')} (position {w.get('position')}), head {w.get('head')}, channel {w.get('channel')}"
    if row.budget <= 1.0:
        res.status = "PASS"
        res.message = f"budget {row.budget:.3g}, worst at {where}; {n_chunks} chunk(s) of {plan.chunk} tokens"
        return
    res.status = "FAIL"
    first = f"; the first at position {row.first_over}" if row.first_over is not None else ""
    res.message = (f"{row.over}/{row.n} elements over the bound{first}; worst |err|={w.get('error', math.nan):.3g} > "
                   f"bound {w.get('bound', math.nan):.3g} (budget {row.budget:.3g}) at {where}")
    if row.first_over is not None:
        res.metrics.worst["first_over_position"] = row.first_over
    res.diagnosis = slow.diagnosis


def judge_row(backend: Any, plan: LongContextPlan, length: int, stage: str, dtype: str, profile: Profile,
              *, diagnose: bool = True, thread: CallThread | None = None, asker: SupportsAsker | None = None,
              timeout: float | None = DEFAULT_TIMEOUT_S) -> CaseResult:
    """Stream one row through the backend and judge it (a backend problem is a result, never raised).

    Backend code (``supports``, the stage, turning its result into an array) runs in ``thread``
    under ``timeout`` per chunk (:class:`~conformance.calls.stage_call.CallThread`)."""
    own_thread = thread is None
    thread = thread or CallThread("roperef-long-context")
    asker = asker or SupportsAsker(backend, timeout)
    try:
        return _judge_row(backend, plan, length, stage, dtype, profile, diagnose, thread, asker, timeout)
    finally:
        if own_thread:
            thread.close()


def _judge_row(backend: Any, plan: LongContextPlan, length: int, stage: str, dtype: str, profile: Profile,
               diagnose: bool, thread: CallThread, asker: SupportsAsker, timeout: float | None) -> CaseResult:
    rid = row_id(plan, length, stage, dtype)
    flags = ("long-position", "odd-position") if length > 2**17 else ("odd-position",)
    res = CaseResult(rid, "long", stage, dtype, "ERROR", flags=flags)
    t0 = time.perf_counter()
    caps = backend.capabilities
    fused = _fusable(caps, plan.spec)
    base = _base_block(plan, stage, dtype)
    n_chunks = math.ceil(length / plan.chunk)
    row = _Row()
    for k in range(n_chunks):
        x, pos = chunk_inputs(plan, base, length, k)
        case = _chunk_case(plan, stage, dtype, x, pos, rid)
        where = f"chunk {k} of {n_chunks}, positions {int(pos[0, 0])}..{int(pos[0, -1])}"
        reason = asker.reason(case)
        if reason is not None:
            res.status, res.message = "NOT_SUPPORTED", f"{reason} ({where})"
            break
        try:
            got, modified = thread.call(functools.partial(_call, backend, case), stage, timeout)
        except StageError as exc:
            res.status, res.message = "ERROR", f"{exc} ({where})"
            break
        problem, stats = _judge_chunk(case, got, modified, caps, profile, fused)
        if problem:
            res.status, res.message = "FAIL", f"{problem} ({where})"
            break
        row.add(k, case, got, *stats)
        if k == n_chunks - 1:
            row.admitted = _admitted(case, got, caps, profile)
        del x, case, got  # free this chunk before the next one is built
    else:
        _finish(res, row, plan, caps, profile, diagnose, n_chunks)
    res.seconds = time.perf_counter() - t0
    return res


# ----------------------------------------------------------------------------- the run


def rows(plan: LongContextPlan) -> Iterator[tuple[int, str, str]]:
    """(length, stage, dtype) of every row, in run order."""
    for length in plan.lengths:
        for stage in plan.stages:
            for dtype in plan.dtypes:
                yield length, stage, dtype


def run_long_context(backend: Any, plan: LongContextPlan, profile: Profile | None = None, *, diagnose: bool = True,
                     select: Callable[[str], bool] | None = None,
                     progress: Callable[[CaseResult], None] | None = None) -> RunReport:
    """Every row of ``plan`` on ``backend`` as a :class:`RunReport` (family ``long``)."""
    caps = backend.capabilities
    profile = profile or get_profile(None, default=default_profile_name(caps))
    report = RunReport(backend=str(getattr(backend, "name", "backend")),
                       capabilities=caps.to_dict() if hasattr(caps, "to_dict") else {}, profile=profile.to_dict())
    t0 = time.perf_counter()
    thread, asker = CallThread("roperef-long-context"), SupportsAsker(backend)
    try:
        for length, stage, dtype in rows(plan):
            rid = row_id(plan, length, stage, dtype)
            if select is not None and not select(rid):
                continue
            result = judge_row(backend, plan, length, stage, dtype, profile, diagnose=diagnose, thread=thread, asker=asker)
            report.results.append(result)
            if progress:
                progress(result)
    finally:
        thread.close()
        asker.close()
    report.seconds = time.perf_counter() - t0
    return report
