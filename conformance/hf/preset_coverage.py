"""Which of transformers' RoPE model types the real preset corpus (``conformance/presets``) covers.

A preset covers a model type when the published config is of that type: its ``model_type``, the text model
type a composite type wraps (:data:`roperef.hf.families.WRAPPER_FAMILIES`), or the ``model_type`` of any
sub-config inside it that roperef reads (``text_config``, ``thinker_config.text_config``, ...; not the
speech ``talker_config`` of Omni models, whose RoPE roperef does not model). A model type
no preset covers must have a documented reason in :data:`conformance.hf.preset_gaps.GAPS` (no published
checkpoint, or none found in the searched sources); :func:`coverage` pairs both, and
``tests/roperef/hf/test_hf_configs.py`` keeps them complete and disjoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.hf.preset_gaps import GAPS
from roperef.hf.families import NO_ROPE_FAMILIES, OTHER_ROPE_FAMILIES, ROPE_FAMILIES, WRAPPER_FAMILIES

#: Sub-configs roperef does not read (said in a note): their model types are not covered by the preset.
UNREAD_SUB_CONFIGS = frozenset({"talker_config", "token2wav_config", "audio_config", "code2wav_config"})


@dataclass(frozen=True)
class FamilyCoverage:
    """One RoPE model type of transformers: the presets of that type, else the documented gap."""

    model_type: str
    presets: tuple[str, ...]
    gap: str | None

    @property
    def covered(self) -> bool:
        return bool(self.presets)


def _sub_types(config: Mapping[str, Any], depth: int = 0) -> Iterator[str]:
    """The ``model_type`` of ``config`` and of every sub-config dict nested in it (bounded depth)."""
    model_type = config.get("model_type")
    if isinstance(model_type, str):
        yield model_type
        wrapped = WRAPPER_FAMILIES.get(model_type)
        if wrapped is not None:
            yield wrapped[0]
    if depth < 4:
        for key, value in config.items():
            if isinstance(value, Mapping) and not key.startswith("_") and key not in UNREAD_SUB_CONFIGS:
                yield from _sub_types(value, depth + 1)


def preset_model_types(config: Mapping[str, Any]) -> frozenset[str]:
    """Every model type a published config is an instance of (itself, its wrapped text type, sub-configs)."""
    return frozenset(_sub_types(config))


def coverage(folder: Path) -> list[FamilyCoverage]:
    """Per model type of :data:`ROPE_FAMILIES` (sorted): the preset stems covering it, and its gap reason."""
    by_type: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.json")):
        for model_type in preset_model_types(json.loads(path.read_text())):
            by_type.setdefault(model_type, []).append(path.stem)
    return [FamilyCoverage(mt, tuple(sorted(set(by_type.get(mt, ())))), GAPS.get(mt)) for mt in sorted(ROPE_FAMILIES)]


def remote_code_presets(folder: Path) -> list[tuple[str, str]]:
    """(preset stem, model_type) of the presets whose model type transformers 5.24 does not ship at all
    (remote-code families: ``chatglm``, ``qwen``, ``internlm2``, ...)."""
    shipped = set(ROPE_FAMILIES) | set(NO_ROPE_FAMILIES) | set(OTHER_ROPE_FAMILIES) | set(WRAPPER_FAMILIES)
    out = []
    for path in sorted(folder.glob("*.json")):
        model_type = json.loads(path.read_text()).get("model_type")
        if model_type not in shipped:
            out.append((path.stem, str(model_type)))
    return out
