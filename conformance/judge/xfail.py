"""Expected-failure files: the backend owner's list of known failures, with reasons.

Format (plain text, one entry per line; ``#`` starts a comment line; blank lines ignored)::

    # pattern                                        reason (required)
    forward/yarn/half/bfloat16/b2-s64-h4-d128/long-odd  bf16 tables drift at long positions (issue 12)
    mrope/*                                            mRoPE not implemented yet

A pattern is a case id, or a glob (``*``, ``?``, ``[...]``) matched against the whole id.
A matching FAIL/ERROR becomes XFAIL, a matching PASS becomes XPASS. Entries that match no
selected case, or whose every match passed, are reported as stale.

The built-in backends' files are ``conformance/backends/xfail/<backend name>.txt``, named exactly
after the backend (``mlx-lm.txt`` for ``mlx-lm``): :func:`xfail_path` is the one place that knows it.
Every route that judges a built-in backend (``roperef check``, ``assert_rope_conforms``, the pytest
plugin) applies its file by default (:func:`shipped_xfail`); ``--no-xfail`` / ``xfail=False`` /
``--rope-no-xfail`` judge without it, ``--xfail FILE`` replaces it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from roperef.errors import bad
from roperef.json_input import JSONInputError, read_text_file

from ..backends.names import BUILTIN_BACKENDS

__all__ = ["XfailEntry", "XfailList", "load_xfail", "parse_xfail", "xfail_path", "XFAIL_DIR", "builtin_name", "shipped_xfail",
           "choose_xfail"]

#: the folder of the built-in backends' expected-failure files
XFAIL_DIR = Path(__file__).resolve().parents[1] / "backends" / "xfail"


def xfail_path(backend: str) -> Path:
    """The expected-failure file of built-in backend ``backend``: ``XFAIL_DIR / f"{backend}.txt"``.

    Named exactly after the backend, no other spelling tried; the file exists only for a backend
    with known failures. ``ValueError`` (``backend=...: rule``) for a name that is not built in.
    """
    if backend not in BUILTIN_BACKENDS:
        bad("backend", backend, f"not a built-in backend; known: {', '.join(BUILTIN_BACKENDS)}")
    return XFAIL_DIR / f"{backend}.txt"


@dataclass(frozen=True)
class XfailEntry:
    pattern: str
    reason: str
    line: int

    def matches(self, case_id: str) -> bool:
        if any(ch in self.pattern for ch in "*?["):
            return fnmatchcase(case_id, self.pattern)
        return case_id == self.pattern


@dataclass(frozen=True)
class XfailList:
    entries: tuple[XfailEntry, ...]
    source: str = "<xfail>"

    def entry_for(self, case_id: str) -> XfailEntry | None:
        for e in self.entries:
            if e.matches(case_id):
                return e
        return None

    def reason_for(self, case_id: str) -> str | None:
        e = self.entry_for(case_id)
        return None if e is None else e.reason

    def stale(self, results: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
        """Entries that matched nothing, or whose matches all passed (status XPASS)."""
        out = []
        for e in self.entries:
            hits = [status for cid, status in results if self.entry_for(cid) is e]
            if not hits:
                out.append({"pattern": e.pattern, "reason": e.reason, "line": str(e.line), "why": "matches no selected case"})
            elif all(s == "XPASS" for s in hits):
                out.append({"pattern": e.pattern, "reason": e.reason, "line": str(e.line), "why": f"all {len(hits)} matching case(s) pass"})
        return out


def parse_xfail(text: str, source: str = "<xfail>") -> XfailList:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        reason = parts[1].strip().lstrip("#").strip() if len(parts) == 2 else ""
        if not reason:
            bad(f"{source}:{number}", line, "each entry needs a pattern and a reason: 'PATTERN  reason text'")
        entries.append(XfailEntry(parts[0], reason, number))
    return XfailList(tuple(entries), source)


def load_xfail(path: str | os.PathLike[str]) -> XfailList:
    p = Path(path)
    try:
        text = read_text_file(p, what="expected-failure file", max_bytes=16 * 2**20)
    except FileNotFoundError:
        bad("--xfail", str(p), "file not found")
    except JSONInputError as exc:  # a FIFO, a directory, too large, not UTF-8
        bad("--xfail", str(p), str(exc).removeprefix(f"{p}: "))
    return parse_xfail(text, str(p))


def builtin_name(backend: Any, selector: Any = None) -> str | None:
    """The built-in short name ``backend`` was selected by, or None for any other backend.

    ``selector`` a short name of :data:`~conformance.backends.names.BUILTIN_BACKENDS` is that name;
    otherwise a backend object counts as built in when its ``name`` is a short name *and* it is an
    instance of the very class that name selects (a user class that merely calls itself ``hf`` is not)."""
    if isinstance(selector, str) and selector in BUILTIN_BACKENDS:
        return selector
    name = getattr(backend, "name", None)
    if not isinstance(name, str) or name not in BUILTIN_BACKENDS:
        return None
    module, _, attr = BUILTIN_BACKENDS[name].partition(":")
    cls = type(backend)
    return name if (cls.__module__, cls.__qualname__) == (module, attr) else None


def shipped_xfail(name: str | None) -> XfailList | None:
    """The expected-failure list shipped for built-in backend ``name`` (None: not built in, or no file)."""
    if name is None or name not in BUILTIN_BACKENDS:
        return None
    path = xfail_path(name)
    if not path.is_file():
        return None
    listed = load_xfail(path)
    return replace(listed, source=f"conformance/backends/xfail/{name}.txt (shipped with the {name} adapter; "
                                  "--no-xfail judges without it)")


def choose_xfail(given: str | os.PathLike[str] | None, use_shipped: bool, backend: Any, selector: Any = None) -> XfailList | None:
    """The list a run applies: the file ``given`` (``--xfail``), else the shipped list of a built-in
    backend unless ``use_shipped`` is False (``--no-xfail``), else none. ValueError on a bad file."""
    if given:
        return load_xfail(given)
    return shipped_xfail(builtin_name(backend, selector)) if use_shipped else None
