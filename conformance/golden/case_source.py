"""Which cases a run judges, and where they came from: the golden set, the catalogue in memory,
or a directory of the user's own cases, selected by ``--filter`` and ``--dtype``.

Shared by ``roperef check`` (:mod:`conformance.cli.check`), ``roperef golden export``, the pytest
plugin, :func:`conformance.assertions.assert_rope_conforms` and the file protocol
(:mod:`conformance.cli.exchange`), so none of them depends on a CLI module. Every problem is a
:class:`~conformance.usage_error.UsageError` (one line, exit 2): a golden directory named by
``--golden`` or ``ROPEREF_GOLDEN`` must hold a golden set (never a silent substitute), and a
selection must match at least one case unless ``allow_empty``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roperef import __version__

from ..cases.case import GoldenCase
from ..cases.materialize import catalogue, materialize
from ..cases.user import UserCaseError, select_user_cases
from ..selection import select, select_cases
from ..usage_error import UsageError
from . import store as golden_files  # default_golden_dir called through the module: tests point it elsewhere
from .store import MANIFEST, GoldenError, load_golden

__all__ = ["CaseSource", "load_cases", "user_case_source"]


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


def load_cases(golden: str | None, tier: str, filters: Sequence[str] = (), dtypes: Sequence[str] = (), *,
               allow_empty: bool = False) -> CaseSource:
    """The golden cases to judge: from the golden directory, or (``--tier full`` without a full
    golden directory, or no golden directory at all) materialized in memory from the catalogue,
    which ``info["source"]`` says in words. A golden directory named by ``--golden`` or
    ``ROPEREF_GOLDEN`` must hold a golden set (UsageError otherwise: never a silent substitute)."""
    named, origin = _golden_origin(golden)
    directory = Path(named) if named else golden_files.default_golden_dir()
    info: dict[str, Any] = {"directory": str(directory), "tier": tier}
    if named and not os.path.lexists(directory / MANIFEST):
        problem = "does not exist" if not directory.exists() else f"holds no {MANIFEST}"
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
    info["selected"] = len(selected)
    return CaseSource(selected, info)


def user_case_source(directory: str, filters: Sequence[str] = (), dtypes: Sequence[str] = ()) -> CaseSource:
    """``--cases DIR``: the user's own cases (:mod:`conformance.cases.user`), selected like golden ones."""
    try:
        found = select_user_cases(directory, filters, dtypes)
    except UserCaseError as exc:
        raise UsageError(str(exc)) from None
    return CaseSource(found.cases, found.info)
