"""Run a backend in worker processes so that a segfault, an exit or a hang is an ERROR, not the end of the run.

Each worker is a spawned Python process that resolves the backend selector itself and
answers one request at a time over a pipe (``supports`` or the stage call, with in-memory
pickling of our own case records; golden files are never unpickled). It ignores SIGINT: the
user's Ctrl-C reaches the judge, which kills its workers; on Linux a worker is also killed
when the judge itself dies (``PR_SET_PDEATHSIG``), so no orphan keeps running. A worker that dies (a signal,
``os._exit``), misses the time limit or is in flight when the run is stopped is killed and
replaced; the case gets ERROR with the signal, the exit code or the time-out in its message.

Under isolation the judge never imports the backend itself: :func:`load_isolated` asks a
first worker for the backend's name and capabilities (an :class:`IsolatedBackend`), so a
backend that crashes at import is reported in one line ("died with signal SIGSEGV while
loading ...") instead of taking the judge down with it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import backend_methods, backend_stages
from ..backends.resolve import resolve_backend
from ..cases.case import GoldenCase
from ..interrupt import POLL_S, StopFlag
from .stage_call import TIMED_OUT, Interrupted, StageError, call_stage, describe_exception

__all__ = ["Worker", "WorkerStartError", "IsolatedBackend", "load_isolated", "START_TIMEOUT_S"]

#: how long a worker may take to import and build the backend (seconds; at least the call limit)
START_TIMEOUT_S = 120.0


class WorkerStartError(StageError):
    """The worker process could not load the backend (it raised, exited, crashed or hung at import)."""


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the judge dies (killed, crashed): no orphan keeps running.

    (Linux ties this to the thread that started the worker: the runner's job thread, which outlives
    every use of its workers and closes them before it ends.)"""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass  # not Linux: the pipe closing still ends an idle worker


def _serve(selector: str, conn: Any, parent_pid: int) -> None:
    _die_with_parent()
    if os.getppid() != parent_pid:  # the judge died before the request above took effect
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle

    try:
        backend = resolve_backend(selector)
    except BaseException as exc:
        conn.send(("fatal", describe_exception("loading the backend", exc)))
        return
    try:
        probe = getattr(backend, "library_reason", None)
        try:
            unavailable = probe() if callable(probe) else None
        except Exception as exc:
            unavailable = describe_exception("library_reason()", exc)
        conn.send(("ready", {"name": str(getattr(backend, "name", selector)), "capabilities": backend.capabilities,
                             "stages": sorted(backend_stages(backend)), "methods": sorted(backend_methods(backend)),
                             "library_reason": str(unavailable) if unavailable else None}))
    except Exception as exc:
        conn.send(("fatal", f"cannot send the backend's capabilities to the judge ({type(exc).__name__}: {exc})"))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        kind, case = request
        try:
            if kind == "supports":
                reply: Any = ("ok", backend.supports(case))
            else:
                reply = ("ok", call_stage(backend, case))
        except BaseException as exc:
            reply = ("raised", describe_exception("supports()" if kind == "supports" else case.stage, exc))
        try:
            conn.send(reply)
        except Exception as exc:
            conn.send(("raised", f"{case.stage} returned a value that cannot be sent to the judge "
                                 f"({type(exc).__name__}: {exc})"))


class Worker:
    """One backend process; a caller for the runner: ``supports(case)``, ``worker(case) -> (raw, modified)``."""

    def __init__(self, selector: str, timeout: float | None, stop: StopFlag | None = None,
                 start_timeout: float = START_TIMEOUT_S) -> None:
        self.selector, self.timeout, self.stop = selector, timeout, stop
        self.start_timeout = max(start_timeout, timeout or 0.0)
        self.proc: Any = None
        self.conn: Any = None
        self.info: dict[str, Any] | None = None

    def _wait(self, limit: float | None) -> bool:
        """Wait for a message up to ``limit`` s (None: forever); False on time-out; Interrupted on stop."""
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            if self.stop is not None and self.stop.is_set():
                self.kill()
                raise Interrupted
            step = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            try:
                if self.conn.poll(step):
                    return True
            except (OSError, EOFError):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def start(self) -> dict[str, Any]:
        """Start the process and load the backend; its name and capabilities. WorkerStartError on failure."""
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(self.selector, child, os.getpid()), daemon=True, name="roperef-backend")
        self.proc.start()
        child.close()
        self.conn = parent
        if not self._wait(self.start_timeout):
            self.kill()
            raise WorkerStartError(f"backend process did not load {self.selector!r} within {self.start_timeout:g} s (killed)")
        try:
            kind, payload = parent.recv()
        except (EOFError, OSError):
            message = self._death(" while loading " + repr(self.selector))
            self.kill()
            raise WorkerStartError(message) from None
        if kind != "ready":
            self.kill()
            raise WorkerStartError(f"backend process could not load {self.selector!r}: {payload}")
        self.info = payload
        return payload

    def kill(self) -> None:
        """Kill the process now (no-op when none is running)."""
        proc, self.proc, self.conn = self.proc, None, None
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(5)

    def _death(self, during: str = "") -> str:
        if self.proc is not None:
            self.proc.join(5)
        code = self.proc.exitcode if self.proc is not None else None
        if code is not None and code < 0:
            try:
                return f"backend process died with signal {signal.Signals(-code).name}{during}"
            except ValueError:
                return f"backend process died with signal {-code}{during}"
        return f"backend process exited (code {code}){during}"

    def _request(self, kind: str, case: GoldenCase) -> Any:
        if self.proc is None or not self.proc.is_alive():
            self.kill()
            self.start()
        try:
            self.conn.send((kind, case))
        except (BrokenPipeError, EOFError, OSError):
            pass  # the process died: the reply read below names how
        if not self._wait(self.timeout):
            self.kill()
            what = "supports()" if kind == "supports" else case.stage
            raise StageError(f"{TIMED_OUT} {self.timeout:g} s ({what}; backend process killed)")
        try:
            status, payload = self.conn.recv()
        except (EOFError, OSError):
            message = self._death()
            self.kill()
            raise StageError(message) from None
        if status == "raised":
            raise StageError(payload)
        return payload

    def supports(self, case: GoldenCase) -> Any:
        return self._request("supports", case)

    def __call__(self, case: GoldenCase) -> tuple[Any, list[str]]:
        return self._request("stage", case)

    def close(self) -> None:
        """Ask the process to exit, then make sure it has."""
        if self.conn is not None:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        if self.proc is not None:
            self.proc.join(2)
        self.kill()


@dataclass
class IsolatedBackend:
    """What the judge knows of a backend that lives in worker processes: its name, capabilities and
    ``library_reason()``, and its ``supports(case)``, asked of a worker (the case planner and explore
    ask it before the run, so that ``--isolate`` judges the same cases as a run in process).

    ``take_worker()`` hands the worker that loaded it to the runner once (it serves the first job slot);
    ``supports`` asked after that starts a worker of its own, ended by :meth:`close`.
    """

    name: str
    capabilities: Any
    selector: str
    implemented_stages: frozenset[str] = frozenset()  # the stage methods the real backend has
    implemented_methods: frozenset[str] = frozenset()  # its call-form methods (forward_, apply_qk, ...)
    spare: Worker | None = field(default=None, repr=False)
    unavailable: str | None = None  # the real backend's library_reason()
    timeout: float | None = None  # the time limit of the workers it starts
    stop: StopFlag | None = field(default=None, repr=False)
    _asker: Worker | None = field(default=None, repr=False)

    def take_worker(self) -> Worker | None:
        worker, self.spare = self.spare, None
        return worker

    def library_reason(self) -> str | None:
        return self.unavailable

    def supports(self, case: GoldenCase) -> Any:
        """The real backend's ``supports(case)``, answered by a worker process (StageError if it raised,
        crashed or timed out there)."""
        worker = self.spare
        if worker is None:
            if self._asker is None:
                self._asker = Worker(self.selector, self.timeout, self.stop)
            worker = self._asker
        return worker.supports(case)

    def close(self) -> None:
        """End the workers this object still holds (the spare one, and the one ``supports`` started)."""
        for worker in (self.spare, self._asker):
            if worker is not None:
                worker.close()
        self.spare = self._asker = None


def load_isolated(selector: str, timeout: float | None, stop: StopFlag | None = None) -> IsolatedBackend:
    """Load ``selector`` in a worker process (never in this one); WorkerStartError if it cannot be loaded."""
    worker = Worker(selector, timeout, stop)
    info = worker.start()
    return IsolatedBackend(name=info["name"], capabilities=info["capabilities"], selector=selector,
                           implemented_stages=frozenset(info.get("stages", ())),
                           implemented_methods=frozenset(info.get("methods", ())), spare=worker,
                           unavailable=info.get("library_reason"), timeout=timeout, stop=stop)
