"""What is wrong with a path the user named, in words that say what the file system said.

``Path.exists()`` answers False for a missing file, a dangling symlink, a symlink loop and a
directory it may not search alike; a message built on it calls a symlink loop "does not exist".
:func:`path_problem` asks ``os.stat`` and names each case.

A leaf module: it imports nothing of roperef or conformance.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["path_problem", "kind_of"]


def kind_of(mode: int) -> str:
    """``a directory``, ``a regular file``, ``a FIFO (named pipe)``, ``a socket``, ``a device``."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def path_problem(path: str | os.PathLike[str], want: str | None = None) -> str | None:
    """None when ``path`` exists (and, with ``want`` ``"dir"`` or ``"file"``, is a directory or a regular
    file); else the problem: ``does not exist``, ``is a symlink to X, which does not exist``, ``is a
    symlink loop``, ``is not a directory (it is a regular file)``, ``cannot be read (Permission denied)``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            try:
                return f"is a symlink to {os.readlink(path)}, which does not exist"
            except OSError:
                return "is a dangling symlink"
        return "does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop (too many levels of symbolic links)"
        if exc.errno == errno.ENOTDIR:
            return "does not exist (a component of the path is not a directory)"
        if exc.errno == errno.ENAMETOOLONG:
            return "has a name too long for the file system"
        return f"cannot be read ({exc.strerror or exc})"
    except ValueError as exc:  # an embedded NUL byte
        return f"is not a valid path ({exc})"
    if want == "dir" and not stat.S_ISDIR(st.st_mode):
        return f"is not a directory (it is {kind_of(st.st_mode)})"
    if want == "file" and not stat.S_ISREG(st.st_mode):
        return f"is not a regular file (it is {kind_of(st.st_mode)})"
    return None
