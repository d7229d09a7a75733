"""The class names transformers maps to each model type (``MODEL_CLASSES``, ``CONFIG_CLASS_NAMES``,
``CLASS_OWNERS`` of ``roperef/hf/config_classes.py``): how a config's ``architectures`` and ``auto_map`` name a
family. transformers is imported inside the functions (an optional dependency).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["model_classes", "config_class_names", "class_owners"]


def model_classes() -> dict[str, tuple[str, ...]]:
    """``{model type: class names}``: every class name transformers' auto mappings give the model type."""
    from transformers.models.auto import modeling_auto

    out: dict[str, set[str]] = {}
    for name, table in vars(modeling_auto).items():
        if not (name.startswith("MODEL") and name.endswith("MAPPING_NAMES") and isinstance(table, Mapping)):
            continue
        for model_type, classes in table.items():
            for cls in ([classes] if isinstance(classes, str) else list(classes or ())):
                if isinstance(cls, str):
                    out.setdefault(model_type, set()).add(cls)
    return {mt: tuple(sorted(names)) for mt, names in sorted(out.items())}


def config_class_names() -> dict[str, str]:
    """``{model type: its config class name}`` (``CONFIG_MAPPING_NAMES``)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return dict(sorted(CONFIG_MAPPING_NAMES.items()))


def class_owners(classes: Mapping[str, tuple[str, ...]], config_names: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """For each class name that several model types map to (``LlamaForCausalLM``: llama, exaone, internlm3,
    iquestcoder), the model types whose ``transformers.models`` folder defines it."""
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    owners: dict[str, set[str]] = {}
    for mt, names in classes.items():
        for name in names:
            owners.setdefault(name, set()).add(mt)
    for mt, name in config_names.items():
        owners.setdefault(name, set()).add(mt)
    out: dict[str, tuple[str, ...]] = {}
    for name, types in sorted(owners.items()):
        if len(types) < 2:
            continue
        try:
            folder = getattr(transformers, name).__module__.split(".")[2]
        except Exception:
            continue
        own = tuple(sorted(mt for mt in types if model_type_to_module_name(mt) == folder))
        if own and own != tuple(sorted(types)):
            out[name] = own
    return out
