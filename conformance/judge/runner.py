"""Run golden cases on a backend, stage by stage, and judge each result.

For every case: ``supports(case)`` (a reason -> NOT_SUPPORTED), the stage call on copies
of the inputs in the case dtype (an exception, a timeout or a crash -> ERROR), checks of
what came back (not arrays, wrong shape, non-float dtype or less precise than the
case dtype, NaN/Inf where the golden value is finite, an input modified in place -> FAIL),
then the tolerance model (:mod:`conformance.error_model.tolerance`) and, over the bound, the verdict and
diagnosis of :mod:`conformance.diagnose.failure`: IMPRECISE when a precision mechanism within a small
factor of the bound reproduces the output (it does not fail the run unless ``fail_imprecise``), else FAIL
with the measured operator (probing the backend once per failing group, :mod:`conformance.diagnose.probe`)
and the catalogue's decoys. Expected failures (:mod:`conformance.judge.xfail`) turn FAIL/ERROR/IMPRECISE
into XFAIL and PASS into XPASS. The run always goes on.

Backend code never runs in the runner's own thread: in process, every call goes through a
:class:`~conformance.calls.stage_call.CallThread` (whatever it raises, ``SystemExit`` and
``KeyboardInterrupt`` included, is that case's ERROR; past the time limit, default
:data:`~conformance.calls.stage_call.DEFAULT_TIMEOUT_S`, it is abandoned and the case is ERROR);
``isolate=True`` runs it in worker processes (spawned; killed and restarted after a crash or a
time-out), so a segfault or a hang becomes an ERROR of that case only. After
``max_consecutive_timeouts`` time-outs in a row the backend is taken to be hung and the
remaining cases are ERROR without being called. ``jobs`` is capped by the number of CPU cores
(:func:`effective_jobs`). When ``options.stop`` is set (Ctrl-C) the run stops within
:data:`~conformance.interrupt.POLL_S` seconds plus the time to kill its workers and returns the
partial report, ``interrupted=True``.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.base import Declined, backend_stages, declaration_notes
from ..calls.declared import INCONSISTENT, declaration_gap
from ..calls.isolate import Worker
from ..calls.memory import form_parts
from ..calls.process_state import ProcessState
from ..calls.results import is_outputs, precision_bits, stage_outputs
from ..calls.stage_call import (
    DEFAULT_TIMEOUT_S,
    TIMED_OUT,
    CallThread,
    Interrupted,
    StageError,
    ask_supports,
    call_stage,
)
from ..cases.case import GoldenCase
from ..diagnose.failure import failure_verdict
from ..diagnose.probe import ProbeBook
from ..error_model.expected import expected_and_bounds
from ..error_model.tolerance import Metrics, Profile, Resolved, compare, default_profile_name, get_profile, ignored_declaration, resolve
from ..interrupt import POLL_S, StopFlag
from ..untrusted_text import clip
from ..vocabulary import STAGES
from .xfail import XfailList

__all__ = [
    "STATUSES", "FAILING", "CaseResult", "RunOptions", "RunReport", "run_cases", "run_one", "open_caller", "call_stage",
    "judge_case", "judge_parts", "modified_message", "stage_order", "effective_jobs", "StageError", "DEFAULT_TIMEOUT_S", "InProcess",
    "IMPRECISE", "ProbeBook",
]

STATUSES = ("PASS", "FAIL", "IMPRECISE", "NOT_SUPPORTED", "XFAIL", "XPASS", "ERROR")
FAILING = frozenset({"FAIL", "ERROR"})
#: over the bound but within a small factor, by a precision mechanism (counts as failing with ``fail_imprecise``)
IMPRECISE = "IMPRECISE"

_PRECISION = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}  # significand bits of the case dtypes


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

    @property
    def uninformative(self) -> bool:
        """A PASS whose bound is as large as the output's own scale somewhere (``Metrics.admitted >=
        UNINFORMATIVE_C``): it certifies nothing (docs/conformance.md, "A PASS must inform")."""
        return self.status == "PASS" and self.metrics is not None and self.metrics.uninformative

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "stage": self.stage,
            "dtype": self.dtype,
            "flags": list(self.flags),
            "status": self.status,
            "uninformative": self.uninformative,
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
    """How to run: tolerance profile (None: by the backend's angle dtype), time limit per backend
    call in seconds (None: no limit), isolation, parallel jobs (capped by the core count), expected
    failures, whether to diagnose, how to print a repro, the stop flag (Ctrl-C), how many
    time-outs in a row mean the backend is hung (0: never give up), whether a FAIL's diagnosis may
    call the backend again with designed inputs (``probe``), and whether IMPRECISE fails the run."""

    profile: str | Profile | None = None
    tolerance_overrides: Sequence[str] = ()
    timeout: float | None = DEFAULT_TIMEOUT_S
    isolate: bool = False
    jobs: int = 1
    xfail: XfailList | None = None
    diagnose: bool = True
    repro: Callable[[GoldenCase], str] | None = None
    stop: StopFlag | None = None
    max_consecutive_timeouts: int = 3
    probe: bool = True
    fail_imprecise: bool = False


@dataclass
class RunReport:
    backend: str
    capabilities: dict[str, Any]
    profile: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    stale_xfails: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the backend's declaration notes (declaration_notes)
    #: the run was stopped (Ctrl-C, SIGTERM) before every case was judged; ``not_run`` cases were not
    interrupted: bool = False
    not_run: int = 0
    #: the signal that stopped it (``"SIGINT"``, ``"SIGTERM"``), None when it ran to the end
    stopped_by: str | None = None
    #: parallel jobs actually used (``options.jobs`` capped by the core count)
    jobs: int = 1
    coverage: dict[str, Any] | None = None  # conformance.judge.coverage (set by the CLI)
    #: the expected-failure list applied (its file), None when none was
    xfail_source: str | None = None
    verdict: dict[str, Any] | None = None  # conformance.judge.verdict, the run-level diagnosis
    fail_imprecise: bool = False  # IMPRECISE counts as failing (RunOptions.fail_imprecise)
    probe_calls: int = 0  # extra backend calls made by probing failing groups
    probe_groups: int = 0  # failing groups probed
    context: dict[str, Any] | None = None  # the context sweep's section (conformance.context.sweep; docs/context.md)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def ok(self) -> bool:
        failing = FAILING | {IMPRECISE} if self.fail_imprecise else FAILING
        return not any(r.status in failing for r in self.results)

    @property
    def uninformative(self) -> int:
        """PASSes that certify nothing (:attr:`CaseResult.uninformative`)."""
        return sum(r.uninformative for r in self.results)

    @property
    def informed(self) -> int:
        """Judged cases whose verdict says something: all but NOT_SUPPORTED and UNINFORMATIVE PASSes."""
        return sum(r.status != "NOT_SUPPORTED" and not r.uninformative for r in self.results)

    @property
    def judged(self) -> int:
        """Cases that got a verdict (everything but NOT_SUPPORTED)."""
        return sum(r.status != "NOT_SUPPORTED" for r in self.results)


def cpu_count() -> int:
    """CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def effective_jobs(jobs: int | None) -> int:
    """``jobs`` capped by the number of CPU cores (at least 1): more threads or worker processes
    than cores only compete for them (and ``--jobs 1000 --isolate`` would start 1000 processes)."""
    return max(1, min(int(jobs or 1), cpu_count()))


def stage_order(cases: Iterable[GoldenCase]) -> list[GoldenCase]:
    """Cases sorted stage by stage (inv_freq, cos_sin, apply, forward, backward), stable within."""
    return sorted(cases, key=lambda c: STAGES.index(c.stage))


# ----------------------------------------------------------------------------- calling


# ----------------------------------------------------------------------------- checking outputs


_precision = precision_bits


def _float_dtype_name(arr: np.ndarray) -> str | None:
    return arr.dtype.name if _precision(arr.dtype) is not None else None


def check_outputs(case: GoldenCase, outputs: Mapping[str, np.ndarray]) -> str | None:
    """A FAIL message for wrong shape/dtype or NaN where the golden value is finite; None if fine."""
    for name, exp in case.expected().items():
        got = outputs[name]
        dt = _float_dtype_name(got)
        if dt is None and not (name == "attention_factor" and got.dtype.kind in "iu"):
            return f"output {name} has dtype {got.dtype}, expected a float dtype (float128/64/32/16, bfloat16)"
        bits = _precision(got.dtype)
        if bits is not None and case.stage in ("apply", "forward", "backward") and bits < _PRECISION[case.dtype]:
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


def judge_case(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, *,
               modified: Sequence[str] = (), diagnose: bool = True, probe: Any = None) -> Judged:
    """PASS/FAIL/IMPRECISE for outputs already obtained (also used by the file protocol); ``probe``: a
    :data:`conformance.diagnose.failure.Prober` (None: the data-only diagnosis)."""
    problem = check_outputs(case, outputs)
    if problem and "non-finite" not in problem:
        return Judged("FAIL", problem)
    floats = [(bits, o.dtype) for o in outputs.values() if (bits := _precision(o.dtype)) is not None]
    out_dtype = min(floats, key=lambda bd: bd[0])[1] if floats else np.dtype(np.float64)  # the least precise float output
    if case.stage == "inv_freq":
        out_dtype = outputs["inv_freq"].dtype if _float_dtype_name(outputs["inv_freq"]) else np.dtype(np.float64)
    r = resolve(profile, caps, case, out_dtype)
    exp, bnd = expected_and_bounds(case, caps, r)
    metrics = compare(case, outputs, exp, bnd)
    if modified:
        return Judged("FAIL", modified_message(modified), metrics, r)
    if not problem and metrics.budget_used <= 1.0:
        return Judged("PASS", f"budget {metrics.budget_used:.3g}", metrics, r)
    w = metrics.worst
    where = ", ".join(f"{k}={w[k]}" for k in ("batch", "token", "position", "head", "channel", "pair") if k in w)
    msg = problem or (
        f"{metrics.n_over}/{metrics.n_elements} elements over the bound; worst |err|={w.get('error', math.nan):.3g} "
        f"> bound {w.get('bound', math.nan):.3g} (budget {metrics.budget_used:.3g}) at {w.get('output')}[{where}]"
    )
    status, diag = "FAIL", None
    try:
        status, diag, note = failure_verdict(case, outputs, caps, profile, r, exp, bnd, out_dtype,
                                             math.inf if problem else metrics.budget_used, diagnose=diagnose, probe=probe)
        msg += f"; {note}" if note else ""
    except Interrupted:
        raise
    except Exception as exc:
        if diagnose:
            diag = {"summary": f"diagnosis failed: {type(exc).__name__}: {exc}", "match": None, "candidates": []}
    return Judged(status, msg, metrics, r, diag)


def modified_message(modified: Sequence[str]) -> str:
    """``input(s) x, cos modified in place`` for input names; sentences (memory written outside a view,
    :mod:`conformance.calls.memory`) as they are."""
    names = [m for m in modified if " " not in m]
    said = ([f"input(s) {', '.join(names)} modified in place"] if names else []) + [m for m in modified if " " in m]
    return "; ".join(said)


def _form_parts(case: GoldenCase, raw: Any) -> list[tuple[str, GoldenCase, Any]]:
    try:
        return form_parts(case, raw)
    except ValueError as exc:
        raise StageError(str(exc)) from None


def _parts(case: GoldenCase, got: Any) -> list[tuple[str, GoldenCase, dict[str, np.ndarray]]]:
    """``(label, case, outputs)`` of each part of a result. What a caller returns was turned into arrays
    where the backend ran (:func:`conformance.calls.stage_call.call_stage`): one stage's outputs, or for
    a call form ``[(label, outputs)]``, matched here to the parts' cases; anything else (a caller of the
    judge's own making that hands back raw results) is converted here."""
    if is_outputs(case.stage, got):
        return [("", case, got)]
    if type(got) is list and all(type(p) is tuple and len(p) == 2 and is_outputs(case.stage, p[1]) for p in got):
        form = case.form
        split = _form_parts(case, (None, None) if form is not None and form.qk else None)
        cases = {label: sub for label, sub, _ in split}
        if [label for label, _ in got] != list(cases):
            raise StageError(f"{case.stage} result parts {[label for label, _ in got]} do not match {list(cases)}")
        return [(label, cases[label], outputs) for label, outputs in got]
    return [(label, sub, stage_outputs(sub.stage, out)) for label, sub, out in _form_parts(case, got)]


def judge_parts(parts: Sequence[tuple[str, GoldenCase, Mapping[str, np.ndarray]]], caps: Any, profile: Profile, *,
                modified: Sequence[str] = (), diagnose: bool = True, probe: Any = None) -> Judged:
    """:func:`judge_case` over the parts of one result (q and k of a q+k call; one part otherwise): FAIL
    when any part fails (the message names the part: ``k: ...``), IMPRECISE when every part that is not
    PASS is IMPRECISE, the metrics of the worst part. ``probe`` serves a one-part result only (a probe
    call changes one input tensor; a q+k call's parts are diagnosed from the data)."""
    if len(parts) == 1:
        _, sub, out = parts[0]
        return judge_case(sub, out, caps, profile, modified=modified, diagnose=diagnose, probe=probe)
    judged = [(label, judge_case(sub, out, caps, profile, diagnose=diagnose)) for label, sub, out in parts]
    worst = max(judged, key=lambda lj: lj[1].metrics.budget_used if lj[1].metrics is not None else math.inf)[1]
    failing = [(label, j) for label, j in judged if j.status != "PASS"]
    if modified:
        return Judged("FAIL", modified_message(modified), worst.metrics, worst.tolerance)
    if not failing:
        return Judged("PASS", "; ".join(f"{label}: {j.message}" for label, j in judged), worst.metrics, worst.tolerance)
    first = next((j for _, j in failing if j.status != IMPRECISE), failing[0][1])
    status = IMPRECISE if all(j.status == IMPRECISE for _, j in failing) else "FAIL"
    return Judged(status, "; ".join(f"{label}: {j.message}" for label, j in failing), first.metrics, first.tolerance,
                  first.diagnosis)


# ----------------------------------------------------------------------------- running


def _own_case(own: Callable[[GoldenCase], Any], case: GoldenCase) -> tuple[dict[str, np.ndarray], list[str]]:
    """A backend that serves whole cases (the file protocol's): its result turned into outputs, in the call thread."""
    raw, modified = own(case)
    return stage_outputs(case.stage, raw), [clip(str(m), 200) for m in modified]


class InProcess:
    """Calls an in-process backend through its own :class:`CallThread` (one per job slot)."""

    def __init__(self, backend: Any, timeout: float | None, stop: StopFlag | None = None) -> None:
        self.backend, self.timeout, self.stop = backend, timeout, stop
        self.thread = CallThread()

    def supports(self, case: GoldenCase) -> tuple[Any, list[str]]:
        """(True or the reason, what ``supports`` changed in the copy of the case it was handed)."""
        return self.thread.call(lambda: ask_supports(self.backend, case), "supports()", self.timeout, self.stop)

    def __call__(self, case: GoldenCase) -> tuple[dict[str, np.ndarray], list[str]]:
        own = getattr(self.backend, "call_case", None)  # file-based backends serve whole cases
        if callable(own):
            return self.thread.call(lambda: _own_case(own, case), case.stage, self.timeout, self.stop)
        return self.thread.call(lambda: call_stage(self.backend, case), case.stage, self.timeout, self.stop)

    def library_reason(self) -> str | None:
        """The backend's ``library_reason()`` asked in the call thread (None when it has none or it fails)."""
        probe = getattr(self.backend, "library_reason", None)
        if not callable(probe):
            return None
        try:
            reason = self.thread.call(lambda: probe(), "library_reason()", self.timeout, self.stop)
        except StageError:
            return None
        return clip(str(reason)) if isinstance(reason, str) and reason else None

    def close(self) -> None:
        self.thread.close()


def open_caller(backend: Any, options: RunOptions,
                selector: str | None = None) -> tuple[Callable[[GoldenCase], tuple[Any, list[str]]], Callable[[], None]]:
    """``(call, close)`` for :func:`run_one` outside :func:`run_cases`: the backend in this process
    (with ``options.timeout``) or, with ``options.isolate``, in one worker process (needs ``selector``)."""
    if options.isolate:
        if not selector:
            raise ValueError("isolate=True needs the backend given by name or module:attr (selector)")
        worker = Worker(selector, options.timeout)
        return worker, worker.close
    single = InProcess(backend, options.timeout)
    return single, single.close


def _profile_for(options: RunOptions, caps: Any) -> Profile:
    if isinstance(options.profile, Profile):
        return options.profile
    return get_profile(options.profile, options.tolerance_overrides, default=default_profile_name(caps))


def _supports(case: GoldenCase, backend: Any, call: Any) -> tuple[Any, list[str]]:
    """The backend's verdict (True or a reason) and what it changed in the case it was handed, asked
    through the caller (a call thread or a worker process)."""
    ask = getattr(call, "supports", None)
    if callable(ask):
        return ask(case)
    thread = CallThread("roperef-supports")  # a caller without its own thread: ask in one anyway
    try:
        return thread.call(lambda: ask_supports(backend, case), "supports()", DEFAULT_TIMEOUT_S)
    finally:
        thread.close()


def _prober(backend: Any, call: Any, probes: ProbeBook | None, options: RunOptions) -> Any:
    """The probing access of a case's diagnosis (None: off, or a file-protocol backend that cannot be called again)."""
    if probes is None or not options.diagnose or not options.probe or callable(getattr(backend, "call_case", None)):
        return None
    return lambda case, outputs, bound, r: probes.probe(case, outputs, bound, call, floor=r.floor, u_out=r.u_out)


def run_one(case: GoldenCase, backend: Any, call: Callable[[GoldenCase], tuple[Any, list[str]]], profile: Profile, options: RunOptions,
            probes: ProbeBook | None = None) -> CaseResult:
    """Run and judge one case; never raises, except :class:`~conformance.calls.stage_call.Interrupted`
    when the user stops the run. ``probes``: the run's probe results per failing group (None: no probing)."""
    start = time.perf_counter()
    res = CaseResult(case.id, case.family, case.stage, case.dtype, "ERROR", flags=tuple(case.flags))
    res.repro = options.repro(case) if options.repro else ""
    changed: list[str] = []
    try:
        verdict, changed = _supports(case, backend, call)
    except StageError as exc:
        verdict = None
        res.message = str(exc)
    if changed:
        res.status, res.message = "FAIL", f"supports() modified the case it was handed ({', '.join(changed)})"
    elif verdict is not None and verdict is not True:
        res.status, res.message = "NOT_SUPPORTED", clip(str(verdict))
        # a reason from case_reason()/library_reason() (Declined) is a decline, whatever was declared
        if not isinstance(verdict, Declined) and declaration_gap(backend, case) is None and not _unavailable(backend, call):
            res.message = f"{INCONSISTENT}: {res.message}"
    elif verdict is True and not callable(getattr(backend, "call_case", None)) and case.stage not in backend_stages(backend):
        res.status, res.message = "NOT_SUPPORTED", f"{INCONSISTENT}: supports() accepted it but stage {case.stage} is not implemented"
    elif verdict is True:
        parts: list[tuple[str, GoldenCase, dict[str, np.ndarray]]] | None = None
        try:
            got, modified = call(case)
            parts = _parts(case, got)
        except StageError as exc:
            res.status, res.message = "ERROR", str(exc)
        except Interrupted:
            raise
        except Exception as exc:
            res.status, res.message = "ERROR", clip(f"{case.stage} raised {type(exc).__name__}: {exc}")
        if parts is not None:
            try:
                j = judge_parts(parts, backend.capabilities, profile, modified=modified, diagnose=options.diagnose,
                                probe=_prober(backend, call, probes, options))
                res.status, res.message, res.metrics, res.tolerance, res.diagnosis = j.status, j.message, j.metrics, j.tolerance, j.diagnosis
            except Interrupted:
                raise
            except Exception as exc:
                res.status = "ERROR"
                res.message = clip(f"internal error of the judge (a roperef bug, not the backend's): {type(exc).__name__}: {exc}")
    apply_xfail(res, options.xfail)
    res.seconds = time.perf_counter() - start
    return res


def _unavailable(backend: Any, call: Any) -> bool:
    """The implementation cannot run here at all (library missing, no GPU): not a declaration problem.
    Asked through the caller's call thread when it has one (``library_reason`` is backend code)."""
    ask = getattr(call, "library_reason", None)
    if callable(ask):
        return bool(ask())
    if not callable(getattr(backend, "library_reason", None)):
        return False
    thread = CallThread("roperef-library-reason")
    try:
        return bool(thread.call(lambda: backend.library_reason(), "library_reason()", DEFAULT_TIMEOUT_S))
    except StageError:
        return False
    finally:
        thread.close()


def apply_xfail(res: CaseResult, xfail: XfailList | None) -> None:
    if xfail is None:
        return
    reason = xfail.reason_for(res.id)
    if reason is None:
        return
    res.xfail_reason = reason
    if res.status in FAILING or res.status == IMPRECISE:
        res.status = "XFAIL"
    elif res.status == "PASS":
        res.status = "XPASS"


class _HangGuard:
    """Counts time-outs in a row; past ``limit`` the backend is taken to be hung (``limit`` 0: never)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.in_a_row, self._lock = limit, 0, threading.Lock()

    def note(self, res: CaseResult) -> None:
        with self._lock:
            self.in_a_row = self.in_a_row + 1 if res.message.startswith(TIMED_OUT) else 0

    @property
    def hung(self) -> bool:
        return self.limit > 0 and self.in_a_row >= self.limit

    def skipped(self, case: GoldenCase, options: RunOptions) -> CaseResult:
        res = CaseResult(case.id, case.family, case.stage, case.dtype, "ERROR", flags=tuple(case.flags))
        res.repro = options.repro(case) if options.repro else ""
        res.message = (f"not run: the backend timed out on {self.in_a_row} calls in a row and looks hung "
                       "(rerun this case alone with its repro command, or raise --timeout)")
        apply_xfail(res, options.xfail)
        return res


def _make_caller(backend: Any, options: RunOptions, selector: str | None, stop: StopFlag) -> Any:
    if options.isolate:
        take = getattr(backend, "take_worker", None)  # an IsolatedBackend lends the worker that loaded it
        spare = take() if callable(take) else None
        if spare is not None:
            spare.timeout, spare.stop = options.timeout, stop
            return spare
        return Worker(str(selector), options.timeout, stop)
    return InProcess(backend, options.timeout, stop)


def run_cases(
    backend: Any,
    cases: Sequence[GoldenCase],
    options: RunOptions | None = None,
    *,
    progress: Callable[[CaseResult], None] | None = None,
    selector: str | None = None,
) -> RunReport:
    """Run ``cases`` (stage by stage) on ``backend``. ``selector`` (a name or module:attr) is
    needed for ``isolate`` (the worker resolves it again in its own process; ``backend`` then only
    gives the name and capabilities, e.g. an :class:`~conformance.calls.isolate.IsolatedBackend`)."""
    options = options or RunOptions()
    caps = backend.capabilities
    profile = _profile_for(options, caps)
    ordered = stage_order(cases)
    t0 = time.perf_counter()
    jobs = effective_jobs(options.jobs)
    if options.isolate and not selector:
        raise ValueError("isolate=True needs the backend given by name or module:attr (selector)")
    stop = options.stop or StopFlag()
    guard = _HangGuard(options.max_consecutive_timeouts)
    probes = ProbeBook(enabled=options.probe and options.diagnose)
    results: dict[int, CaseResult] = {}
    callers: list[Any] = []

    def task(index: int, case: GoldenCase, call: Any) -> None:
        result = guard.skipped(case, options) if guard.hung else run_one(case, backend, call, profile, options, probes)
        if not guard.hung:
            guard.note(result)
        results[index] = result
        if progress:
            progress(result)

    def slot(work: queue.SimpleQueue[tuple[int, GoldenCase]], errors: list[BaseException]) -> None:
        call = _make_caller(backend, options, selector, stop)
        callers.append(call)
        try:
            while not stop.is_set():
                try:
                    index, case = work.get_nowait()
                except queue.Empty:
                    return
                task(index, case, call)
        except Interrupted:
            return
        except BaseException as exc:
            errors.append(exc)
            stop.set()
        finally:
            call.close()

    work: queue.SimpleQueue[tuple[int, GoldenCase]] = queue.SimpleQueue()
    for item in enumerate(ordered):
        work.put(item)
    errors: list[BaseException] = []
    state = ProcessState.capture()  # what backend code may change in this process: put back after the run
    try:
        if jobs == 1:
            slot(work, errors)
        else:
            threads = [threading.Thread(target=slot, args=(work, errors), daemon=True, name=f"roperef-job-{k}")
                       for k in range(jobs)]
            for t in threads:
                t.start()
            _wait_for(threads, stop)
    finally:
        for call in callers:
            call.close()
        tampered = state.restore()
    if errors:
        raise errors[0]
    done = [results[i] for i in sorted(results)]
    interrupted = stop.is_set() and len(done) < len(ordered)
    report = RunReport(
        backend=str(getattr(backend, "name", selector or "backend")),
        capabilities=caps.to_dict() if hasattr(caps, "to_dict") else {},
        profile=profile.to_dict(),
        results=done,
        seconds=time.perf_counter() - t0,
        notes=list(declaration_notes(backend)) + list(ignored_declaration(caps, profile)) + tampered,
        interrupted=interrupted,
        not_run=len(ordered) - len(done),
        stopped_by=(stop.signal_name or "SIGINT") if interrupted else None,
        jobs=jobs,
        fail_imprecise=options.fail_imprecise,
        probe_calls=probes.calls(),
        probe_groups=probes.groups(),
    )
    if options.xfail is not None:
        report.stale_xfails = options.xfail.stale([(r.id, r.status) for r in done])
        report.xfail_source = options.xfail.source
    return report


def _wait_for(threads: list[threading.Thread], stop: StopFlag, grace: float = 1.0) -> None:
    """Wait for the job threads; once ``stop`` is set, give them ``grace`` seconds, then leave them."""
    deadline: float | None = None
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(POLL_S)
        if stop.is_set():
            deadline = deadline or time.monotonic() + grace
            if time.monotonic() >= deadline:
                return
