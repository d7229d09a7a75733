"""The set hashes of the golden sets published with this version of roperef: the anchor of what is judged.

A golden set's *set hash* is the sha256 of its ``manifest.json`` bytes, recomputed from the bytes
read (never a hash written inside the manifest), and the manifest holds the sha256 of every
``.npz`` file and every array, which loading checks. So one hash commits to every byte of the
set; ``roperef check`` prints it in its header and reports. What makes a set trustworthy is how
that hash is anchored (:func:`conformance.golden.case_source.load_cases`):

- ``published``: the hash is listed here, shipped with the package: the set is the one checked
  in with this version (``golden/``, or a copy of it anywhere);
- ``pinned``: the user named the hash (``roperef check --set-hash HEX``, ``ROPEREF_SET_HASH``,
  ``pytest --rope-set-hash``, ``assert_rope_conforms(set_hash=...)``) and the set has it;
- ``recomputed``: neither; the expected outputs of every selected case are recomputed from its
  stored inputs with the bit-exact reference before anything is judged, as ``roperef golden
  verify`` does. A set whose outputs were changed, with every hash in its manifest updated to
  match, is refused, wherever it lies.

When the checked-in ``golden/`` is regenerated (the integrator's call), its new hash goes here:
``roperef golden verify`` prints it, and ``tests/conformance/golden/test_golden_anchor.py`` fails until it is listed.
"""

from __future__ import annotations

__all__ = ["PUBLISHED", "published_description", "hash_matches", "MIN_PIN_HEX"]

#: set hash (sha256 of manifest.json) -> what the set is
PUBLISHED: dict[str, str] = {
    "0fd4a01992960ea75a42ae9b25123ab0aa54f713dd2bc471616872ea2692ec4f":
        "the smoke tier checked in with roperef 0.1.0 (generator 2, 268 cases)",
}

#: the fewest hex digits a pinned hash may give (the console prints 16)
MIN_PIN_HEX = 16


def published_description(set_hash: str | None) -> str | None:
    """What the published set with this hash is, or None when no published set has it."""
    return PUBLISHED.get(set_hash or "")


def hash_matches(set_hash: str, expected: str) -> bool:
    """``expected`` (at least :data:`MIN_PIN_HEX` hex digits, any case) is ``set_hash`` or its start."""
    want = expected.strip().lower()
    return len(want) >= MIN_PIN_HEX and set_hash.lower().startswith(want)
