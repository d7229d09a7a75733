"""Which transformers release roperef's generated tables describe, and what that means for a config read
while another release is installed.

The active tables (:mod:`roperef.hf.families`, :mod:`roperef.hf.config_classes`) are generated from one
release (``TRANSFORMERS_VERSION``); further family tables generated from other releases are checked in beside
them (``families_<major>_<minor>_<patch>.py`` beside ``roperef/hf/families.py``, :data:`FAMILY_TABLES`). With transformers installed
at release ``R`` different from the active tables' release ``T``:

- every reading carries a note naming both releases;
- a model type whose RoPE differs between ``T`` and ``R`` (its text pairing in ``ROPE_FAMILIES``, its
  indexer pairing in ``INDEXER_PAIRING``, or its kind: RoPE / no RoPE / other / wrapper) is refused with the
  change, rather than read by ``T``'s rule; a model type only ``R`` ships is refused as new in ``R``;
- when no table of ``R`` is checked in, the note says so and names the regenerate command.

The installed release is read from the package metadata (``importlib.metadata``), without importing
transformers.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

from . import families as fam
from . import families_5_25_0

__all__ = ["FAMILY_TABLES", "REGENERATE", "ReleaseCheck", "installed_transformers", "family_kind", "rope_changes",
           "release_check"]

#: The release each checked-in family table was generated from -> the table.
FAMILY_TABLES: Mapping[str, ModuleType] = {
    fam.TRANSFORMERS_VERSION: fam,
    families_5_25_0.TRANSFORMERS_VERSION: families_5_25_0,
}
#: How a maintainer regenerates the tables for the installed release (docs/hf-configs.md).
REGENERATE = ("python scripts/gen_hf_families.py && python scripts/gen_hf_config_classes.py && "
              "python scripts/gen_hf_config_classes.py --doc docs/hf-configs.md")


@dataclass(frozen=True)
class ReleaseCheck:
    """``note``: what a reading under the installed release must say (None: same release or none installed);
    ``refusal``: why this model type must not be read by the tables' rule (None: it may)."""

    note: str | None = None
    refusal: str | None = None


def installed_transformers() -> str | None:
    """The installed transformers release (package metadata), None when it is not installed."""
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return None


def family_kind(table: ModuleType, model_type: str) -> str:
    """How ``table`` classifies ``model_type``: ``rope <pairing>`` (+ ``, indexer <pairing>``), ``no rope``,
    ``other: <why>``, ``wrapper of <text type>`` or ``not shipped``."""
    if model_type in table.ROPE_FAMILIES:
        kind = f"rope {table.ROPE_FAMILIES[model_type][0]}"
        if model_type in table.INDEXER_PAIRING:
            kind += f", indexer {table.INDEXER_PAIRING[model_type]}"
        return kind
    if model_type in table.NO_ROPE_FAMILIES:
        return "no rope"
    if model_type in table.OTHER_ROPE_FAMILIES:
        return f"other: {table.OTHER_ROPE_FAMILIES[model_type]}"
    if model_type in table.WRAPPER_FAMILIES:
        return f"wrapper of {table.WRAPPER_FAMILIES[model_type][0]}"
    return "not shipped"


def rope_changes(old: ModuleType, new: ModuleType) -> dict[str, tuple[str, str]]:
    """Model type -> (its kind in ``old``, in ``new``) for every model type the two tables classify apart."""
    types: set[str] = set()
    for table in (old, new):
        types |= set(table.ROPE_FAMILIES) | set(table.NO_ROPE_FAMILIES) | set(table.OTHER_ROPE_FAMILIES)
        types |= set(table.WRAPPER_FAMILIES)
    out = {}
    for mt in sorted(types):
        before, after = family_kind(old, mt), family_kind(new, mt)
        if before != after:
            out[mt] = (before, after)
    return out


def release_check(model_type: str, installed: str | None) -> ReleaseCheck:
    """What reading ``model_type`` by the active tables means while transformers ``installed`` is installed."""
    tables = fam.TRANSFORMERS_VERSION
    if installed is None or installed == tables:
        return ReleaseCheck()
    note = f"roperef's tables describe transformers {tables}; transformers {installed} is installed"
    other = FAMILY_TABLES.get(installed)
    if other is None:
        return ReleaseCheck(f"{note} and no table of {installed} is checked in (a maintainer regenerates with: "
                            f"{REGENERATE})")
    change = rope_changes(fam, other).get(model_type)
    if change is None:
        return ReleaseCheck(f"{note}; model_type {model_type!r} is classified alike in both")
    before, after = change
    return ReleaseCheck(note, f"model_type {model_type!r} changed between transformers {tables} and {installed} "
                              f"({before} -> {after}); roperef's rules describe {tables}, so it does not read this "
                              f"type under {installed} (install transformers {tables}, or regenerate: {REGENERATE})")
