"""User-supplied values for a config: ``overrides={"rope_theta": 1e6, "pairing": "adjacent"}`` /
``roperef spec --set rope_theta=1e6 --set pairing=adjacent``.

A key is a dotted path into the config (``rope_theta``, ``rope_scaling.factor``,
``text_config.partial_rotary_factor``): the value replaces what the config says (``None`` removes the
key). Two keys are not config keys but answers to what a config cannot say:

- ``pairing``: ``half``, ``adjacent`` or ``adjacent_in_half_out`` for the text RoPE;
- ``rope``: ``"none"`` declares that the model has no RoPE (for a model type roperef does not know).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..errors import bad
from ..spec import PAIRINGS

__all__ = ["apply_overrides", "PSEUDO_KEYS"]

#: Override keys that are not config keys.
PSEUDO_KEYS = ("pairing", "rope")


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config with the overrides applied, {pseudo key: value})``; ``config`` itself is not modified."""
    out = copy.deepcopy(dict(config))
    pseudo: dict[str, Any] = {}
    if overrides is None:
        return out, pseudo
    if not isinstance(overrides, Mapping):
        bad("overrides", overrides, "must be a dict of config key -> value", TypeError)
    for key, value in overrides.items():
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            bad("overrides", key, "keys must be dotted config paths such as rope_scaling.factor", TypeError)
        if key == "pairing":
            if value not in PAIRINGS:
                bad("overrides.pairing", value, f"expected one of {', '.join(PAIRINGS)}")
            pseudo["pairing"] = value
            continue
        if key == "rope":
            if value not in ("none", False):
                bad("overrides.rope", value, "the only value is 'none' (the model has no RoPE); give RoPE keys "
                    "(rope_theta, rope_scaling, ...) to describe one")
            pseudo["rope"] = "none"
            continue
        parts = key.split(".")
        node: dict[str, Any] = out
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                bad(f"overrides.{key}", value, f"{'.'.join(parts[:i + 1])} is not a JSON object in the config")
            node = child
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    return out, pseudo
