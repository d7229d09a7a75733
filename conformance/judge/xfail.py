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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from roperef.errors import bad
from roperef.json_input import JSONInputError, read_text_file

from ..backends.names import BUILTIN_BACKENDS

__all__ = ["XfailEntry", "XfailList", "load_xfail", "parse_xfail", "xfail_path", "XFAIL_DIR"]

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


def load_xfail(path: str | Path) -> XfailList:
    p = Path(path)
    try:
        text = read_text_file(p, what="expected-failure file", max_bytes=16 * 2**20)
    except FileNotFoundError:
        bad("--xfail", str(p), "file not found")
    except JSONInputError as exc:  # a FIFO, a directory, too large, not UTF-8
        bad("--xfail", str(p), str(exc).removeprefix(f"{p}: "))
    return parse_xfail(text, str(p))
