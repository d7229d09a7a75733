"""Writes that leave the old file (or directory) or the new one, never a half-written or 0-byte one.

- :func:`write_bytes_atomic`: a temporary file beside the target, written and fsynced, then
  ``os.replace``; on any failure (a full disk, a read-only directory, Ctrl-C) the temporary
  file is removed and the target is untouched. A target that exists but is not a regular
  file (a FIFO, a device, a directory) is refused, never opened: opening a FIFO blocks.
- :func:`swap_in_directory`: replace a directory by a fully built one beside it. On Linux
  ``renameat2(RENAME_EXCHANGE)`` swaps the two names in one step; elsewhere (or on a file
  system without it) the old directory is renamed aside, the new one renamed in, with Ctrl-C
  deferred between the two renames; the old contents are removed afterwards.
- :func:`sigint_deferred`: a context in which Ctrl-C and SIGTERM are remembered and acted on at its end.

Temporary names are ``.NAME.XXXXXXXX.tmp`` with ``NAME`` cut so that the whole name fits the file
system's ``NAME_MAX`` (255 bytes on Linux): a report may have a 255-byte name (:func:`temp_prefix`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import secrets
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..paths import kind_of

__all__ = ["NotARegularFile", "require_writable_target", "write_bytes_atomic", "write_text_atomic",
           "swap_in_directory", "sigint_deferred", "fsync_directory", "temp_prefix", "name_max"]


class NotARegularFile(OSError):
    """The output path exists and is a FIFO, a device, a socket or a directory."""

    def __str__(self) -> str:
        return str(self.strerror)


def require_writable_target(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path; :class:`NotARegularFile` if it exists and is not a regular file."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return p
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(errno.EINVAL, f"{p} is {kind_of(st.st_mode)}, not a regular file; refusing to write there")
    return p


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """fsync a directory (so a rename in it is durable); ignored where directories cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def name_max(directory: str | os.PathLike[str]) -> int:
    """The longest file name (bytes) ``directory``'s file system allows (255 where it cannot be asked)."""
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def temp_prefix(name: str, directory: str | os.PathLike[str], extra: int) -> str:
    """``.NAME.`` with ``NAME`` cut (on a character boundary) so that the prefix plus ``extra`` more bytes
    fit ``NAME_MAX`` in ``directory``."""
    budget = max(name_max(directory) - extra - 2, 8)
    raw = os.fsencode(name)
    if len(raw) > budget:
        raw = raw[:budget]
        while raw:
            try:
                raw.decode("utf-8")
                break
            except UnicodeDecodeError:
                raw = raw[:-1]
    return f".{os.fsdecode(raw)}."


def _create_temp(parent: Path, name: str) -> tuple[int, str]:
    """A new file ``.NAME.XXXXXXXX.tmp`` in ``parent`` (``NAME`` cut to fit ``NAME_MAX``), mode 0666 less
    the umask (as a plain ``open`` gives)."""
    prefix = temp_prefix(name, parent, len(".XXXXXXXX.tmp") - 1)
    for _ in range(100):
        tmp = str(parent / f"{prefix}{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(parent))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace`` (see the module docstring)."""
    p = require_writable_target(path)
    parent = p.parent if str(p.parent) else Path(".")
    fd, tmp = _create_temp(parent, p.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` encoded as UTF-8."""
    write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM for the duration of the block, then act on them as their previous
    handlers would (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous: dict[int, Any] = {}

    def remember(signum: int, frame: Any) -> None:
        caught.append(signum)

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.getsignal(sig)
            signal.signal(sig, remember)
    except (ValueError, OSError):  # not settable here: run unprotected
        for signum, old in previous.items():
            if old is not None:
                signal.signal(signum, old)
        yield
        return
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        for caught_signum in dict.fromkeys(caught):
            old = previous.get(caught_signum)
            if callable(old):
                old(caught_signum, None)
            elif old == signal.SIG_IGN:
                continue
            elif caught_signum == signal.SIGINT:
                raise KeyboardInterrupt
            else:
                signal.raise_signal(caught_signum)  # the default action of SIGTERM, now that the block is done


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Atomically exchange the names ``a`` and ``b`` (Linux renameat2); False where unavailable."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, f"cannot swap {b} into place: {os.strerror(err)}")


def swap_in_directory(staging: Path, target: Path) -> None:
    """Make the fully written directory ``staging`` (a sibling of ``target``) be ``target``.

    ``target`` may not exist (a plain rename). Its old contents are deleted after the swap.
    Either the old or the new directory is at ``target`` at every moment except, on systems
    without ``renameat2``, between two renames done with Ctrl-C deferred.
    """
    parent = target.parent
    if not os.path.lexists(target):
        os.rename(staging, target)
        fsync_directory(parent)
        return
    if _renameat2_exchange(staging, target):
        fsync_directory(parent)
        shutil.rmtree(staging, ignore_errors=True)  # staging now holds the old set
        return
    aside = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name, parent, len("old-XXXXXXXX")) + "old-", dir=parent))
    os.rmdir(aside)
    with sigint_deferred():
        os.rename(target, aside)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(aside, target)
            raise
    fsync_directory(parent)
    shutil.rmtree(aside, ignore_errors=True)
