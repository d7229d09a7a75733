"""Read JSON from files a user hands us, within limits, with one clear ``file: problem`` error.

Python's :func:`json.loads` trusts its input: 100000 nested brackets raise ``RecursionError``,
``1e400`` silently becomes ``inf``, a 5000-digit integer raises a ``ValueError`` about
``sys.set_int_max_str_digits``, a FIFO blocks ``open`` forever and a 10 GB file is read into
memory. :func:`load_json_file` checks, before and while parsing:

- the path names a regular file (a FIFO, a device or a directory is refused without opening it);
- its size is at most ``max_bytes``;
- it is UTF-8 and valid JSON (the message gives line and column);
- brackets nest at most ``max_depth`` deep;
- integer literals have at most ``max_int_digits`` digits;
- float literals are finite in float64 (``1e400`` is refused; the JSON extensions ``NaN`` and
  ``Infinity`` are read as such, or refused with ``allow_constants=False``).

Every problem raises :class:`JSONInputError` (a ``ValueError``) whose message is
``"<file>: <problem>"``; a missing file raises :class:`FileNotFoundError` with the same shape.
The file is read in bounded chunks (:mod:`roperef.bounded_read`), never with a buffer sized
to the limit. This module imports only that leaf from roperef, nothing from conformance.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bounded_read import read_at_most

__all__ = ["JSONInputError", "JSONLimits", "DEFAULT_LIMITS", "load_json_file", "loads_limited", "require_regular_file",
           "read_text_file"]


class JSONInputError(ValueError):
    """A JSON input breaks a rule; the message is ``"<file>: <problem>"``."""


@dataclass(frozen=True)
class JSONLimits:
    """Limits on a JSON input: file size (bytes), bracket nesting depth, digits of an integer literal."""

    max_bytes: int = 64 * 2**20
    max_depth: int = 64
    max_int_digits: int = 4300  # Python's own default for str -> int; a config's absurd number is refused by its key's rule


DEFAULT_LIMITS = JSONLimits()

#: a JSON string literal (used to blank strings out before counting brackets and digits)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line} column {column}"


def _blank_strings(text: str) -> str:
    """``text`` with the inside of every string literal replaced by spaces (same offsets)."""
    return _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)


def _check_depth(masked: str, text: str, limit: int, source: str) -> None:
    depth = 0
    for m in re.finditer(r"[\[\]{}]", masked):
        depth += 1 if m.group(0) in "[{" else -1
        if depth > limit:
            raise JSONInputError(f"{source}: brackets nest deeper than {limit} levels (at {_where(text, m.start())})")


def _check_integers(masked: str, text: str, limit: int, source: str) -> None:
    m = re.search(rf"(?<![\w.])\d{{{limit + 1},}}(?![\d.eE])", masked)
    if m:
        digits = len(m.group(0))
        raise JSONInputError(f"{source}: an integer of {digits} digits ({m.group(0)[:12]}...) at {_where(text, m.start())}; "
                             f"the limit is {limit} digits")


def loads_limited(text: str, *, source: str = "<string>", limits: JSONLimits = DEFAULT_LIMITS,
                  allow_constants: bool = True) -> Any:
    """Parse ``text`` as JSON within ``limits`` (see the module docstring); ``source`` names it in errors."""
    if len(text) > limits.max_bytes:
        raise JSONInputError(f"{source}: {len(text)} characters, more than the limit of {limits.max_bytes}")
    masked = _blank_strings(text)
    _check_depth(masked, text, limits.max_depth, source)
    _check_integers(masked, text, limits.max_int_digits, source)

    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise JSONInputError(f"{source}: the number {literal[:40]} overflows a float64 (largest finite 1.8e308)")
        return value

    def parse_constant(name: str) -> float:
        if not allow_constants:
            raise JSONInputError(f"{source}: {name} is not JSON (only finite numbers are allowed here)")
        return float(name)

    try:
        return json.loads(text, parse_float=parse_float, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:  # a backstop: the depth check runs first
        raise JSONInputError(f"{source}: brackets nest too deeply to parse") from None
    except ValueError as exc:  # e.g. an integer past sys.get_int_max_str_digits()
        if isinstance(exc, JSONInputError):
            raise
        raise JSONInputError(f"{source}: {exc}") from None


def require_regular_file(path: str | os.PathLike[str], what: str = "file") -> os.stat_result:
    """``os.stat`` of ``path``; :class:`JSONInputError` unless it is a regular file (never opens it).

    A FIFO or a device would block or stream forever when opened; a directory cannot be read.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: {what} not found") from None
    except OSError as exc:
        raise JSONInputError(f"{p}: cannot read this {what} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "not a regular file")
        raise JSONInputError(f"{p}: is {kind}, not a regular {what}")
    return st


def read_text_file(path: str | os.PathLike[str], *, what: str = "file", max_bytes: int = DEFAULT_LIMITS.max_bytes) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``max_bytes``); :class:`JSONInputError`
    (``"<file>: <problem>"``) for a FIFO, a device, a directory, a file too large or not UTF-8,
    FileNotFoundError when it does not exist."""
    p = Path(path)
    st = require_regular_file(p, what)
    if st.st_size > max_bytes:
        raise JSONInputError(f"{p}: {st.st_size} bytes, more than the limit of {max_bytes} bytes for a {what}")
    try:
        with open(p, "rb") as fh:
            raw = read_at_most(fh, max_bytes)
    except OSError as exc:
        raise JSONInputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        raise JSONInputError(f"{p}: more than the limit of {max_bytes} bytes for a {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONInputError(f"{p}: not UTF-8 text (byte {exc.start})") from None


def load_json_file(path: str | os.PathLike[str], *, limits: JSONLimits = DEFAULT_LIMITS,
                   allow_constants: bool = True, what: str = "file") -> Any:
    """Read and parse the JSON file ``path`` within ``limits`` (see the module docstring)."""
    text = read_text_file(path, what=f"JSON {what}", max_bytes=limits.max_bytes)
    return loads_limited(text, source=str(Path(path)), limits=limits, allow_constants=allow_constants)
