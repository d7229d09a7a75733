"""roperef's reading of a config against transformers' own rotary modules: AGREE / DIFFER per item.

``cross_check(config)`` resolves the config with :func:`roperef.hf.model_rope` and builds what
transformers does with the same dict (:func:`conformance.hf.truth.transformers_truth`: the family's
rotary module(s) in memory, no weights, no download), then compares, per RoPE entry:

- ``inv_freq``: float32-aware. HF computes ``theta^(-2i/d)`` in float32 (exponent and power each
  rounded), so entry ``i`` may differ from roperef's float64 value by
  ``u32 * (4 |ln w_i| + 16)`` relative (u32 = 2^-24); zero frequencies (proportional RoPE) must be zero in both;
- ``attention_factor``: relative difference <= 1e-6 (HF keeps it as a Python float);
- ``rotary_dim``: twice HF's number of frequencies;
- ``pairing``: the pairing, window start and mRoPE layout the family's apply function was observed to
  use on random input with the module's own cos/sin (:func:`conformance.hf.truth.probe_apply`);

and per model: ``rope`` (does the model have RoPE at all), ``layers`` (per decoder layer, the entry
that applies or none, against HF's ``layer_types`` / ``no_rope_layers`` and its attention code probed
per layer, :func:`conformance.hf.truth.layer_probe`) and ``text_config`` (DIFFER when the config nests a
``text_config`` that transformers' non-composite config class ignores). A vision tower gets
``inv_freq``. An item that cannot be judged is SKIP with the reason; transformers failing to build the
config or its module is ERROR. Optional dependency: torch and transformers, imported when called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.hf import HFQuirks, ModelRope, model_rope
from roperef.hf.overrides import apply_overrides
from roperef.hf.quirks import REMOTE_FAMILIES
from roperef.hf.unknown_types import family_of
from roperef.spec import RopeSpec

from .truth import HFEntry, HFTruth, transformers_truth

__all__ = ["Item", "CrossCheck", "cross_check", "render", "VERDICTS"]

U32 = 2.0**-24
VERDICTS = ("AGREE", "DIFFER", "SKIP", "ERROR")


@dataclass(frozen=True)
class Item:
    """One comparison: which RoPE entry, what was compared, the verdict and both sides in words."""

    entry: str
    what: str
    verdict: str
    roperef: str
    transformers: str
    detail: str = ""


@dataclass(frozen=True)
class CrossCheck:
    """All comparisons for one config (``shipped`` false: transformers does not ship the model type)."""

    model_type: str
    items: tuple[Item, ...]
    shipped: bool = True
    notes: tuple[str, ...] = field(default=())

    @property
    def verdict(self) -> str:
        """``DIFFER`` (any DIFFER or ERROR), ``AGREE`` (something judged, nothing differs) or ``NOT_CHECKED``."""
        if any(i.verdict in ("DIFFER", "ERROR") for i in self.items):
            return "DIFFER"
        if any(i.verdict == "AGREE" for i in self.items):
            return "AGREE"
        return "NOT_CHECKED"

    @property
    def verdict_line(self) -> str:
        """The verdict in words: an ``AGREE`` with items that were not compared says what agreed and what was
        not compared and why (``AGREE on inv_freq; pairing not compared: <why>``), never a plain ``AGREE``."""
        verdict = self.verdict
        skipped = [i for i in self.items if i.verdict == "SKIP"]
        if verdict != "AGREE" or not skipped:
            return verdict
        agreed = sorted({i.what for i in self.items if i.verdict == "AGREE"})
        missed = "; ".join(f"{i.entry} {i.what} not compared: {i.detail or i.transformers}" for i in skipped)
        return f"AGREE on {', '.join(agreed)}; {missed}"


def _freq_item(entry: str, spec: RopeSpec, hf: HFEntry, vision: bool = False) -> list[Item]:
    w, s = inv_freq(spec)
    if vision and spec.vision == "qwen_vl":  # HF keeps the D/4 frequencies once; roperef repeats them for h, w
        w = w[: spec.head_dim // 4]
    items: list[Item] = []
    ref, got = np.asarray(w, dtype=np.float64), hf.inv_freq
    if ref.shape != got.shape:
        items.append(Item(entry, "inv_freq", "DIFFER", f"{ref.size} frequencies", f"{got.size} frequencies"))
    else:
        zero = ref == 0
        if np.any(got[zero] != 0) or np.any(got[~zero] == 0):
            items.append(Item(entry, "inv_freq", "DIFFER", f"{int(zero.sum())} zero", f"{int((got == 0).sum())} zero"))
        else:
            nz = ~zero
            rel = np.abs(got[nz] - ref[nz]) / ref[nz] if nz.any() else np.zeros(0)
            bound = U32 * (4 * np.abs(np.log(ref[nz])) + 16) if nz.any() else np.zeros(0)
            worst = float(np.max(rel / bound)) if rel.size else 0.0
            verdict = "AGREE" if worst <= 1 else "DIFFER"
            i = int(np.argmax(rel / bound)) if rel.size else 0
            items.append(Item(entry, "inv_freq", verdict, f"w0={ref[0]:.6g}, w[-1]={ref[-1]:.6g}",
                              f"w0={got[0]:.6g}, w[-1]={got[-1]:.6g}",
                              f"max rel diff {float(np.max(rel)) if rel.size else 0:.1e} ({worst:.2f} of the float32 "
                              f"bound; worst pair {i})"))
    if not vision:
        rel_s = abs(hf.attention_scaling - s) / abs(s)
        items.append(Item(entry, "attention_factor", "AGREE" if rel_s <= 1e-6 else "DIFFER", f"{s:.9g}",
                          f"{hf.attention_scaling:.9g}"))
        width = 2 * hf.inv_freq.size
        items.append(Item(entry, "rotary_dim", "AGREE" if width == spec.rotary_dim else "DIFFER",
                          f"{spec.rotary_dim} of head_dim {spec.head_dim}", f"{width} (2 x frequencies)"))
    return items


def _pairing_item(entry: str, spec: RopeSpec, hf: HFEntry) -> Item:
    mine = f"{spec.pairing}, start {spec.rotary_start}" + (f", {spec.mrope_layout}" if spec.mrope_section else "")
    probe = hf.probe
    if probe is None:
        return Item(entry, "pairing", "SKIP", mine, "not probed", hf.note)
    if not probe.found:
        concrete = "rotates by -angle" in probe.note or "no candidate structure matches" in probe.note
        return Item(entry, "pairing", "DIFFER" if concrete else "SKIP", mine, "not found", probe.note)
    theirs = f"{probe.pairing}, start {probe.rotary_start}" + (f", {probe.mrope_layout}" if probe.mrope_layout else "")
    same = (probe.pairing, probe.rotary_start) == (spec.pairing, spec.rotary_start) and (
        probe.mrope_layout is None or probe.mrope_layout == spec.mrope_layout)
    return Item(entry, "pairing", "AGREE" if same else "DIFFER", mine, theirs,
                f"{probe.note} (match error {probe.error:.1e})".strip())


def _layers_item(mr: ModelRope, truth: HFTruth, names: Mapping[str, str], text: Mapping[str, RopeSpec]) -> Item:
    """Per layer, the spec roperef assigns against the spec of the entry transformers uses there."""
    if truth.layers is None or not mr.layers:
        why = "transformers' config gives no per-layer list" if truth.layers is None else "the config gives no layer count"
        return Item("model", "layers", "SKIP", f"{len(mr.layers)} layers", "-", why)
    single = text["text"] if [k for k in text if k != "indexer"] == ["text"] else None
    mine = [None if n is None else names.get(n, n) for n in mr.layers]
    theirs = list(truth.layers)
    if len(mine) != len(theirs):
        return Item("model", "layers", "DIFFER", f"{len(mine)} layers", f"{len(theirs)} layers")
    diff = []
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if (a is None) != (b is None):
            diff.append(i)
        elif a is not None and b is not None and not b.startswith("?"):  # "?kind": HF maps the layer type to an entry in code
            if text.get(a) != (text.get(b) or single):
                diff.append(i)
    count = sum(x is None for x in mine)
    if diff:
        i = diff[0]
        return Item("model", "layers", "DIFFER", f"layer {i}: {mine[i] or 'no RoPE'}",
                    f"layer {i}: {(theirs[i] or 'no RoPE').lstrip('?')}", f"{len(diff)} of {len(mine)} layers differ")
    return Item("model", "layers", "AGREE", f"{len(mine)} layers, {count} without RoPE",
                f"{len(theirs)} layers, {sum(x is None for x in theirs)} without RoPE")


def _in_library(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A remote-code config re-labelled as the transformers family its code copies (REMOTE_FAMILIES), or a model
    type transformers does not know as the family its architectures / auto_map classes name."""
    for path in ("text_config", None):
        level = data.get(path) if path else data
        if not isinstance(level, dict):
            continue
        family = REMOTE_FAMILIES.get(str(level.get("model_type")))
        if family is not None and family.in_library:
            moved = {**level, "model_type": family.in_library}
            note = (f"{level['model_type']} is remote code; compared with transformers' {family.in_library}, "
                    "the family its code copies")
            if path:
                wrapper = data.get("model_type")
                if wrapper not in _shipped():
                    return moved, note  # the wrapper is remote too: check the text model on its own
                return {**data, path: moved}, note
            return moved, note
    top = data.get("model_type")
    text = data.get("text_config")
    if top not in _shipped() and isinstance(text, dict) and text.get("model_type") in _shipped():
        return text, f"{top} is remote code; its text_config ({text['model_type']}) is compared on its own"
    if top not in _shipped() and top not in REMOTE_FAMILIES:
        found = family_of(data)
        if found.model_type is not None and found.model_type in _shipped():
            return ({**data, "model_type": found.model_type},
                    f"{top} is not a transformers model type; compared with {found.model_type}, the family its "
                    f"{', '.join(found.names)} name (as roperef reads it)")
    return data, ""


def _shipped() -> set[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return set(CONFIG_MAPPING_NAMES)


def cross_check(config: Mapping[str, Any], *, quirks: HFQuirks | None = None,
                overrides: Mapping[str, Any] | None = None) -> CrossCheck:
    """Compare roperef's reading of ``config`` (a parsed config.json) with transformers' modules."""
    mr = model_rope(config, quirks=quirks, overrides=overrides)
    data, _ = apply_overrides(config, overrides)
    data, copied = _in_library(data)
    names = {name: name.split(".", 1)[1] if name.startswith("text.") else name for name in mr.specs}
    text = {names[n]: s for n, s in mr.specs.items() if n != "vision"}
    try:
        truth = transformers_truth(data, {**text, **({"vision": mr.specs["vision"]} if "vision" in mr.specs else {})})
    except Exception as exc:
        return CrossCheck(mr.model_type, (Item("model", "build", "ERROR", "resolved",
                                               f"{type(exc).__name__}: {exc}"[:300]),))
    if not truth.shipped:
        return CrossCheck(mr.model_type, (), False, truth.notes)
    if copied:
        truth = dataclasses.replace(truth, notes=truth.notes + (copied,))
    items: list[Item] = []
    if truth.ignores_text_config:
        items.append(Item("model", "text_config", "DIFFER", "reads text_config",
                          "ignores text_config", f"{truth.model_type} is not a composite config class in "
                          "transformers: its model reads only the top-level keys"))

    def yes(b: object) -> str:
        return "RoPE" if b else "no RoPE"

    if truth.rope is None:
        items.append(Item("model", "rope", "SKIP", yes(mr.has_rope), "?", "; ".join(truth.notes)))
    else:
        items.append(Item("model", "rope", "AGREE" if truth.rope == bool(text) else "DIFFER", yes(bool(text)),
                          yes(truth.rope), (mr.no_rope or "") if not text else "; ".join(truth.notes)))
    if truth.rope and text:
        for label, entry in truth.entries.items():
            spec = text.get(label) or (text["text"] if [k for k in text if k != "indexer"] == ["text"] else None)
            if spec is None:
                unused = truth.layers is not None and mr.layers and label not in truth.layers and all(
                    x is None or x.startswith("?") for x in truth.layers)
                items.append(Item(label, "entry", "SKIP" if unused else "DIFFER", "no such entry", "an entry",
                                  "no layer of this config uses it" if unused else entry.note))
                continue
            items.extend(_freq_item(label, spec, entry))
            items.append(_pairing_item(label, spec, entry))
        if list(truth.entries) != ["text"]:
            for label in text:
                if label not in truth.entries and label != "indexer":
                    items.append(Item(label, "entry", "DIFFER", "an entry", "no such entry"))
        items.append(_layers_item(mr, truth, names, text))
        if "indexer" in text:
            spec = text["indexer"]
            if truth.indexer is None:
                items.append(Item("indexer", "pairing", "SKIP", spec.pairing, "-", "no single HF entry to probe with"))
            else:
                items.append(_pairing_item("indexer", spec, HFEntry("indexer", np.zeros(0), 1.0, truth.indexer)))
    if "vision" in mr.specs:
        if truth.vision is None:
            items.append(Item("vision", "inv_freq", "SKIP", "vision spec", "-", "no vision rotary class built from "
                              "vision_config (see tests/test_against_transformers.py for the vision apply functions)"))
        else:
            items.extend(_freq_item("vision", mr.specs["vision"], truth.vision, vision=True))
    return CrossCheck(mr.model_type, tuple(items), True, truth.notes + tuple(mr.notes))


def render(check: CrossCheck, title: str = "") -> str:
    """A plain-text table of the items and the overall verdict."""
    import transformers

    head = f"{title or check.model_type}: roperef vs transformers {transformers.__version__}"
    if not check.shipped:
        return f"{head}\nNOT_CHECKED: {'; '.join(check.notes)}"
    rows = [("entry", "item", "verdict", "roperef", "transformers", "detail")]
    rows += [(i.entry, i.what, i.verdict, i.roperef, i.transformers, i.detail) for i in check.items]
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    lines = [head]
    for r in rows:
        lines.append("  ".join(r[k].ljust(widths[k]) for k in range(5)) + ("  " + r[5] if r[5] else ""))
    for note in check.notes:
        lines.append(f"note: {note}")
    lines.append(f"verdict: {check.verdict_line}")
    return "\n".join(lines)
