"""The result of reading a HF config: every RoPE of the model, per decoder layer, and what was assumed.

:class:`ModelRope` is what :func:`roperef.hf.model_rope` returns. It never hides a guess or a missing
RoPE: ``assumptions`` lists every value roperef had to assume (and why), and a model without RoPE has
``has_rope == False`` with ``no_rope`` saying why, instead of a default spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..spec import RopeSpec

__all__ = ["Assumption", "ModelRope", "NoRopeError"]


class NoRopeError(ValueError):
    """:func:`roperef.hf.spec_from_config` was asked for the spec of a model that has no RoPE."""


@dataclass(frozen=True)
class Assumption:
    """A value roperef assumed because the config does not say it: ``key``, the value used and why.

    Supply the value (``overrides={key: value}`` / ``roperef spec --set key=value``) to remove it.
    """

    key: str
    value: Any
    reason: str

    def __str__(self) -> str:
        return f"assumed {self.key}={self.value!r}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class ModelRope:
    """Every RoPE of one model.

    - ``specs``: name -> RopeSpec. One text RoPE is named ``text``; RoPEs that differ per layer type are
      named by their label (``full_attention``, ``sliding_attention``, DeepSeek V4 ``main``/``compress``);
      with a vision tower they become ``text.<label>`` beside ``vision``.
    - ``layers``: for each decoder layer (``num_hidden_layers`` of them; empty when the config does not
      say), the name of the spec it applies, or ``None`` for a layer without RoPE (NoPE layers,
      ``no_rope_layers``, a null per-layer-type entry, linear-attention / Mamba / convolution layers).
    - ``layer_types``: the attention type of each decoder layer (same length as ``layers``).
    - ``assumptions``: what roperef assumed, see :class:`Assumption`.
    - ``no_rope``: when the model has no RoPE anywhere, why (``specs`` is then empty).
    """

    model_type: str
    specs: Mapping[str, RopeSpec]
    layers: tuple[str | None, ...] = ()
    layer_types: tuple[str, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    no_rope: str | None = None
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "specs", MappingProxyType(dict(self.specs)))

    @property
    def has_rope(self) -> bool:
        return bool(self.specs)

    def layer_spec(self, index: int) -> RopeSpec | None:
        """The spec of decoder layer ``index`` (None: that layer has no RoPE)."""
        name = self.layers[index]
        return None if name is None else self.specs[name]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: specs as ``RopeSpec.to_dict()``, layers, layer types, assumptions, no-RoPE reason."""
        return {
            "model_type": self.model_type,
            "rope": self.has_rope,
            "no_rope": self.no_rope,
            "specs": {name: spec.to_dict() for name, spec in self.specs.items()},
            "layers": list(self.layers),
            "layer_types": list(self.layer_types),
            "assumptions": [a.to_dict() for a in self.assumptions],
            "notes": list(self.notes),
        }
