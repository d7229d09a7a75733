"""Run golden cases on a backend, stage by stage, and judge each result.

For every case: ``supports(case)`` (a reason -> NOT_SUPPORTED), the stage call on copies
of the inputs in the case dtype (an exception, a timeout or a crash -> ERROR), checks of
what came back (not arrays, wrong shape, non-float dtype or less precise than the
case dtype, NaN/Inf where the golden value is finite, an input modified in place -> FAIL),
then the tolerance model (:mod:`conformance.tolerance`) and, on a FAIL, the diagnosis
(:mod:`conformance.diagnose`). Expected failures (:mod:`conformance.xfail`) turn FAIL/ERROR
into XFAIL and PASS into XPASS. The run always goes on.

``isolate=True`` runs the backend in a worker process (spawned; restarted after a crash
or a timeout), so a segfault or a hang becomes an ERROR of that case only.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .case import STAGE_OUTPUTS, STAGES, GoldenCase, numpy_dtype
from .declared import INCONSISTENT, declaration_gap
from .expected import expected_and_bounds
from .tolerance import Metrics, Profile, Resolved, compare, default_profile_name, get_profile, resolve
from .xfail import XfailList

__all__ = ["STATUSES", "FAILING", "CaseResult", "RunOptions", "RunReport", "run_cases", "call_stage", "judge_case", "stage_order"]

STATUSES = ("PASS", "FAIL", "NOT_SUPPORTED", "XFAIL", "XPASS", "ERROR")
FAILING = frozenset({"FAIL", "ERROR"})

_PRECISION = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}


@dataclass
class CaseResult:
    """The verdict on one case."""

    id: str
    family: str
    stage: str
    dtype: str
    status: str
    message: str = ""
    metrics: Metrics | None = None
    tolerance: Resolved | None = None
    diagnosis: dict[str, Any] | None = None
    xfail_reason: str | None = None
    seconds: float = 0.0
    repro: str = ""
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "stage": self.stage,
            "dtype": self.dtype,
            "flags": list(self.flags),
            "status": self.status,
            "message": self.message,
            "metrics": self.metrics.to_dict() if self.metrics else None,
            "tolerance": self.tolerance.to_dict() if self.tolerance else None,
            "diagnosis": self.diagnosis,
            "xfail_reason": self.xfail_reason,
            "seconds": round(self.seconds, 6),
            "repro": self.repro,
        }


@dataclass
class RunOptions:
    """How to run: tolerance profile (None: by the backend's angle dtype), timeout per call (s),
    isolation, parallel jobs, expected failures, whether to diagnose, how to print a repro."""

    profile: str | Profile | None = None
    tolerance_overrides: Sequence[str] = ()
    timeout: float | None = None
    isolate: bool = False
    jobs: int = 1
    xfail: XfailList | None = None
    diagnose: bool = True
    repro: Callable[[GoldenCase], str] | None = None


@dataclass
class RunReport:
    backend: str
    capabilities: dict[str, Any]
    profile: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    stale_xfails: list[dict[str, str]] = field(default_factory=list)
    coverage: dict[str, Any] | None = None  # conformance.coverage (set by the CLI)
    verdict: dict[str, Any] | None = None  # conformance.verdict, the run-level diagnosis

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def ok(self) -> bool:
        return not any(r.status in FAILING for r in self.results)


def stage_order(cases: Iterable[GoldenCase]) -> list[GoldenCase]:
    """Cases sorted stage by stage (inv_freq, cos_sin, apply, forward, backward), stable within."""
    return sorted(cases, key=lambda c: STAGES.index(c.stage))


# ----------------------------------------------------------------------------- calling


class StageError(Exception):
    """The backend raised, hung or crashed (ERROR)."""


def _stage_args(case: GoldenCase) -> tuple[tuple[Any, ...], dict[str, Any]]:
    a, spec = case.arrays, case.spec
    if case.stage == "inv_freq":
        return (spec, int(np.asarray(a["seq_len"]))), {}
    if case.stage == "cos_sin":
        return (spec, np.array(a["positions"], dtype=np.int64)), {}
    if case.stage == "apply":
        return (case.input_as("x").copy(), case.input_as("cos").copy(), case.input_as("sin").copy(), spec), {}
    name = "x" if case.stage == "forward" else "grad"
    kwargs = {"cu_seqlens": np.array(a["cu_seqlens"], dtype=np.int64)} if "cu_seqlens" in a else {}
    return (case.input_as(name).copy(), np.array(a["positions"], dtype=np.int64), spec), kwargs


def call_stage(backend: Any, case: GoldenCase) -> tuple[Any, list[str]]:
    """Call the backend's stage on fresh copies of the inputs; returns (raw result, inputs it modified)."""
    args, kwargs = _stage_args(case)
    before = [np.array(v, copy=True) if isinstance(v, np.ndarray) else None for v in args]
    kw_before = {k: np.array(v, copy=True) for k, v in kwargs.items()}
    raw = getattr(backend, case.stage)(*args, **kwargs)
    names = {"inv_freq": ("spec", "seq_len"), "cos_sin": ("spec", "positions"), "apply": ("x", "cos", "sin", "spec")}
    arg_names = names.get(case.stage, ("x" if case.stage == "forward" else "grad", "positions", "spec"))
    modified = [
        n for n, v, b in zip(arg_names, args, before) if b is not None and not np.array_equal(v, b, equal_nan=True)
    ]
    modified += [k for k, v in kwargs.items() if not np.array_equal(v, kw_before[k])]
    return raw, modified


def _with_timeout(fn: Callable[[], Any], timeout: float | None) -> Any:
    if not timeout:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="roperef-stage")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise StageError(f"timed out after {timeout:g} s (the call was abandoned; use --isolate to kill hung backends)")
    if "error" in box:
        raise box["error"]
    return box["value"]


# ----------------------------------------------------------------------------- checking outputs


def _as_outputs(case: GoldenCase, raw: Any) -> dict[str, np.ndarray]:
    """Map the raw return value onto the stage's output names; StageError if malformed."""
    names = STAGE_OUTPUTS[case.stage]
    if len(names) == 1:
        values = (raw,)
    else:
        if not isinstance(raw, (tuple, list)) or len(raw) != len(names):
            raise StageError(f"{case.stage} must return a tuple ({', '.join(names)}), got {type(raw).__name__}")
        values = tuple(raw)
    out = {}
    for name, value in zip(names, values):
        try:
            out[name] = np.asarray(value)
        except Exception as exc:  # noqa: BLE001
            raise StageError(f"output {name} is not convertible to a NumPy array ({exc})") from None
    return out


def _float_dtype_name(arr: np.ndarray) -> str | None:
    name = arr.dtype.name
    return name if name in _PRECISION else None


def check_outputs(case: GoldenCase, outputs: Mapping[str, np.ndarray]) -> str | None:
    """A FAIL message for wrong shape/dtype or NaN where the golden value is finite; None if fine."""
    for name, exp in case.expected().items():
        got = outputs[name]
        dt = _float_dtype_name(got)
        if dt is None and not (name == "attention_factor" and got.dtype.kind in "iu"):
            return f"output {name} has dtype {got.dtype}, expected a float dtype (float64/32/16, bfloat16)"
        if dt is not None and case.stage in ("apply", "forward", "backward") and _PRECISION[dt] < _PRECISION[case.dtype]:
            return f"output {name} has dtype {dt}, less precise than the case dtype {case.dtype}"
        if got.shape != np.shape(exp):
            return f"output {name} has shape {got.shape}, expected {np.shape(exp)}"
        g = got.astype(np.float64)
        bad_ = ~np.isfinite(g) & np.isfinite(np.asarray(exp, dtype=np.float64))
        if bad_.any():
            idx = tuple(int(i) for i in np.argwhere(bad_)[0])
            return f"output {name} has {int(bad_.sum())} non-finite value(s) where the golden value is finite (first at {idx}: {g[idx]})"
    return None


@dataclass
class Judged:
    status: str
    message: str
    metrics: Metrics | None = None
    tolerance: Resolved | None = None
    diagnosis: dict[str, Any] | None = None


def judge_case(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, *, modified: Sequence[str] = (), diagnose: bool = True) -> Judged:
    """PASS/FAIL for outputs already obtained (also used by the file protocol)."""
    problem = check_outputs(case, outputs)
    if problem and "non-finite" not in problem:
        return Judged("FAIL", problem)
    out_dtype = min((o.dtype for o in outputs.values() if _float_dtype_name(o)), key=lambda d: _PRECISION[d.name], default=np.dtype(np.float64))
    if case.stage == "inv_freq":
        out_dtype = outputs["inv_freq"].dtype if _float_dtype_name(outputs["inv_freq"]) else np.dtype(np.float64)
    r = resolve(profile, caps, case, out_dtype)
    exp, bnd = expected_and_bounds(case, caps, r)
    metrics = compare(case, outputs, exp, bnd)
    if modified:
        return Judged("FAIL", f"input(s) {', '.join(modified)} modified in place", metrics, r)
    if not problem and metrics.budget_used <= 1.0:
        return Judged("PASS", f"budget {metrics.budget_used:.3g}", metrics, r)
    w = metrics.worst
    where = ", ".join(f"{k}={w[k]}" for k in ("batch", "token", "position", "head", "channel", "pair") if k in w)
    msg = problem or (
        f"{metrics.n_over}/{metrics.n_elements} elements over the bound; worst |err|={w.get('error', math.nan):.3g} "
        f"> bound {w.get('bound', math.nan):.3g} (budget {metrics.budget_used:.3g}) at {w.get('output')}[{where}]"
    )
    diag = None
    if diagnose:
        from .failure import explain_failure

        try:
            diag = explain_failure(case, outputs, caps, profile, r, exp, bnd, out_dtype)
        except Exception as exc:  # noqa: BLE001 - a diagnosis problem never hides the verdict
            diag = {"summary": f"diagnosis failed: {type(exc).__name__}: {exc}", "match": None, "candidates": []}
    return Judged("FAIL", msg, metrics, r, diag)


# ----------------------------------------------------------------------------- running


class _InProcess:
    def __init__(self, backend: Any, timeout: float | None) -> None:
        self.backend, self.timeout = backend, timeout

    def __call__(self, case: GoldenCase) -> tuple[Any, list[str]]:
        own = getattr(self.backend, "call_case", None)  # file-based backends serve whole cases
        if callable(own):
            return _with_timeout(lambda: own(case), self.timeout)
        return _with_timeout(lambda: call_stage(self.backend, case), self.timeout)

    def close(self) -> None:
        pass


def _profile_for(options: RunOptions, caps: Any) -> Profile:
    if isinstance(options.profile, Profile):
        return options.profile
    return get_profile(options.profile, options.tolerance_overrides, default=default_profile_name(caps))


def run_one(case: GoldenCase, backend: Any, call: Callable[[GoldenCase], tuple[Any, list[str]]], profile: Profile, options: RunOptions) -> CaseResult:
    """Run and judge one case; never raises."""
    start = time.perf_counter()
    res = CaseResult(case.id, case.family, case.stage, case.dtype, "ERROR", flags=tuple(case.flags))
    res.repro = options.repro(case) if options.repro else ""
    try:
        verdict = backend.supports(case)
    except Exception as exc:  # noqa: BLE001
        verdict = None
        res.message = f"supports() raised {type(exc).__name__}: {exc}"
    if verdict is not None and verdict is not True:
        res.status, res.message = "NOT_SUPPORTED", str(verdict) if verdict else "not supported"
        if declaration_gap(backend, case) is None and not _unavailable(backend):
            res.message = f"{INCONSISTENT}: {res.message}"
    elif verdict is True and not callable(getattr(backend, "call_case", None)) and not callable(getattr(backend, case.stage, None)):
        res.status, res.message = "NOT_SUPPORTED", f"{INCONSISTENT}: supports() accepted it but stage {case.stage} is not implemented"
    elif verdict is True:
        outputs: dict[str, np.ndarray] | None = None
        try:
            raw, modified = call(case)
            outputs = _as_outputs(case, raw)
        except StageError as exc:
            res.status, res.message = "ERROR", str(exc)
        except Exception as exc:  # noqa: BLE001 - a backend exception is a result, not a crash
            res.status, res.message = "ERROR", f"{case.stage} raised {type(exc).__name__}: {exc}"
        if outputs is not None:
            try:
                j = judge_case(case, outputs, backend.capabilities, profile, modified=modified, diagnose=options.diagnose)
                res.status, res.message, res.metrics, res.tolerance, res.diagnosis = j.status, j.message, j.metrics, j.tolerance, j.diagnosis
            except Exception as exc:  # noqa: BLE001 - the run goes on, but the blame is roperef's, not the backend's
                res.status = "ERROR"
                res.message = f"internal error of the judge (a roperef bug, not the backend's): {type(exc).__name__}: {exc}"
    apply_xfail(res, options.xfail)
    res.seconds = time.perf_counter() - start
    return res


def _unavailable(backend: Any) -> bool:
    """The implementation cannot run here at all (library missing, no GPU): not a declaration problem."""
    probe = getattr(backend, "library_reason", None)
    try:
        return bool(probe()) if callable(probe) else False
    except Exception:  # noqa: BLE001
        return False


def apply_xfail(res: CaseResult, xfail: XfailList | None) -> None:
    if xfail is None:
        return
    reason = xfail.reason_for(res.id)
    if reason is None:
        return
    res.xfail_reason = reason
    if res.status in FAILING:
        res.status = "XFAIL"
    elif res.status == "PASS":
        res.status = "XPASS"


def run_cases(
    backend: Any,
    cases: Sequence[GoldenCase],
    options: RunOptions | None = None,
    *,
    progress: Callable[[CaseResult], None] | None = None,
    selector: str | None = None,
) -> RunReport:
    """Run ``cases`` (stage by stage) on ``backend``. ``selector`` (a name or module:attr) is
    needed for ``isolate`` (the worker resolves it again in its own process)."""
    options = options or RunOptions()
    caps = backend.capabilities
    profile = _profile_for(options, caps)
    ordered = stage_order(cases)
    t0 = time.perf_counter()
    jobs = max(1, int(options.jobs or 1))
    if options.isolate:
        from .isolate import WorkerPool

        if not selector:
            raise ValueError("isolate=True needs the backend given by name or module:attr (selector)")
        pool = WorkerPool(selector, jobs, options.timeout)
        calls: Callable[[], Any] = pool.acquire
        release = pool.release
    else:
        single = _InProcess(backend, options.timeout)
        calls, release, pool = (lambda: single), (lambda c: None), None

    def task(case: GoldenCase) -> CaseResult:
        call = calls()
        try:
            result = run_one(case, backend, call, profile, options)
        finally:
            release(call)
        if progress:
            progress(result)
        return result

    try:
        if jobs == 1:
            results = [task(c) for c in ordered]
        else:
            with ThreadPoolExecutor(max_workers=jobs) as ex:
                results = list(ex.map(task, ordered))
    finally:
        if pool is not None:
            pool.close()
    report = RunReport(
        backend=str(getattr(backend, "name", selector or "backend")),
        capabilities=caps.to_dict() if hasattr(caps, "to_dict") else {},
        profile=profile.to_dict(),
        results=results,
        seconds=time.perf_counter() - t0,
    )
    if options.xfail is not None:
        report.stale_xfails = options.xfail.stale([(r.id, r.status) for r in results])
    return report


def case_dtype(case: GoldenCase) -> np.dtype:
    return numpy_dtype(case.dtype)
