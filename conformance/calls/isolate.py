"""Run a backend in worker processes so that a segfault, an exit or a hang is an ERROR, not the end of the run.

Each worker is a spawned Python process that resolves the backend selector itself and
answers one request at a time over a pipe (``supports`` or the stage call). Requests are our
own case records, pickled in memory; the replies are never unpickled: a worker is the backend's
process, and whatever it sends is parsed as data (:mod:`conformance.calls.wire`: a JSON header and
``.npy`` blobs checked before anything is allocated; golden files are never unpickled either).
The worker turns the stage's result into plain arrays itself (``__array__`` is backend code)
and reports what the backend changed in the copies it was handed.

The judge waits for a reply under the call's time limit, asking the OS whether bytes arrived (a
judge thread kept from running cannot make a punctual worker late), then reads it in a reader
thread: a worker that hangs, or sends half a message and stops, is killed when its limit passes. It ignores SIGINT: the
user's Ctrl-C reaches the judge, which kills its workers; on Linux a worker is also killed
when the judge itself dies (``PR_SET_PDEATHSIG``), so no orphan keeps running. A worker that dies
(a signal, ``os._exit``), misses the time limit, sends a reply the judge cannot read or is in
flight when the run is stopped is killed and replaced; the case gets ERROR with the signal, the
exit code, the time-out or the malformed reply in its message.

Under isolation the judge never imports the backend itself: :func:`load_isolated` asks a
first worker for the backend's name and capabilities (an :class:`IsolatedBackend`), so a
backend that crashes at import is reported in one line ("died with signal SIGSEGV while
loading ...") instead of taking the judge down with it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Capabilities, Declined, backend_methods, backend_stages
from ..backends.resolve import resolve_backend
from ..cases.case import GoldenCase
from ..interrupt import POLL_S, StopFlag
from ..untrusted_text import clip
from .errors import TIMED_OUT, Interrupted, StageError, TimedOut, describe_exception
from .stage_call import CallThread, ask_supports, call_stage
from .wire import MAX_MESSAGE_BYTES, Message, WireError, decode, encode

__all__ = ["Worker", "WorkerStartError", "IsolatedBackend", "load_isolated", "START_TIMEOUT_S", "capabilities_from"]

#: how long a worker may take to import and build the backend (seconds; at least the call limit)
START_TIMEOUT_S = 120.0
#: how long reading a reply may take once its first bytes arrived (at least the call limit)
READ_LIMIT_S = 30.0


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


def _send(conn: Any, seq: int, kind: str, payload: dict[str, Any], arrays: dict[str, Any] | None = None) -> None:
    try:
        data = encode(Message(seq, kind, payload, dict(arrays or {})))
    except (WireError, ValueError, TypeError) as exc:
        data = encode(Message(seq, "raised", {"message": clip(f"the result cannot be sent to the judge ({exc})")}))
    conn.send_bytes(data)


def _answer(backend: Any, kind: str, case: GoldenCase) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(reply kind, payload, arrays) for one request; backend code runs here, in the worker."""
    try:
        if kind == "supports":
            verdict, changed = ask_supports(backend, case)
            return "supports", {"verdict": verdict, "declined": isinstance(verdict, Declined), "changed": changed}, {}
        outputs, modified = call_stage(backend, case)
        if isinstance(outputs, list):  # a call form's parts: arrays named "label/output"
            arrays = {f"{label}/{name}": arr for label, out in outputs for name, arr in out.items()}
            return "stage", {"modified": modified, "parts": [label for label, _ in outputs]}, arrays
        return "stage", {"modified": modified}, outputs
    except StageError as exc:
        return "raised", {"message": clip(str(exc))}, {}
    except BaseException as exc:
        return "raised", {"message": describe_exception("supports()" if kind == "supports" else case.stage, exc)}, {}


def _serve(selector: str, conn: Any, parent_pid: int) -> None:
    _die_with_parent()
    if os.getppid() != parent_pid:  # the judge died before the request above took effect
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle

    try:
        backend = resolve_backend(selector)
    except BaseException as exc:
        _send(conn, 0, "fatal", {"message": describe_exception("loading the backend", exc)})
        return
    try:
        probe = getattr(backend, "library_reason", None)
        try:
            unavailable = probe() if callable(probe) else None
        except Exception as exc:
            unavailable = describe_exception("library_reason()", exc)
        info = {"name": clip(str(getattr(backend, "name", selector))), "capabilities": backend.capabilities.to_dict(),
                "stages": sorted(backend_stages(backend)), "methods": sorted(backend_methods(backend)),
                "library_reason": clip(str(unavailable)) if unavailable else None}
    except BaseException as exc:
        _send(conn, 0, "fatal", {"message": describe_exception("reading the backend's name and capabilities", exc)})
        return
    _send(conn, 0, "ready", info)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        seq, kind, case = request
        _send(conn, seq, *_answer(backend, kind, case))


def capabilities_from(data: Any) -> Capabilities:
    """A :class:`Capabilities` from its ``to_dict()`` sent by a worker (JSON values only; lists become frozensets)."""
    if not isinstance(data, dict):
        raise WireError("capabilities: not an object")
    known = {f.name: f for f in dataclasses.fields(Capabilities)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        f = known.get(key)
        if f is None:
            raise WireError(f"capabilities: unknown field {clip(str(key), 80)!r}")
        if isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                raise WireError(f"capabilities.{key}: a list of strings expected")
            values[key] = frozenset(value)
        elif isinstance(value, (str, bool, int, float)) or value is None:
            values[key] = value
        else:
            raise WireError(f"capabilities.{key}: {type(value).__name__} is not a capability value")
    try:
        return Capabilities(**values)
    except (TypeError, ValueError) as exc:
        raise WireError(f"capabilities: {exc}") from None


class Worker:
    """One backend process; a caller for the runner: ``supports(case)``, ``worker(case) -> (outputs, modified)``."""

    def __init__(self, selector: str, timeout: float | None, stop: StopFlag | None = None,
                 start_timeout: float = START_TIMEOUT_S) -> None:
        self.selector, self.timeout, self.stop = selector, timeout, stop
        self.start_timeout = max(start_timeout, timeout or 0.0)
        self.proc: Any = None
        self.conn: Any = None
        self.info: dict[str, Any] | None = None
        self.seq = 0
        self._reader = CallThread("roperef-worker-reader")

    def _wait(self, limit: float | None) -> bool:
        """Wait for the first bytes of a message up to ``limit`` s (None: forever), asking the OS (``poll``),
        so that a judge thread kept from running (another thread compiling, holding the GIL) does not make a
        punctual worker late; False on time-out; Interrupted on stop."""
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

    def _receive(self, limit: float | None, on_timeout: str) -> bytes | BaseException:
        """The next message's bytes: its start within ``limit`` s, then the whole of it read by the reader
        thread within :data:`READ_LIMIT_S` more (a worker that sends half a message and stops is killed);
        the exception if the pipe broke; TimedOut on time-out and Interrupted on stop, after killing the process."""
        if not self._wait(limit):
            self.kill()
            raise TimedOut(on_timeout)
        conn = self.conn

        def read() -> bytes | BaseException:
            try:
                return bytes(conn.recv_bytes(MAX_MESSAGE_BYTES))
            except (EOFError, OSError) as exc:
                return exc

        try:
            return self._reader.call(read, "reading the backend process's reply", max(limit or 0.0, READ_LIMIT_S), self.stop,
                                     on_timeout=f"the backend process started a reply and did not finish it within "
                                                f"{max(limit or 0.0, READ_LIMIT_S):g} s (killed)")
        except (TimedOut, Interrupted):
            self.kill()
            raise

    def start(self) -> dict[str, Any]:
        """Start the process and load the backend; its name and capabilities. WorkerStartError on failure."""
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(self.selector, child, os.getpid()), daemon=True, name="roperef-backend")
        self.proc.start()
        child.close()
        self.conn = parent
        try:
            got = self._receive(self.start_timeout, f"backend process did not load {self.selector!r} within "
                                                    f"{self.start_timeout:g} s (killed)")
        except TimedOut as exc:
            raise WorkerStartError(str(exc)) from None
        if isinstance(got, BaseException):
            message = self._death(" while loading " + repr(self.selector))
            self.kill()
            raise WorkerStartError(message)
        try:
            reply = decode(got)
            if reply.kind == "fatal":
                raise WorkerStartError(f"backend process could not load {self.selector!r}: "
                                       f"{clip(str(reply.payload.get('message')))}")
            if reply.kind != "ready":
                raise WireError(f"expected the backend's description, got a {reply.kind!r} message")
            info = self._info(reply.payload)
        except WireError as exc:
            self.kill()
            raise WorkerStartError(f"backend process sent a description the judge cannot read ({exc})") from None
        except WorkerStartError:
            self.kill()
            raise
        self.info = info
        return info

    @staticmethod
    def _info(payload: dict[str, Any]) -> dict[str, Any]:
        name, stages = payload.get("name"), payload.get("stages")
        if not isinstance(name, str) or not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
            raise WireError("the name or stages of the backend are malformed")
        reason = payload.get("library_reason")
        if reason is not None and not isinstance(reason, str):
            raise WireError("the backend's library_reason() is malformed")
        methods = payload.get("methods", [])
        if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
            raise WireError("the backend's method names are malformed")
        return {"name": name, "capabilities": capabilities_from(payload.get("capabilities")), "stages": stages,
                "methods": methods, "library_reason": reason}

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

    def _request(self, kind: str, case: GoldenCase) -> Message:
        if self.proc is None or not self.proc.is_alive():
            self.kill()
            self.start()
        self.seq += 1
        try:
            self.conn.send((self.seq, kind, case))
        except (BrokenPipeError, EOFError, OSError):
            pass  # the process died: the reply read below names how
        what = "supports()" if kind == "supports" else case.stage
        got = self._receive(self.timeout, f"{TIMED_OUT} {self.timeout:g} s ({what}; backend process killed)")
        if isinstance(got, BaseException):
            if isinstance(got, OSError) and "bad message length" in str(got):
                self.kill()
                raise StageError(f"the backend process sent a reply larger than {MAX_MESSAGE_BYTES} bytes (killed)")
            message = self._death()
            self.kill()
            raise StageError(message)
        try:
            reply = decode(got)
            if reply.seq != self.seq:
                raise WireError(f"it answers request {reply.seq}, not request {self.seq}")
        except WireError as exc:
            self.kill()
            raise StageError(f"the backend process sent a reply the judge cannot read ({exc}); killed") from None
        if reply.kind == "raised":
            raise StageError(clip(str(reply.payload.get("message"))))
        return reply

    def supports(self, case: GoldenCase) -> tuple[Any, list[str]]:
        """(True or the reason, what ``supports`` changed in the copy of the case it was handed)."""
        reply = self._request("supports", case)
        verdict, changed = reply.payload.get("verdict"), reply.payload.get("changed")
        if reply.kind != "supports" or not (verdict is True or isinstance(verdict, str)) or not isinstance(changed, list):
            self.kill()
            raise StageError("the backend process sent a malformed answer to supports() (killed)")
        if isinstance(verdict, str):
            verdict = clip(verdict)
            verdict = Declined(verdict) if reply.payload.get("declined") is True else verdict
        return verdict, [clip(str(c), 200) for c in changed]

    def __call__(self, case: GoldenCase) -> tuple[Any, list[str]]:
        """(the stage's outputs, or a call form's ``[(part, outputs)]``, what the backend modified)."""
        reply = self._request("stage", case)
        modified, parts = reply.payload.get("modified"), reply.payload.get("parts")
        if (reply.kind != "stage" or not isinstance(modified, list) or not all(isinstance(m, str) for m in modified)
                or not (parts is None or (isinstance(parts, list) and all(isinstance(p, str) for p in parts)))):
            self.kill()
            raise StageError(f"the backend process sent a malformed {case.stage} result (killed)")
        modified = [clip(m, 200) for m in modified]
        if parts is None:
            return reply.arrays, modified
        split = [k.split("/", 1) for k in reply.arrays]
        if any(len(pair) != 2 or pair[0] not in parts for pair in split) or len(set(parts)) != len(parts):
            self.kill()
            raise StageError(f"the backend process sent a malformed {case.stage} result (killed): "
                             "array names that are not part/output")
        grouped = [(label, {k.split("/", 1)[1]: v for k, v in reply.arrays.items() if k.split("/", 1)[0] == label})
                   for label in parts]
        return grouped, modified

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
        self._reader.close()


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
        crashed or timed out there; a reason saying so if it changed the copy of the case it was handed)."""
        worker = self.spare
        if worker is None:
            if self._asker is None:
                self._asker = Worker(self.selector, self.timeout, self.stop)
            worker = self._asker
        verdict, changed = worker.supports(case)
        if changed:
            return f"supports() modified the case it was handed ({', '.join(changed)})"
        return verdict

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
