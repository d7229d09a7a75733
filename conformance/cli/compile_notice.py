"""One line on stderr for each Numba compilation during a command, so that a slow first run is never silent.

Numba compiles a kernel the first time it is called with a new signature on a machine, then
loads it from its on-disk cache. A listener on Numba's documented event API
(``numba.core.event``, event ``numba:compile``, which fires only when Numba really compiles, never
on a cache hit) writes, for each outermost compilation (the kernel a caller called, not the
functions it calls), one line::

    roperef: compiling Numba kernel rotate_serial (float32 input) -- first run on this machine, cached afterwards ... 0.9 s

The start of the line is written and flushed when compilation starts, the time when it ends.
Numba is imported when the notice is installed (``numba`` is a dependency of roperef; the
import is function-local so that commands that stop before judging do not pay for it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["compile_notice", "describe"]

PREFIX = "roperef: compiling Numba kernel"


def describe(data: Any) -> str:
    """``name (dtype input)`` from a ``numba:compile`` event's data: the function's name, its first array's dtype."""
    data = data if isinstance(data, dict) else {}
    name = getattr(getattr(data.get("dispatcher"), "py_func", None), "__name__", "kernel")
    first = next((a for a in data.get("args") or () if hasattr(a, "dtype")), None)
    return f"{name} ({first.dtype} input)" if first is not None else str(name)


class _Lines:
    """Nesting depth per thread; a line for each outermost compilation."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.restart = "\r" if getattr(stream, "isatty", lambda: False)() else ""  # over a terminal's progress bar
        self.local = threading.local()
        self.lock = threading.Lock()

    def start(self, data: Any) -> None:
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if depth == 0:
            self.local.t0 = time.perf_counter()
            with self.lock:
                self.stream.write(f"{self.restart}{PREFIX} {describe(data)} -- first run on this machine, cached afterwards ...")
                self.stream.flush()

    def end(self) -> None:
        self.local.depth = max(getattr(self.local, "depth", 1) - 1, 0)
        if self.local.depth == 0:
            with self.lock:
                self.stream.write(f" {time.perf_counter() - self.local.t0:.1f} s\n")
                self.stream.flush()


@contextmanager
def compile_notice(stream: TextIO) -> Iterator[None]:
    """Inside the block, every Numba compilation (in any thread of this process) writes its line to ``stream``."""
    from numba.core import event  # lazy: imports numba (a dependency; only commands that judge pay for it)

    lines = _Lines(stream)

    class Notice(event.Listener):
        def on_start(self, ev: Any) -> None:
            lines.start(ev.data)

        def on_end(self, ev: Any) -> None:
            lines.end()

    with event.install_listener("numba:compile", Notice()):
        yield
