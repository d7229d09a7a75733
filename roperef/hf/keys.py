"""Reading one level of a HF config (top, ``text_config.``, ``vision_config.``): typed keys with clear errors.

Every value roperef takes from a config goes through :func:`number`, :func:`integer` or
:meth:`Level.flag`, so a bad value is always ``key=value: rule`` (``ValueError``/``TypeError``):
a string theta, a JSON ``Infinity``, a 400-digit integer that overflows float64, a head_dim of
10^400. Keys starting with ``_`` are annotations (``_notes``, ``_source``) and are never read.

:func:`check_section_keys` refuses a misspelt key inside a RoPE section (``rope_typ``, ``beta_fsat``)
with the closest known key as a suggestion (``difflib``); see docs/hf-configs.md "Unknown keys".
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ..errors import bad

__all__ = ["Level", "number", "integer", "clean", "model_type_of", "check_section_keys", "MAX_INT"]

#: The largest integer roperef accepts for a width, a length or a layer count (int32 positions).
MAX_INT = 2**31 - 1


def _shown(value: Any) -> Any:
    """``value``, or a short stand-in for an integer too long to print (Python limits int->str to 4300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<integer of about {int(value.bit_length() * math.log10(2)) + 1} digits>"
    return value


def number(key: str, value: Any, *, positive: bool = True) -> float:
    """A finite float (``> 0`` when ``positive``); bools, strings, overflowing integers and NaN/Inf refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(key, value, "must be a number", TypeError)
    try:
        out = float(value)
    except OverflowError:
        bad(key, _shown(value), "must be a finite number (this integer overflows float64)")
    if not math.isfinite(out):
        bad(key, out, "must be a finite number")
    if positive and out <= 0:
        bad(key, out, "must be a finite number > 0")
    return out


def integer(key: str, value: Any, minimum: int = 1, maximum: int = MAX_INT) -> int:
    """An integer in ``[minimum, maximum]``; an integral float (``64.0``) is accepted."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(key, value, "must be an integer", TypeError)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        bad(key, value, "must be an integer")
    if value < minimum:
        bad(key, _shown(value), f"must be an integer >= {minimum}")
    if value > maximum:
        bad(key, _shown(value), f"must be an integer <= {maximum}")
    return int(value)


def clean(d: Mapping[str, Any]) -> dict[str, Any]:
    """``d`` without its ``_``-prefixed annotation keys."""
    return {k: v for k, v in d.items() if not (isinstance(k, str) and k.startswith("_"))}


def model_type_of(data: Mapping[str, Any], path: str, fallback: str) -> str:
    """``data["model_type"]`` (a string), else ``fallback``."""
    value = data.get("model_type", fallback)
    if value is None:
        value = fallback
    if not isinstance(value, str):
        bad(f"{path}model_type", value, "must be a string", TypeError)
    return value


class Level:
    """One config level with its model type's transformers defaults for keys the config omits."""

    def __init__(self, data: Mapping[str, Any], path: str, model_type: str,
                 defaults: Mapping[str, Any] | None = None, aliases: Mapping[str, str] | None = None) -> None:
        self.data, self.path, self.model_type = clean(data), path, model_type
        self.defaults = defaults if defaults is not None else MappingProxyType({})
        #: standard attribute -> the key this model type's config class stores it under (its ``attribute_map``:
        #: DBRX ``n_layers``, Moonshine ``decoder_num_attention_heads``, ...), read when the standard key is absent
        #: (``layer_types`` is never aliased: ``layers_block_type`` has its own rule in hf_layers)
        self.aliases = {k: v for k, v in (aliases or {}).items()
                        if v in self.data and k not in self.data and k != "layer_types"}

    def key(self, name: str) -> str:
        """The dotted key as the user wrote it (``text_config.rope_theta``; an alias's own spelling)."""
        return f"{self.path}{self.aliases.get(name, name)}"

    def given(self, name: str) -> bool:
        """The config itself sets ``name`` (not null; defaults do not count)."""
        return self.data.get(self.aliases.get(name, name)) is not None

    def raw(self, name: str, default: Any = None) -> Any:
        """The config value (under the model type's alias when it has one), else the model type's default when
        the config does not have the key (a ``null`` it writes stays null, as in transformers' config
        classes), else ``default``."""
        key = self.aliases.get(name, name)
        value = self.data.get(key)
        if value is None and key not in self.data:
            value = self.defaults.get(name)
        return default if value is None else value

    def has(self, name: str) -> bool:
        return self.raw(name) is not None

    def num(self, name: str, default: Any = None, *, positive: bool = True) -> float | None:
        value = self.raw(name, default)
        return None if value is None else number(self.key(name), value, positive=positive)

    def int_(self, name: str, default: Any = None, minimum: int = 1) -> int | None:
        value = self.raw(name, default)
        return None if value is None else integer(self.key(name), value, minimum=minimum)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            bad(self.key(name), value, "must be true or false", TypeError)
        return value

    def need_num(self, name: str, *, positive: bool = True) -> float:
        """:meth:`num` for a key the caller knows is present (config or default); absent is ``key=None: is required``."""
        value = self.num(name, positive=positive)
        if value is None:
            bad(self.key(name), None, f"is required: a value is missing; give it with --set {self.key(name)}=VALUE")
        return value

    def need_int(self, name: str, minimum: int = 1) -> int:
        """:meth:`int_` for a key the caller knows is present (config or default); absent is ``key=None: is required``."""
        value = self.int_(name, minimum=minimum)
        if value is None:
            bad(self.key(name), None, f"is required: a value is missing; give it with --set {self.key(name)}=VALUE")
        return value

    def int_list(self, name: str, minimum: int = 0) -> list[int] | None:
        """A JSON list of integers (``no_rope_layers``, ``hybrid_layer_pattern``), or None when absent."""
        value = self.raw(name)
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            bad(self.key(name), value, "must be a list of integers", TypeError)
        return [integer(f"{self.key(name)}[{i}]", v, minimum=minimum) for i, v in enumerate(value)]

    def str_list(self, name: str) -> list[str] | None:
        """A JSON list of strings (``layer_types``), or None when absent."""
        value = self.raw(name)
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            bad(self.key(name), value, "must be a list of strings", TypeError)
        for i, v in enumerate(value):
            if not isinstance(v, str):
                bad(f"{self.key(name)}[{i}]", v, "must be a string", TypeError)
        return list(value)


def check_section_keys(where: str, section: Mapping[str, Any], known: Iterable[str],
                       ignorable: Mapping[str, str]) -> list[tuple[str, str]]:
    """Refuse a misspelt key of a RoPE section; return ``(key, why)`` for keys ignored on purpose.

    A key that is neither ``known`` nor in ``ignorable`` is refused (``ValueError``) with the closest
    known key as a suggestion when ``difflib`` finds one (``rope_typ`` -> ``rope_type``). ``ignorable``
    maps keys roperef deliberately does not read to the reason (shown to the user as an assumption).
    """
    known = sorted(set(known))
    ignored: list[tuple[str, str]] = []
    for key in section:
        if not isinstance(key, str):
            bad(where, key, "keys must be strings", TypeError)
        if key.startswith("_") or key in known:
            continue
        if key in ignorable:
            ignored.append((f"{where}.{key}", ignorable[key]))
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"
        bad(f"{where}.{key}", section[key], f"unknown key in a RoPE section{hint}")
    return ignored
