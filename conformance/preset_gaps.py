"""Model types of transformers 5.24 with RoPE that ``conformance/presets`` has no real published config for,
each with the reason (read by :mod:`conformance.preset_coverage`; ``tests/test_hf_configs.py`` keeps it
exact: a listed type that gains a preset, or an uncovered type missing here, fails).

Every model type not covered here is still cross-checked through transformers' own default config
(``tests/test_hf_crosscheck.py``); a gap means only that no published checkpoint config was found in the
sources searched (the code index of public repositories: vendored configs, cached hub configs, model
repositories), never that the type is unread.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

GAPS: Mapping[str, str] = MappingProxyType({
})
