"""The exposure rules' answers, remembered on disk between runs.

``cls.exposed(facts)`` (:mod:`conformance.bugs.catalogue`) evaluates a class's decoy on a case's
facts: for the frequency classes that means the correctly rounded frequencies of the decoy's spec
(:func:`roperef.frequencies.inv_freq`, milliseconds each). The case generator asks it for every
probe it considers and the coverage section for every (case, class) pair, and the answers are the
same on every run of the same code: :class:`ExposureCache` keeps them in one JSON file.

The answer is a function of ``(class id, facts)`` and of the code that computes it, nothing else
(a rule sees only its :class:`conformance.bugs.facts.CaseFacts`), so

- an entry's key is the SHA-256 of ``class id`` + ``repr(facts)`` (a frozen dataclass of ints,
  floats printed round-trip exactly, strings and the spec's own frozen dataclasses);
- the file's name is the SHA-256 of the roperef version, the Python and NumPy versions and the
  source text of every module a rule can run (:data:`SOURCES`): any edit starts a new file;
- the file holds ``{"entries": {key: bool}, "sha256": <hash of the entries' canonical JSON>}``; a
  file whose hash does not match, that does not parse or does not have that form is ignored (and
  replaced at the next save): never trusted blindly;
- the directory is ``$XDG_CACHE_HOME/roperef/exposure`` (``~/.cache/roperef/exposure`` without
  it); one that cannot be created or written means the answers are computed without caching.

Passed explicitly (no module state): :func:`conformance.generated.plan.plan_cases` and
:func:`conformance.judge.coverage.coverage` take one, ``roperef check`` makes it and saves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import roperef

from .facts import CaseFacts
from .model import BugClass

__all__ = ["ExposureCache", "SOURCES", "cache_directory", "source_key"]

_ROOT = Path(__file__).resolve().parents[2]
#: the modules (files, or folders whose ``*.py`` count) whose code an exposure rule can run
SOURCES: tuple[str, ...] = ("roperef", "conformance/bugs", "conformance/error_model", "conformance/cases",
                            "conformance/vocabulary.py")


def cache_directory(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/roperef/exposure`` (``~/.cache`` when unset or empty, as the XDG spec says)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "roperef" / "exposure"


def source_key(root: Path = _ROOT) -> str:
    """SHA-256 of the versions and of the sources of :data:`SOURCES` (top-level ``*.py`` of each folder,
    sorted by path; a file's path and its bytes both count)."""
    h = hashlib.sha256()
    h.update(f"roperef {roperef.__version__}; python {platform.python_version()}; numpy {np.__version__}\n".encode())
    for name in SOURCES:
        path = root / name
        files = sorted(path.glob("*.py")) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0")
            h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def _entries_hash(entries: dict[str, bool]) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class ExposureCache:
    """The answers of ``cls.exposed(facts)`` read from and written to ``path`` (None: in memory only).

    ``hits`` / ``misses`` count the answers found and computed; ``ignored`` says why a file on disk
    was not used (damaged, wrong form), or is None."""

    path: Path | None
    entries: dict[str, bool] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    ignored: str | None = None
    _dirty: bool = False

    @classmethod
    def open(cls, directory: Path | None = None) -> ExposureCache:
        """The cache file for the code as it is now in ``directory`` (:func:`cache_directory` if None);
        a missing, damaged or unreadable file gives an empty cache (``ignored`` says why when it existed)."""
        path = (directory or cache_directory()) / f"{source_key()}.json"
        cache = cls(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cache
        except (OSError, UnicodeDecodeError) as exc:
            cache.ignored = f"unreadable ({type(exc).__name__})"
            return cache
        try:
            data = json.loads(text)
            entries = data["entries"]
            ok = (isinstance(entries, dict) and all(isinstance(k, str) and isinstance(v, bool) for k, v in entries.items())
                  and data["sha256"] == _entries_hash(entries))
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            cache.ignored = "damaged (its hash, its JSON or its form): recomputed"
            return cache
        cache.entries = entries
        return cache

    def exposed(self, cls: BugClass, facts: CaseFacts) -> bool:
        """``cls.exposed(facts)``, from the cache when it holds the answer."""
        key = hashlib.sha256(f"{cls.id}\0{facts!r}".encode()).hexdigest()
        got = self.entries.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        value = bool(cls.exposed(facts))
        self.entries[key] = value
        self._dirty = True
        return value

    def save(self) -> bool:
        """Write the answers when some were computed (atomically: a temporary file renamed over the old
        one). False when there was nothing to write or the directory cannot be written (no error: the
        next run computes them again)."""
        if self.path is None or not self._dirty:
            return False
        body = json.dumps({"entries": self.entries, "sha256": _entries_hash(self.entries)}, sort_keys=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
            return False
        self._dirty = False
        return True
