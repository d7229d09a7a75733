"""Write ``roperef/hf/families.py``: every model type of the installed transformers, classified by how
its text attention applies RoPE, read from transformers' own source and probed on random input.

    python scripts/gen_hf_families.py            # rewrite roperef/hf/families.py (the active table)
    python scripts/gen_hf_families.py --release  # write families_<release>.py beside roperef/hf/families.py (another release's table)
    python scripts/gen_hf_families.py --check    # exit 1 if the table of the installed release is not what this gives

``--check`` compares with the checked-in table of the installed transformers release: ``families.py`` when its
``TRANSFORMERS_VERSION`` is that release, else ``families_<major>_<minor>_<patch>.py``; with neither it fails
naming the command that writes it (a new release landed: regenerate, :mod:`roperef.hf.release`).

For each model type (``CONFIG_MAPPING_NAMES``), with its default config built in memory:

- a composite config (``get_text_config()`` is a sub-config) is a *wrapper*: its text type (and vision type);
- no ``*RotaryEmbedding`` class in its modeling files: *no RoPE*;
- a text rotary class that builds from the config and an apply function the attention calls: *RoPE*, with
  the pairing found by running that apply function (:func:`conformance.hf.truth.probe_apply`). When the
  attention picks the function from ``config.rope_interleave``, the family is recorded as
  ``rope_interleave`` with the config class's default for the flag;
- anything else (vision/audio-only rotary, a module that needs other arguments, a reversed rotation, an
  attention that applies no RoPE for the default config): *other*, with the reason.

It also lists the model types whose ``compute_default_rope_parameters`` reads ``partial_rotary_factor``,
and every config class's ``attribute_map`` (``ATTRIBUTE_MAPS``). A model type shipped with only a
configuration file is classified by the modeling source of the class ``AutoModel`` maps it to
(:func:`conformance.hf.truth.modeling_modules`).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.hf import source as hf_source  # noqa: E402 - imported after sys.path gains the repo root
from conformance.hf import switch_probe  # noqa: E402 - imported after sys.path gains the repo root
from conformance.hf.truth import (  # noqa: E402 - imported after sys.path gains the repo root
    apply_function,
    entry_tensors,
    indexer_apply,
    modeling_modules,
    probe_apply,
    quiet_transformers,
    rope_labels,
    text_config_of,
    text_rotary_class,
)

OUT = ROOT / "roperef" / "hf" / "families.py"


def _pairing(cfg, modules, cls) -> tuple[str | None, str]:
    module = cls(config=cfg)
    labels = rope_labels(module, cfg)
    label = labels[0] if labels else None
    w, s = entry_tensors(module, label)
    fn, note = apply_function(modules, cfg)
    if fn is None:
        return None, note
    section = (getattr(cfg, "rope_parameters", None) or {}).get("mrope_section") if isinstance(
        getattr(cfg, "rope_parameters", None), dict) else None
    section = tuple(section) if section and sum(section) == len(w) else None
    probe = probe_apply(fn, module, label, 2 * len(w), w, s, section, note)
    if not probe.found:
        return None, probe.note
    return probe.pairing, note


def classify(model_type: str) -> tuple[str, tuple]:
    """The family's kind and data for its default config; a model whose RoPE a config key switches on
    (:func:`conformance.hf.switch_probe.switches`: ESM ``position_embedding_type``, Zamba2 ``use_mem_rope``)
    is classified with the key at a value that switches it on."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.for_model(model_type)
    except Exception as exc:
        return "other", (f"AutoConfig.for_model raised {type(exc).__name__}",)
    kind, data = _classify(model_type, cfg)
    if kind == "other" and "no text class calls" in str(data[0]):
        for key, (_default, on, _off, _other) in sorted(switch_probe.switches(model_type).items()):
            if not on:
                continue
            switched = _classify(model_type, AutoConfig.for_model(model_type, **{key: on[0]}))
            if switched[0] == "rope":
                pairing, default, note = switched[1]
                return "rope", (pairing, default, f"{note} (with {key}={on[0]!r})")
    return kind, data


def _classify(model_type: str, cfg: Any) -> tuple[str, tuple]:
    text = text_config_of(cfg)
    if text is not cfg and getattr(text, "model_type", None) != model_type:
        vision = getattr(getattr(cfg, "vision_config", None), "model_type", None)
        return "wrapper", (getattr(text, "model_type", None), vision)
    modules = modeling_modules(model_type)
    if not hf_source.classes_named(modules, "RotaryEmbedding"):
        return "none", ("no rotary embedding class in its modeling source",)
    cls, how = text_rotary_class(modules, cfg)
    if cls is None:
        return "other", (how,)
    try:
        pairing, note = _pairing(cfg, modules, cls)
    except Exception as exc:
        return "other", (f"{cls.__name__} does not build from the default config ({type(exc).__name__})",)
    if pairing is None:
        return "other", (note,)
    if hasattr(cfg, "rope_interleave"):
        default = bool(cfg.rope_interleave)
        cfg.rope_interleave = not default
        try:
            other, _ = _pairing(cfg, modules, cls)
        finally:
            cfg.rope_interleave = default
        if other is not None and other != pairing:
            return "rope", ("rope_interleave", default, note)
    return "rope", (pairing, None, note)


def nested_labels(model_type: str) -> tuple[str, ...]:
    """Labels of the per-layer-type entries of the default config's ``rope_parameters`` (none: flat)."""
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    params = getattr(cfg, "rope_parameters", None)
    if not isinstance(params, dict) or not hasattr(cfg, "nested_rope_parameter_keys"):
        return ()
    return tuple(sorted(cfg.nested_rope_parameter_keys(params)))


def indexer_pairing(model_type: str) -> str | None:
    """The pairing a DSA indexer's apply function uses (probed on the rope slice), None without an indexer."""
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    modules = modeling_modules(model_type)
    fn, note = indexer_apply(modules, cfg)
    cls, _ = text_rotary_class(modules, cfg)
    if fn is None or cls is None:
        return None
    module = cls(config=cfg)
    labels = rope_labels(module, cfg)
    if labels:
        return None
    w, s = entry_tensors(module, None)
    probe = probe_apply(fn, module, None, 2 * len(w), w, s, None, note)
    return probe.pairing if probe.found else None


def mrope_facts(model_type: str) -> tuple[bool, tuple[int, ...] | None]:
    """``(always interleaved, default mrope_section)`` read from the text rotary class's source: Qwen3-VL
    style ``recomposition_frequencies`` (``length = mrope_section[dim] * 3``) interleaves whatever the
    config says; ``rope_parameters.get("mrope_section", [a, b, c])`` is the default section."""
    import re

    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    cls, _ = text_rotary_class(modeling_modules(model_type), cfg)
    if cls is None:
        return False, None
    src = inspect.getsource(cls)
    interleaved = "def recomposition_frequencies" in src and re.search(r"mrope_section\[\w+\]\s*\*\s*3", src) is not None
    found = re.search(r'get\(\s*"mrope_section"\s*,\s*\[(\d+),\s*(\d+),\s*(\d+)\]\s*\)', src)
    return interleaved, (tuple(int(g) for g in found.groups()) if found else None)


def partial_in_default(model_type: str) -> bool:
    modules = modeling_modules(model_type)
    # Any: classes found by name in transformers' modules; the filter checks each defines the method
    found: list[Any] = [c for c in hf_source.classes_named(modules, "RotaryEmbedding") if "compute_default_rope_parameters" in vars(c)]
    return any("partial_rotary_factor" in inspect.getsource(c.compute_default_rope_parameters) for c in found)


def attribute_map(model_type: str) -> dict[str, str]:
    """The config class's ``attribute_map`` (standard attribute -> the config key it reads), string entries only."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        cls = CONFIG_MAPPING[model_type]
    except Exception:
        return {}
    found = getattr(cls, "attribute_map", None) or {}
    return {k: v for k, v in sorted(found.items()) if isinstance(k, str) and isinstance(v, str)}


def render() -> str:
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    quiet_transformers()
    warnings.filterwarnings("ignore")
    rope, none, other, wrappers, partial, labels = {}, [], {}, {}, [], {}
    interleaved, sections, indexers = [], {}, {}
    maps = {mt: found for mt in sorted(CONFIG_MAPPING_NAMES) if (found := attribute_map(mt))}
    for mt in sorted(CONFIG_MAPPING_NAMES):
        kind, data = classify(mt)
        if kind == "rope":
            rope[mt] = data
            if partial_in_default(mt):
                partial.append(mt)
            if nested_labels(mt):
                labels[mt] = nested_labels(mt)
            if indexer_pairing(mt):
                indexers[mt] = indexer_pairing(mt)
            always, section = mrope_facts(mt)
            if always:
                interleaved.append(mt)
            if section:
                sections[mt] = section
        elif kind == "none":
            none.append(mt)
        elif kind == "wrapper":
            wrappers[mt] = data
        else:
            other[mt] = data[0]
    lines = [
        '"""How each model type of transformers ' + transformers.__version__ + ' applies RoPE. GENERATED by',
        "``scripts/gen_hf_families.py`` from the installed transformers source (do not edit by hand;",
        "``tests/roperef/hf/test_hf_crosscheck.py::test_hf_families_is_current`` checks it is current when transformers is",
        "installed).",
        "",
        "- :data:`ROPE_FAMILIES`: model type -> (pairing, flag default, source). ``pairing`` is the one its text",
        "  attention's apply function was observed to use on random input with the rotary module's own",
        "  cos/sin: ``half``, ``adjacent``, ``adjacent_in_half_out``, or ``rope_interleave`` (the attention calls",
        "  the interleaved form when ``config.rope_interleave`` is true; the flag default is the config class's).",
        "- :data:`NO_ROPE_FAMILIES`: model types whose modeling source has no rotary embedding at all.",
        "- :data:`OTHER_ROPE_FAMILIES`: model types with a rotary class roperef's config reader does not model",
        "  as a text RoPE (vision/audio-only, other call forms, reversed rotation, ...), with the reason.",
        "- :data:`WRAPPER_FAMILIES`: composite model types -> (default text model type, vision model type).",
        "- :data:`PARTIAL_IN_DEFAULT`: model types whose ``compute_default_rope_parameters`` reads",
        "  ``partial_rotary_factor`` (every other model type rotates the whole head under ``default``).",
        "- :data:`NESTED_LABELS`: model types whose default ``rope_parameters`` is nested -> its entry labels",
        "  (a config of that type may nest by them without declaring ``layer_types``).",
        "- :data:`ALWAYS_INTERLEAVED_MROPE`: model types whose rotary module interleaves mRoPE sections whatever",
        "  ``mrope_interleaved`` says (Qwen3-VL style ``recomposition_frequencies``); :data:`DEFAULT_MROPE_SECTION`:",
        "  the section the rotary module uses when the config gives none.",
        "- :data:`INDEXER_PAIRING`: model types with a sparse-attention indexer (DSA) -> the pairing its apply",
        "  function was observed to use (transformers hard-codes it per family).",
        "- :data:`ATTRIBUTE_MAPS`: model type -> its config class's ``attribute_map``: standard attribute ->",
        "  the config key transformers reads it from (DBRX ``num_hidden_layers`` -> ``n_layers``); string",
        "  entries only, model types whose config class maps nothing left out.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from types import MappingProxyType",
        "",
        f"TRANSFORMERS_VERSION = {transformers.__version__!r}",
        "",
        "ROPE_FAMILIES = MappingProxyType({",
    ]
    for mt, (pairing, default, note) in rope.items():
        lines.append(f"    {mt!r}: ({pairing!r}, {default!r}, {note!r}),")
    lines += ["})", "", "NO_ROPE_FAMILIES = frozenset({"]
    lines += _wrap([repr(mt) for mt in none])
    lines += ["})", "", "OTHER_ROPE_FAMILIES = MappingProxyType({"]
    for mt, why in other.items():
        lines.append(f"    {mt!r}: {why!r},")
    lines += ["})", "", "WRAPPER_FAMILIES = MappingProxyType({"]
    for mt, (text, vision) in wrappers.items():
        lines.append(f"    {mt!r}: ({text!r}, {vision!r}),")
    lines += ["})", "", "PARTIAL_IN_DEFAULT = frozenset({"]
    lines += _wrap([repr(mt) for mt in partial])
    lines += ["})", "", "NESTED_LABELS = MappingProxyType({"]
    for mt, names in labels.items():
        lines.append(f"    {mt!r}: {names!r},")
    lines += ["})", "", "ALWAYS_INTERLEAVED_MROPE = frozenset({"]
    lines += _wrap([repr(mt) for mt in interleaved])
    lines += ["})", "", "DEFAULT_MROPE_SECTION = MappingProxyType({"]
    for mt, sec in sections.items():
        lines.append(f"    {mt!r}: {sec!r},")
    lines += ["})", "", "INDEXER_PAIRING = MappingProxyType({"]
    for mt, pairing in indexers.items():
        lines.append(f"    {mt!r}: {pairing!r},")
    lines += ["})", "", "ATTRIBUTE_MAPS: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType({"]
    for mt, found in maps.items():
        lines.append(f"    {mt!r}: MappingProxyType({{")
        lines += [f"        {k!r}: {v!r}," for k, v in found.items()]
        lines.append("    }),")
    lines += ["})", ""]
    return "\n".join(lines)


def _wrap(items: list[str], width: int = 110) -> list[str]:
    out, line = [], "   "
    for item in items:
        if len(line) + len(item) + 2 > width:
            out.append(line.rstrip())
            line = "   "
        line += f" {item},"
    if line.strip():
        out.append(line.rstrip())
    return out


def release_table(version: str) -> Path:
    """The checked-in family table of transformers ``version``: the active one when it describes ``version``."""
    from roperef.hf import families

    if families.TRANSFORMERS_VERSION == version:
        return OUT
    return OUT.with_name(f"families_{version.replace('.', '_')}.py")


def main(argv: list[str] | None = None) -> int:
    import transformers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the installed release's table instead of writing")
    parser.add_argument("--release", action="store_true", help="write families_<release>.py, not the active table")
    args = parser.parse_args(argv)
    version = transformers.__version__
    if args.check:
        table = release_table(version)
        if not table.exists():
            print(f"no family table of transformers {version} is checked in ({table.relative_to(ROOT)}): run "
                  f"scripts/gen_hf_families.py --release (or scripts/gen_hf_families.py to make {version} the active table)")
            return 1
        same = table.read_text() == render()
        print(f"{table.relative_to(ROOT)} is " + ("current" if same else f"STALE for transformers {version}: run "
              + ("scripts/gen_hf_families.py" if table == OUT else "scripts/gen_hf_families.py --release")))
        return 0 if same else 1
    out = OUT.with_name(f"families_{version.replace('.', '_')}.py") if args.release else OUT
    out.write_text(render())
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
