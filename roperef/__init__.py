"""roperef: the float64 reference of every RoPE variant.

Submodules (imported on demand, nothing compiled at import):

- :mod:`roperef.spec` -- :class:`RopeSpec`, :class:`Scaling` (validated at construction)
- :mod:`roperef.hf` -- specs from Hugging Face ``config.json`` dicts/files
- :mod:`roperef.frequencies` -- ``inv_freq(spec, seq_len) -> (inv_freq, attention_factor)``
- :mod:`roperef.positions` -- contiguous, offset, varlen, mRoPE and 2-D position ids
- :mod:`roperef.reference` -- NumPy float64 ``cos_sin``, ``apply``, ``forward``, ``backward``
- :mod:`roperef.fast` -- Numba-parallel twins of :mod:`roperef.reference`
"""

from .spec import PAIRINGS, SCALING_TYPES, RopeSpec, Scaling

__all__ = ["RopeSpec", "Scaling", "PAIRINGS", "SCALING_TYPES", "__version__"]
__version__ = "0.1.0"
