"""Which cases a run judges, and where they came from: the golden set, the catalogue in memory,
or a directory of the user's own cases, selected by ``--filter`` and ``--dtype``.

Shared by ``roperef check`` (:mod:`conformance.cli.check`), ``roperef golden export``, the pytest
plugin, :func:`conformance.assertions.assert_rope_conforms` and the file protocol
(:mod:`conformance.cli.exchange`), so none of them depends on a CLI module. Every problem is a
:class:`~conformance.usage_error.UsageError` (one line, exit 2): a golden directory named by
``--golden`` or ``ROPEREF_GOLDEN`` must hold a golden set (never a silent substitute), and a
selection must match at least one case unless ``allow_empty``.

Every golden set is anchored before a case is judged (:mod:`conformance.golden.published`):
its set hash is pinned by the user (``set_hash``, else ``ROPEREF_SET_HASH``), or published with
this version, or else the expected outputs of the selected cases are recomputed from their
stored inputs and must equal the stored ones bit for bit. ``info["anchor"]`` says which, and
``info["set_hash"]`` is the hash (the reports print both).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roperef import __version__

from ..cases.case import GoldenCase
from ..cases.materialize import catalogue, materialize
from ..cases.user import UserCaseError, select_user_cases
from ..paths import path_problem
from ..selection import select, select_cases
from ..usage_error import UsageError
from . import store as golden_files  # default_golden_dir called through the module: tests point it elsewhere
from .published import MIN_PIN_HEX, hash_matches, published_description
from .store import MANIFEST, GoldenError, GoldenSet, case_file_name, load_golden, output_problems

#: the environment variable that pins the set hash of the cases a run judges (as ``--set-hash``)
SET_HASH_ENV = "ROPEREF_SET_HASH"

__all__ = ["CaseSource", "load_cases", "user_case_source", "SET_HASH_ENV", "pinned_hash", "check_pinned"]


@dataclass
class CaseSource:
    """The selected cases and where they came from (for reports)."""

    cases: list[GoldenCase]
    info: dict[str, Any]


def _golden_origin(golden: str | None) -> tuple[str | None, str | None]:
    """The golden directory the user named (``--golden``, else ``ROPEREF_GOLDEN``) and which one named it."""
    if golden:
        return golden, "--golden"
    env = os.environ.get("ROPEREF_GOLDEN")
    return (env, "ROPEREF_GOLDEN") if env else (None, None)


def pinned_hash(set_hash: str | None) -> tuple[str | None, str]:
    """The set hash the user pinned (``set_hash``, else env ``ROPEREF_SET_HASH``) and what named it;
    UsageError unless it is at least :data:`MIN_PIN_HEX` hex digits."""
    value, origin = (set_hash, "--set-hash") if set_hash else (os.environ.get(SET_HASH_ENV), SET_HASH_ENV)
    if not value:
        return None, origin
    text = value.strip()
    if len(text) < MIN_PIN_HEX or any(ch not in "0123456789abcdefABCDEF" for ch in text):
        raise UsageError(f"{origin}={value!r}: must be a set hash (or its first {MIN_PIN_HEX}+ hex digits), "
                         "as the report header prints it")
    return text, origin


def check_pinned(actual: str, set_hash: str | None, what: str) -> str | None:
    """``"pinned by --set-hash"`` when the user pinned a hash and ``actual`` has it; None when nothing
    was pinned; UsageError naming both hashes when they differ."""
    want, origin = pinned_hash(set_hash)
    if want is None:
        return None
    if not hash_matches(actual, want):
        raise UsageError(f"{origin}={want}: {what} has set hash {actual}, not the pinned one (its files changed, "
                         "or it is another set); nothing was judged")
    return f"pinned by {origin}"


def _anchor(loaded: GoldenSet, cases: Sequence[GoldenCase], set_hash: str | None) -> str:
    """How the loaded set is anchored (see the module docstring); UsageError when it cannot be."""
    pinned = check_pinned(loaded.set_hash, set_hash, f"the golden set at {loaded.directory}")
    if pinned:
        return pinned
    published = published_description(loaded.set_hash)
    if published:
        return f"published: {published}"
    t0 = time.perf_counter()
    for case in cases:
        problems = output_problems(case, loaded.directory / case_file_name(case.id))
        if problems:
            raise UsageError(f"golden set {loaded.directory}: {problems[0]} -- its expected outputs are not what its "
                             "inputs give, although every hash in its manifest matches (changed or forged; "
                             f"`roperef golden verify {loaded.directory}` lists every problem); nothing was judged")
    return (f"recomputed: not a published set and no hash pinned, so the expected outputs of the {len(cases)} "
            f"selected case(s) were recomputed from their inputs and matched bit for bit "
            f"({time.perf_counter() - t0:.1f} s; pin this set with --set-hash {loaded.set_hash[:MIN_PIN_HEX]})")


def load_cases(golden: str | None, tier: str, filters: Sequence[str] = (), dtypes: Sequence[str] = (), *,
               allow_empty: bool = False, set_hash: str | None = None) -> CaseSource:
    """The golden cases to judge: from the golden directory, or (``--tier full`` without a full
    golden directory, or no golden directory at all) materialized in memory from the catalogue,
    which ``info["source"]`` says in words. A golden directory named by ``--golden`` or
    ``ROPEREF_GOLDEN`` must hold a golden set (UsageError otherwise: never a silent substitute).
    A golden set is anchored (``info["anchor"]``, the module docstring) before it is returned;
    ``set_hash`` pins it (else ``ROPEREF_SET_HASH``)."""
    named, origin = _golden_origin(golden)
    directory = Path(named) if named else golden_files.default_golden_dir()
    info: dict[str, Any] = {"directory": str(directory), "tier": tier}
    if named and not os.path.lexists(directory / MANIFEST):
        problem = path_problem(directory, "dir") or f"holds no {MANIFEST}"
        raise UsageError(f"{origin} {directory}: {problem} (no golden set there; make one with "
                         f"`roperef golden generate --out {directory}`)")
    loaded = None
    if os.path.lexists(directory / MANIFEST):
        try:
            loaded = load_golden(directory)
        except GoldenError as exc:
            raise UsageError(f"golden set: {exc}") from None
    if loaded is not None and (tier == "smoke" or loaded.manifest.get("tier") == "full"):
        info.update(set_hash=loaded.set_hash, tier=loaded.manifest.get("tier", tier), generator=loaded.manifest.get("generator_version"),
                    source=f"golden directory {directory}")
        cases = [c for c in loaded.cases if tier == "full" or c.tier == "smoke"]
    else:
        recipes = catalogue(tier)
        if filters:
            recipes = select(recipes, ",".join(filters))
        cases = [materialize(r, check_fast=False) for r in recipes]
        why = (f"the golden set at {directory} is not the full tier" if loaded is not None else
               f"no golden set found at {directory}; pass --golden DIR or set ROPEREF_GOLDEN")
        info.update(directory=None, set_hash=None,
                    source=f"cases computed in memory by roperef {__version__} from the {tier} catalogue ({why})")
    selected = select_cases(cases, filters, dtypes)
    if not selected and not allow_empty:
        what = " and ".join(x for x in (f"--filter {','.join(filters)}" if filters else "", f"--dtype {','.join(dtypes)}" if dtypes else "") if x)
        raise UsageError(f"no case matches {what or 'the selection'} ({len(cases)} cases in the {tier} tier)")
    if info.get("set_hash") and loaded is not None:
        info["anchor"] = _anchor(loaded, selected, set_hash)
    else:
        if pinned_hash(set_hash)[0] is not None:
            raise UsageError(f"{pinned_hash(set_hash)[1]}: pins a golden set, but the cases are computed in memory "
                             "(no golden directory was read)")
        info["anchor"] = "computed in memory by this roperef (nothing to anchor)"
    info["selected"] = len(selected)
    return CaseSource(selected, info)


def user_case_source(directory: str, filters: Sequence[str] = (), dtypes: Sequence[str] = (), *,
                     set_hash: str | None = None) -> CaseSource:
    """``--cases DIR``: the user's own cases (:mod:`conformance.cases.user`), selected like golden ones.
    ``set_hash`` (else ``ROPEREF_SET_HASH``) pins the hash of every file the cases read."""
    try:
        found = select_user_cases(directory, filters, dtypes)
    except UserCaseError as exc:
        raise UsageError(str(exc)) from None
    pinned = check_pinned(found.info["set_hash"], set_hash, f"the case directory {directory}")
    anchor = pinned or (f"your own cases: the set hash covers every file they read; pin it with --set-hash "
                        f"{found.info['set_hash'][:MIN_PIN_HEX]}")
    return CaseSource(found.cases, {**found.info, "anchor": anchor})
