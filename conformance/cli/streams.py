"""The command's own stdout and stderr: writes that never raise, never carry raw control characters,
and remember how they failed.

:func:`guarded_streams` puts a :class:`GuardedStream` in place of ``sys.stdout`` and
``sys.stderr`` for the whole command (:func:`conformance.cli.main.main`):

- every write escapes control characters (ESC, CR, BEL, ...; newlines and tabs kept) and lone
  surrogates (an undecodable file name): nothing printed can repaint the terminal or fail to
  encode. The progress bar, the one writer that needs ``\\r``, uses :meth:`GuardedStream.write_raw`;
- a write or flush that fails (a reader that closed the pipe, ``> /dev/full``, a stream closed
  or never opened: ``>&-``) is remembered and the stream goes quiet: the report files, written
  before the console, are already complete. The file descriptor is pointed at ``/dev/null`` so
  that the interpreter's own flush at exit cannot fail again (exit 120, "Exception ignored");
- :func:`output_exit_code` decides the exit code: a closed pipe (``| head``) keeps the command's
  own code; any other console failure turns a success (0) into ``OUTPUT_ERROR`` (6) and leaves
  every other code as it is (a failed run still exits 1).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..exit_codes import ExitCode
from ..untrusted_text import escape_controls

__all__ = ["GuardedStream", "guarded_streams", "output_exit_code"]


class GuardedStream(io.TextIOBase):
    """A text stream over ``raw`` (possibly None: a closed descriptor) whose writes never raise."""

    def __init__(self, raw: Any, name: str) -> None:
        super().__init__()
        self.raw, self.name = raw, name
        self.failure: BaseException | None = None
        try:  # the descriptor, to reopen it if someone closes the Python stream over it
            self.fd: int | None = int(raw.fileno()) if raw is not None else None
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            self.fd = None

    @property
    def broken_pipe(self) -> bool:
        return isinstance(self.failure, BrokenPipeError) or getattr(self.failure, "errno", None) == errno.EPIPE

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.raw, "encoding", None) or "utf-8")

    def _fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        if self.fd is None:
            return
        try:  # the interpreter flushes sys.__stdout__ at exit: let that land in /dev/null, not fail again
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.fd)
            os.close(null)
        except OSError:
            pass

    def _write(self, text: str) -> int:
        if self.failure is not None:
            return len(text)
        if self.raw is None:
            self._fail(OSError(errno.EBADF, f"{self.name} is closed"))
            return len(text)
        try:
            try:
                self._put(text)
            except ValueError:  # I/O operation on a closed file: a backend closed sys.stdout; its descriptor lives
                if self.fd is None or getattr(self.raw, "closed", False) is not True:
                    raise
                self.raw = open(self.fd, "w", encoding=self.encoding, errors="backslashreplace", closefd=False)
                self._put(text)
        except (OSError, ValueError) as exc:
            self._fail(exc)
        return len(text)

    def _put(self, text: str) -> None:
        try:
            self.raw.write(text)
        except UnicodeEncodeError:
            self.raw.write(text.encode(self.encoding, "backslashreplace").decode(self.encoding, "replace"))

    def write(self, text: str) -> int:
        return self._write(escape_controls(str(text)))

    def write_raw(self, text: str) -> int:
        """Write the judge's own control characters (the progress bar's ``\\r``)."""
        return self._write(text)

    def flush(self) -> None:
        if self.failure is not None or self.raw is None or getattr(self.raw, "closed", False) is True:
            return
        try:
            self.raw.flush()
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def isatty(self) -> bool:
        try:
            return bool(self.raw is not None and self.failure is None and self.raw.isatty())
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.raw is None:
            raise io.UnsupportedOperation("closed stream")
        return int(self.raw.fileno())

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        """Kept open: a backend that closes ``sys.stdout`` does not close the command's output."""


@contextlib.contextmanager
def guarded_streams() -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """``sys.stdout`` and ``sys.stderr`` guarded for the block, flushed and put back at its end."""
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(sys.stdout, "stdout"), GuardedStream(sys.stderr, "stderr")
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved


def output_exit_code(code: int, *streams: GuardedStream) -> int:
    """``code``, or ``OUTPUT_ERROR`` when it is 0 and a stream failed other than by a closed pipe."""
    lost = [s for s in streams if s.failure is not None and not s.broken_pipe]
    return int(ExitCode.OUTPUT_ERROR) if code == ExitCode.OK and lost else int(code)
