"""Run a backend in worker processes so that a segfault or a hang is an ERROR, not the end of the run.

Each worker is a spawned Python process that resolves the backend selector itself and
answers one case at a time over a pipe (in-memory pickling of our own case records; golden
files are never unpickled). A worker that dies (signal) or misses the timeout is killed
and replaced; the case gets ERROR with the signal or the timeout in its message.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import traceback
from typing import Any

from .case import GoldenCase

__all__ = ["WorkerPool", "Worker"]


def _serve(selector: str, conn: Any) -> None:
    from .backends.resolve import resolve_backend
    from .runner import call_stage

    try:
        backend = resolve_backend(selector)
    except Exception as exc:  # noqa: BLE001
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        if case is None:
            return
        try:
            raw, modified = call_stage(backend, case)
            conn.send(("ok", (raw, modified)))
        except Exception as exc:  # noqa: BLE001
            conn.send(("raised", f"{case.stage} raised {type(exc).__name__}: {exc}"))
        except BaseException:  # noqa: BLE001
            conn.send(("raised", traceback.format_exc(limit=1)))


class Worker:
    """One backend process; callable like the in-process caller: ``worker(case) -> (raw, modified)``."""

    def __init__(self, selector: str, timeout: float | None, start_timeout: float = 120.0) -> None:
        self.selector, self.timeout, self.start_timeout = selector, timeout, start_timeout
        self.proc: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        from .runner import StageError

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(self.selector, child), daemon=True, name="roperef-backend")
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(self.start_timeout):
            self._kill()
            raise StageError(f"backend process did not start within {self.start_timeout:g} s")
        kind, payload = parent.recv()
        if kind != "ready":
            self._kill()
            raise StageError(f"backend process could not load {self.selector!r}: {payload}")

    def _kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(5)
        self.proc = None
        self.conn = None

    def _death(self) -> str:
        code = self.proc.exitcode if self.proc is not None else None
        if code is not None and code < 0:
            try:
                return f"backend process died with signal {signal.Signals(-code).name}"
            except ValueError:
                return f"backend process died with signal {-code}"
        return f"backend process exited (code {code})"

    def __call__(self, case: GoldenCase) -> tuple[Any, list[str]]:
        from .runner import StageError

        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send(case)
            ready = self.conn.poll(self.timeout) if self.timeout else self.conn.poll(None)
        except (BrokenPipeError, EOFError, OSError):
            ready = True
        if not ready:
            self._kill()
            raise StageError(f"timed out after {self.timeout:g} s (backend process killed)")
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5)
            message = self._death()
            self._kill()
            raise StageError(message) from None
        if kind == "raised":
            raise StageError(payload)
        return payload

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        if self.proc is not None:
            self.proc.join(2)
        self._kill()


class WorkerPool:
    """``jobs`` workers; threads take one with :meth:`acquire` and give it back with :meth:`release`."""

    def __init__(self, selector: str, jobs: int, timeout: float | None) -> None:
        self.workers = [Worker(selector, timeout) for _ in range(max(1, jobs))]
        self.free: "queue.Queue[Worker]" = queue.Queue()
        for w in self.workers:
            self.free.put(w)

    def acquire(self) -> Worker:
        return self.free.get()

    def release(self, worker: Worker) -> None:
        self.free.put(worker)

    def close(self) -> None:
        for w in self.workers:
            w.close()
