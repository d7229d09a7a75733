"""Call backend code so that nothing it does can take the judge down or hang it.

Every in-process backend call (``supports`` and the stage) runs in a :class:`CallThread`, a
daemon thread owned by one job slot, while the calling thread waits for it, looking every
:data:`~conformance.interrupt.POLL_S` seconds at the time limit and at the user's stop flag:

- whatever the call raises, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit``
  included, is caught in the call thread and becomes :class:`StageError` (that case's ERROR);
- past the time limit the call is *abandoned*: a thread cannot be killed, so it is left to
  finish in the background (its result is dropped) and the slot gets a new thread for the
  next call; the case is ERROR "timed out";
- when the stop flag is set (Ctrl-C) the call is abandoned the same way and
  :class:`Interrupted` is raised.

Limits of a thread: a call that holds the GIL without returning to Python (a single C call,
a Numba kernel without ``nogil``) stops every thread of the process, so neither the limit nor
Ctrl-C takes effect until it returns. Worker processes (``--isolate``, and ``--timeout`` on the
command line) have no such limit: they are killed (:mod:`conformance.calls.isolate`).
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from ..interrupt import POLL_S, StopFlag
from .memory import call_in_form

__all__ = [
    "DEFAULT_TIMEOUT_S", "StageError", "Interrupted", "CallThread", "describe_exception", "TIMED_OUT", "call_stage",
    "supports_reason", "SUPPORTS_RAISED",
]

#: the default time limit of one backend call (seconds), in process and in worker processes
DEFAULT_TIMEOUT_S = 60.0
#: the start of every time-out message (the runner counts consecutive time-outs by it)
TIMED_OUT = "timed out after"
#: the start of :func:`supports_reason`'s text when ``supports()`` raised instead of answering
SUPPORTS_RAISED = "supports() raised"


class StageError(Exception):
    """The backend raised, hung or crashed: the case's ERROR, with this message."""


class Interrupted(Exception):
    """The user stopped the run (Ctrl-C) while a backend call was in flight."""


def describe_exception(what: str, exc: BaseException) -> str:
    """``"forward raised SystemExit: 0"``-style text; names the BaseExceptions a backend must not raise."""
    name = type(exc).__name__
    text = str(exc)
    if isinstance(exc, SystemExit):
        return f"{what} raised SystemExit({exc.code!r}) (a backend must not exit the process)"
    if isinstance(exc, KeyboardInterrupt):
        return f"{what} raised KeyboardInterrupt (raised by the backend, not a Ctrl-C of the user)"
    return f"{what} raised {name}: {text}" if text else f"{what} raised {name}"


def supports_reason(backend: Any, case: GoldenCase) -> str | None:
    """The backend's own ``supports(case)`` asked in this thread, as a reason (None: supported).

    For the judge's planning (generated and explored cases, long-context chunks): whatever
    ``supports`` raises, ``SystemExit`` included, becomes the reason ``"supports() raised ..."``
    (that case is not judged; the run goes on); ``KeyboardInterrupt`` propagates (in this thread it
    is the user's Ctrl-C). A falsy answer other than True is ``"not supported"``.
    """
    try:
        verdict = backend.supports(case)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return describe_exception("supports()", exc)
    return None if verdict is True else (str(verdict) if verdict else "not supported")


@dataclass
class _Job:
    fn: Callable[[], Any]
    done: threading.Event
    value: Any = None
    error: BaseException | None = None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        try:
            job.value = job.fn()
        except BaseException as exc:
            job.error = exc
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

    def call(self, fn: Callable[[], Any], what: str, timeout: float | None, stop: StopFlag | None = None) -> Any:
        """``fn()`` in the thread; its value, or StageError (raised/timed out) or Interrupted (stop flag)."""
        if stop is not None and stop.is_set():
            raise Interrupted
        jobs = self._jobs or self._start()
        job = _Job(fn, threading.Event())
        jobs.put(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not job.done.wait(POLL_S):
            if stop is not None and stop.is_set():
                self._abandon()
                raise Interrupted
            if deadline is not None and time.monotonic() >= deadline:
                self._abandon()
                raise StageError(f"{TIMED_OUT} {timeout:g} s ({what} abandoned in a background thread; "
                                 "--isolate or --timeout run the backend in a process that is killed instead)")
        if job.error is not None:
            error, job.error = job.error, None
            if isinstance(error, StageError):
                raise error
            raise StageError(describe_exception(what, error)) from None
        return job.value

    def close(self) -> None:
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None


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
    """Call the backend's stage on fresh copies of the inputs; returns (raw result, inputs it modified).

    A case with a call form (a memory layout, in place, q with k) is called by
    :func:`conformance.calls.memory.call_in_form`, whose second item also holds sentences for
    memory written outside a view."""
    if case.form is not None:
        return call_in_form(backend, case)
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
