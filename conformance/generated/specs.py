"""Named spec variants of the generated cases (head dim 64, realistic parameters).

Probes of the bug catalogue (:class:`conformance.bugs.model.Probe`) name a variant here;
the generator applies the backend's pairing to it where the spec allows one.
"""

from __future__ import annotations

from collections.abc import Callable

from roperef.spec import RopeSpec, Scaling

from ..cases.catalog import scaling_spec

__all__ = ["SPEC_VARIANTS", "variant_spec", "variant_scaling"]

D = 64


def _scaled(kind: str) -> Callable[[str], RopeSpec]:
    return lambda pairing: scaling_spec(kind, D, pairing)


SPEC_VARIANTS: dict[str, Callable[[str], RopeSpec]] = {
    "default": lambda p: RopeSpec(D, pairing=p, theta=10000.0),
    "theta5e5": lambda p: RopeSpec(D, pairing=p, theta=500000.0),
    "partial": lambda p: RopeSpec(D, rotary_dim=32, pairing=p),
    "window-last": lambda p: RopeSpec(D, rotary_dim=32, rotary_start=32, pairing=p),
    "odd-width": lambda p: RopeSpec(D, rotary_dim=20, freq_dim=19, pairing=p),
    **{k: _scaled(k) for k in ("linear", "dynamic", "ntk", "yarn", "longrope", "llama3", "proportional")},
    "yarn-notrunc": lambda p: RopeSpec(D, pairing=p, theta=150000.0, scaling=Scaling(
        "yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0, truncate=False)),
    "mrope-chunked": lambda p: RopeSpec(D, pairing=p, theta=1e6, mrope_section=(8, 12, 12)),
    "mrope-interleaved": lambda p: RopeSpec(D, pairing=p, theta=5e6, mrope_section=(12, 10, 10), mrope_layout="interleaved"),
    "vision-qwen": lambda p: RopeSpec(D, vision="qwen_vl"),
    "vision-pixtral": lambda p: RopeSpec(D, vision="pixtral"),
}


def variant_spec(name: str, pairing: str) -> RopeSpec:
    """The spec of variant ``name`` with ``pairing`` (2-D vision keeps its half pairing)."""
    return SPEC_VARIANTS[name](pairing)


def variant_scaling(name: str) -> str:
    """The scaling type of a variant (without building pairings)."""
    return SPEC_VARIANTS[name]("half").scaling.type
