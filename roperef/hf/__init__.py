"""RopeSpec(s) from a Hugging Face ``config.json`` (dict, JSON string path or :class:`~pathlib.Path`).

Two entry points:

- :func:`model_rope` -> :class:`~roperef.hf.model.ModelRope`: every RoPE of the model (one, per layer
  type, DeepSeek V4 ``main``/``compress``, text + ``vision``), the spec each decoder layer applies (or
  none: NoPE, linear attention, Mamba), the values roperef had to assume and why, or "no RoPE" with the
  reason (BERT, GPT-2, Nemotron-H, Granite 4 hybrid ``position_embedding_type: nope``, ...);
- :func:`spec_from_config` -> the RopeSpec, or ``{name: RopeSpec}`` when there are several; raises
  :class:`~roperef.hf.model.NoRopeError` for a model without RoPE.

Every form of docs/spec.md section 7 is accepted (v5 ``rope_parameters`` flat or nested by layer type,
legacy ``rope_scaling`` + ``rope_theta``, the ``type``/``mrope``/``su`` aliases, ...). Keys that mean the
same thing across families are read for every family (:mod:`roperef.hf.rope_params`: ``partial_rotary_factor``,
``rotary_pct``, ``rotary_dim``, ``rope_interleave``, ``swa_rope_theta``, ``compress_rope_theta``,
``no_rope_layers`` ...); :class:`HFQuirks` holds the documented per-family exceptions of transformers
5.24 and :mod:`roperef.hf.families` (generated from transformers' source) says how each model type
transformers ships applies RoPE; a config of such a model type is read the way its config class reads it
(:mod:`roperef.hf.class_rules`, tables generated from the classes: :mod:`roperef.hf.config_classes`). A model
type transformers does not ship is read as the family its ``architectures`` / ``auto_map`` name; otherwise
its pairing is never guessed (refused, naming the ``--set`` that decides), and with it given the generic rules
apply with their assumptions listed; ``overrides=`` supplies values (:mod:`roperef.hf.overrides`). Keys
starting with ``_`` are annotations and are ignored. Bad input raises ``ValueError``/``TypeError`` through
:func:`roperef.errors.bad`: ``key=value: rule``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import bad
from ..json_input import JSONInputError, load_json_file
from ..spec import RopeSpec
from .model import Assumption, ModelRope, NoRopeError
from .overrides import apply_overrides
from .quirks import MODEL_DEFAULTS, HFQuirks
from .resolve import resolve

__all__ = ["HFQuirks", "MODEL_DEFAULTS", "Assumption", "ModelRope", "NoRopeError", "load_config", "model_rope",
           "spec_from_config"]


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a ``config.json`` file within the limits of :mod:`roperef.json_input` (nesting depth,
    integer digits, finite floats, file size, regular file); JSON ``NaN``/``Infinity`` are read,
    then rejected by validation."""
    p = Path(path)
    try:
        data = load_json_file(p, what="config file")
    except FileNotFoundError:
        raise FileNotFoundError(f"config={str(p)!r}: file not found") from None
    except JSONInputError as exc:
        bad("config", str(p), str(exc).removeprefix(f"{p}: "))
    if not isinstance(data, dict):
        bad("config", data, f"{p.name} must hold a JSON object", TypeError)
    return data


def model_rope(
    config: Mapping[str, Any] | str | Path,
    *,
    quirks: HFQuirks | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ModelRope:
    """Every RoPE of a HF config, per decoder layer, with the assumptions made (see :class:`ModelRope`).

    ``config``: a dict, or a path to ``config.json``. ``quirks``: the transformers behaviours to model
    (default: transformers 5.24). ``overrides``: ``{dotted config key: value}`` applied to the config
    first, plus ``pairing`` and ``rope`` (``"none"``) for what a config cannot say.
    """
    if isinstance(config, (str, Path)):
        config = load_config(config)
    if not isinstance(config, Mapping):
        bad("config", config, "must be a dict (parsed config.json) or a path", TypeError)
    if quirks is None:
        quirks = HFQuirks()
    elif not isinstance(quirks, HFQuirks):
        bad("quirks", quirks, "must be an HFQuirks or None", TypeError)
    data, pseudo = apply_overrides(config, overrides)
    return resolve(data, quirks, pseudo)


def spec_from_config(
    config: Mapping[str, Any] | str | Path,
    *,
    layer_type: str | None = None,
    quirks: HFQuirks | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RopeSpec | dict[str, RopeSpec]:
    """The RopeSpec of a HF config, or ``{name: RopeSpec}`` when it has several (names as :class:`ModelRope`).

    ``layer_type`` picks one: a spec name (``full_attention``, ``sliding_attention``, ``text``, ``vision``,
    ``text.<layer_type>``, ``main``, ``compress``) or a layer type of the config whose layers apply RoPE;
    anything else is refused naming the valid ones. A model without RoPE raises :class:`NoRopeError`
    (a ``ValueError``) instead of returning a default spec. Assumptions are not reported here: use
    :func:`model_rope` (or ``roperef spec``, which prints them) when the model type may be unknown.
    """
    result = model_rope(config, quirks=quirks, overrides=overrides)
    if not result.has_rope:
        raise NoRopeError(f"config={result.model_type or '?'!r}: the model has no RoPE ({result.no_rope})")
    specs = dict(result.specs)
    if layer_type is None:
        return specs["text"] if list(specs) == ["text"] else specs
    if not isinstance(layer_type, str):
        bad("layer_type", layer_type, "must be a string", TypeError)
    if layer_type in specs:
        return specs[layer_type]
    if f"text.{layer_type}" in specs:
        return specs[f"text.{layer_type}"]
    by_type = {t: n for t, n in zip(result.layer_types, result.layers) if n is not None}
    if layer_type in by_type:
        return specs[by_type[layer_type]]
    if not result.layer_types and list(specs) in (["text"], ["text", "vision"]) and layer_type == "full_attention":
        return specs["text"]  # no layer list: every layer is full attention
    valid = sorted(set(specs) | set(by_type) | ({"full_attention"} if not result.layer_types and "text" in specs else set()))
    bad("layer_type", layer_type, f"not a RoPE layer type of this config; expected one of {', '.join(valid)}")
