"""Call backend code so that nothing it does can take the judge down or hang it.

Every in-process backend call (``supports``, the stage, turning its result into arrays, reading
the text of what it raised) runs in a :class:`CallThread`, a daemon thread owned by one job slot,
while the calling thread waits for it, looking every :data:`~conformance.interrupt.POLL_S` seconds
at the time limit and at the user's stop flag:

- whatever the call raises, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit``
  included, is caught in the call thread and becomes :class:`StageError` (that case's ERROR);
  the message is written in the call thread too (an exception's ``__str__`` is backend code) and
  clipped (:mod:`conformance.untrusted_text`);
- the result is turned into the stage's outputs in the call thread
  (:func:`conformance.calls.results.stage_outputs`): ``__array__`` is backend code as well;
- the backend is handed copies (:mod:`conformance.calls.handoff`) and what it changed in them is
  returned with the outputs;
- past the time limit the call is *abandoned*: a thread cannot be killed, so it is left to
  finish in the background (its result is dropped) and the slot gets a new thread for the
  next call; the case is ERROR "timed out" (:class:`TimedOut`);
- when the stop flag is set (Ctrl-C, SIGTERM) the call is abandoned the same way and
  :class:`Interrupted` is raised.

The planner of generated and explored cases asks ``supports()`` the same way
(:class:`SupportsAsker`, :func:`supports_reason`).

Limits of a thread: a call that holds the GIL without returning to Python (a single C call,
a Numba kernel without ``nogil``) stops every thread of the process, so neither the limit nor
Ctrl-C takes effect until it returns. Worker processes (``--isolate``, and ``--timeout`` on the
command line) have no such limit: they are killed (:mod:`conformance.calls.isolate`).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..backends.base import Declined
from ..backends.supports_verdict import SupportsAnswerError, supports_verdict
from ..cases.case import GoldenCase
from ..interrupt import POLL_S, StopFlag
from ..untrusted_text import clip
from .errors import TIMED_OUT, Interrupted, StageError, TimedOut, describe_exception
from .handoff import case_changes, fresh_spec, handed_case, same_array, spec_changes
from .memory import call_in_form, form_parts
from .results import stage_outputs

__all__ = [
    "DEFAULT_TIMEOUT_S", "StageError", "TimedOut", "Interrupted", "CallThread", "describe_exception", "TIMED_OUT",
    "call_stage", "ask_supports", "supports_reason", "SupportsAsker", "MAX_SUPPORTS_TIMEOUTS", "SUPPORTS_RAISED", "keep_kind",
    "FormOutputs",
]

#: the default time limit of one backend call (seconds), in process and in worker processes
DEFAULT_TIMEOUT_S = 60.0
#: time-outs of ``supports()`` in a row after which a planner stops asking (the backend looks hung)
MAX_SUPPORTS_TIMEOUTS = 3
#: the start of :func:`supports_reason`'s text when ``supports()`` raised instead of answering
SUPPORTS_RAISED = "supports() raised"


@dataclass
class _Job:
    fn: Callable[[], Any]
    what: str
    done: threading.Event
    value: Any = None
    error: str | None = None
    stage_error: bool = False


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        try:
            job.value = job.fn()
        except StageError as exc:
            job.error, job.stage_error = str(exc), True
        except BaseException as exc:
            try:
                job.error = describe_exception(job.what, exc)
            except BaseException:  # even describing it failed: say so without its text
                job.error = f"{job.what} raised {type(exc).__name__}"
        finally:
            job.done.set()
            job = None  # drop references to the case while idle


class CallThread:
    """One daemon thread that runs backend calls one at a time (see the module docstring)."""

    def __init__(self, name: str = "roperef-call") -> None:
        self.name = name
        self.abandoned = 0
        self._jobs: queue.SimpleQueue[_Job | None] | None = None

    def _start(self) -> queue.SimpleQueue[_Job | None]:
        jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(jobs,), daemon=True, name=self.name).start()
        weakref.finalize(self, jobs.put, None)  # the thread ends when its owner is collected
        self._jobs = jobs
        return jobs

    def _abandon(self) -> None:
        """Leave the running call to its thread (it ends after the call returns) and use a new one."""
        if self._jobs is not None:
            self._jobs.put(None)
        self._jobs = None
        self.abandoned += 1

    def call(self, fn: Callable[[], Any], what: str, timeout: float | None, stop: StopFlag | None = None, *,
             on_timeout: str | None = None) -> Any:
        """``fn()`` in the thread; its value, or StageError (raised), :class:`TimedOut` (the limit
        passed; its message ``on_timeout`` when given) or Interrupted (stop flag)."""
        if stop is not None and stop.is_set():
            raise Interrupted
        jobs = self._jobs or self._start()
        job = _Job(fn, what, threading.Event())
        jobs.put(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not job.done.wait(POLL_S):
            if stop is not None and stop.is_set():
                self._abandon()
                raise Interrupted
            if deadline is not None and time.monotonic() >= deadline:
                if job.done.wait(POLL_S):  # it ended while this thread was not scheduled: not late
                    break
                self._abandon()
                raise TimedOut(on_timeout or (
                    f"{TIMED_OUT} {timeout:g} s ({what} abandoned in a background thread; "
                    "--isolate or --timeout run the backend in a process that is killed instead)"))
        if job.error is not None:
            raise StageError(job.error)
        return job.value

    def close(self) -> None:
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None


_ARG_NAMES = {"inv_freq": ("spec", "seq_len"), "cos_sin": ("spec", "positions"), "apply": ("x", "cos", "sin", "spec"),
              "forward": ("x", "positions", "spec"), "backward": ("grad", "positions", "spec")}


def _stage_args(case: GoldenCase) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Fresh copies of the stage's arguments: inputs in the case dtype, positions int64, a copy of the spec."""
    a, spec = case.arrays, fresh_spec(case.spec)
    if case.stage == "inv_freq":
        return (spec, int(np.asarray(a["seq_len"]))), {}
    if case.stage == "cos_sin":
        return (spec, np.array(a["positions"], dtype=np.int64)), {}
    if case.stage == "apply":
        return (case.input_as("x").copy(), case.input_as("cos").copy(), case.input_as("sin").copy(), spec), {}
    name = "x" if case.stage == "forward" else "grad"
    kwargs = {"cu_seqlens": np.array(a["cu_seqlens"], dtype=np.int64)} if "cu_seqlens" in a else {}
    return (case.input_as(name).copy(), np.array(a["positions"], dtype=np.int64), spec), kwargs


#: what a call in a call form returns: ``[(part label, the stage's outputs)]`` (``q`` and ``k`` for q+k)
FormOutputs = list[tuple[str, dict[str, np.ndarray]]]


def _call_form(backend: Any, case: GoldenCase) -> tuple[FormOutputs, list[str]]:
    """A case with a call form (a memory layout, in place, q with k), called by
    :func:`conformance.calls.memory.call_in_form` on a copy of its spec (and k's); the result split into
    its parts (:func:`~conformance.calls.memory.form_parts`) and each turned into owned arrays, here."""
    form = case.form
    assert form is not None
    handed = dataclasses.replace(case, spec=fresh_spec(case.spec),
                                 form=dataclasses.replace(form, k_spec=fresh_spec(form.k_spec)) if form.k_spec else form)
    raw, modified = call_in_form(backend, handed)
    modified = list(modified) + spec_changes(case.spec, handed.spec)
    if form.k_spec is not None and handed.form is not None:
        modified += spec_changes(form.k_spec, handed.form.k_spec, "k_spec")
    try:
        parts = form_parts(case, raw)
    except ValueError as exc:
        raise StageError(str(exc)) from None
    return [(label, stage_outputs(sub.stage, out)) for label, sub, out in parts], modified


def call_stage(backend: Any, case: GoldenCase) -> tuple[dict[str, np.ndarray] | FormOutputs, list[str]]:
    """Call the backend's stage on fresh copies of its arguments; returns (the stage's outputs as owned
    arrays, the arguments it modified: ``x``, ``positions``, ``spec.theta``, ...; and sentences for memory
    written outside a view). A case with a call form returns its parts' outputs (:data:`FormOutputs`).
    Runs backend code: call it in a call thread or a worker process."""
    if case.form is not None:
        return _call_form(backend, case)
    args, kwargs = _stage_args(case)
    before = [np.array(v, copy=True) if isinstance(v, np.ndarray) else None for v in args]
    kw_before = {k: np.array(v, copy=True) for k, v in kwargs.items()}
    raw = getattr(backend, case.stage)(*args, **kwargs)
    outputs = stage_outputs(case.stage, raw)
    modified: list[str] = []
    for name, value, kept in zip(_ARG_NAMES[case.stage], args, before):
        if name == "spec":
            modified += spec_changes(case.spec, value)
        elif kept is not None and not same_array(kept, value):
            modified.append(name)
    modified += [k for k, v in kwargs.items() if not same_array(kw_before[k], v)]
    return outputs, modified


def ask_supports(backend: Any, case: GoldenCase) -> tuple[Literal[True] | str, list[str]]:
    """The backend's ``supports`` asked on a copy of ``case``: (True or the reason, what it changed in
    the copy). A non-answer raises :class:`StageError`. Runs backend code (a call thread, a worker)."""
    handed = handed_case(case)
    answer = backend.supports(handed)
    try:
        verdict = supports_verdict(answer)
    except SupportsAnswerError as exc:
        raise StageError(str(exc)) from None
    return (True if verdict is True else keep_kind(verdict, clip(verdict))), case_changes(case, handed)


def keep_kind(reason: str, text: str) -> str:
    """``text`` as the same kind of reason as ``reason`` (a :class:`~conformance.backends.base.Declined` stays one)."""
    return Declined(text) if isinstance(reason, Declined) else text


class SupportsAsker:
    """Asks ``backend.supports`` for a planner (generated and explored cases, long-context chunks) in a
    call thread under a time limit; every failure is a reason. After :data:`MAX_SUPPORTS_TIMEOUTS`
    time-outs in a row it stops asking: every later case gets the reason "not asked: ...".

    The user's Ctrl-C while it waits stays a ``KeyboardInterrupt`` of the caller's thread (or, under
    :func:`~conformance.interrupt.sigint_sets` with ``stop``, :class:`Interrupted`)."""

    def __init__(self, backend: Any, timeout: float | None = DEFAULT_TIMEOUT_S, stop: StopFlag | None = None) -> None:
        self.backend, self.timeout, self.stop = backend, timeout, stop
        self.thread = CallThread("roperef-supports")
        self.timeouts_in_a_row = 0

    def reason(self, case: GoldenCase) -> str | None:
        """None when the backend takes ``case``, else why not (the answer, or what went wrong asking)."""
        if self.timeouts_in_a_row >= MAX_SUPPORTS_TIMEOUTS:
            return (f"not asked: supports() timed out on {self.timeouts_in_a_row} calls in a row "
                    "(the backend looks hung)")
        try:
            verdict, changed = self.thread.call(lambda: ask_supports(self.backend, case), "supports()", self.timeout,
                                                self.stop, on_timeout=f"supports() {TIMED_OUT} {self.timeout:g} s")
        except TimedOut as exc:
            self.timeouts_in_a_row += 1
            return str(exc)
        except StageError as exc:
            self.timeouts_in_a_row = 0
            return str(exc)
        self.timeouts_in_a_row = 0
        if changed:
            return f"supports() modified the case it was handed ({', '.join(changed)})"
        return None if verdict is True else verdict

    def close(self) -> None:
        self.thread.close()


def supports_reason(backend: Any, case: GoldenCase, timeout: float | None = DEFAULT_TIMEOUT_S) -> str | None:
    """One question of a :class:`SupportsAsker`: None when ``backend`` supports ``case``, else the reason."""
    asker = SupportsAsker(backend, timeout)
    try:
        return asker.reason(case)
    finally:
        asker.close()
