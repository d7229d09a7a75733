"""Golden cases for the judge's own tests: hand-built targeted ones and a small catalogue subset.

Expected outputs come from :mod:`roperef.reference` on the inputs rounded to the case dtype
(exactly what the golden generator does), never from the judge under test.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from conformance.cases.case import GoldenCase, numpy_dtype
from roperef import reference
from roperef.spec import RopeSpec, Scaling

DTYPES = ("float64", "float32", "float16", "bfloat16")


def rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def forward_case(spec: RopeSpec, positions, dtype: str = "float32", *, heads: int = 2, seed: int = 0, case_id: str | None = None,
                 family: str = "forward", stage: str = "forward", scale: float = 1.0) -> GoldenCase:
    """A forward (or backward) case at the given [B, T] positions, x ~ N(0, scale^2) rounded to ``dtype``."""
    pos = np.asarray(positions, dtype=np.int64)
    if pos.ndim == 1:
        pos = pos[None]
    rng = np.random.default_rng(seed)
    x = rounded(rng.standard_normal((*pos.shape, heads, spec.head_dim)) * scale, dtype)
    fn = reference.forward if stage == "forward" else reference.backward
    y = fn(x, pos, spec)
    name = "x" if stage == "forward" else "grad"
    out = "y" if stage == "forward" else "grad_x"
    cid = case_id or f"{family}/{spec.scaling.type}/{spec.pairing}/{dtype}/p{int(pos.max())}"
    return GoldenCase(cid, family, stage, spec, dtype, "smoke", (), {name: x, "positions": pos, out: y})


def long_position_cases() -> list[GoldenCase]:
    """Odd positions 4093..4097 and around 2^20, every dtype, both pairings, several scaling types."""
    specs = {
        "default": RopeSpec(head_dim=64),
        "default-1e6": RopeSpec(head_dim=128, theta=1e6),
        "linear": RopeSpec(head_dim=64, scaling=Scaling(type="linear", factor=4.0)),
        "yarn": RopeSpec(head_dim=64, scaling=Scaling(type="yarn", factor=8.0, original_max_position_embeddings=4096)),
        "llama3": RopeSpec(head_dim=128, theta=500000.0, scaling=Scaling(type="llama3", factor=8.0, low_freq_factor=1.0,
                                                                          high_freq_factor=4.0, original_max_position_embeddings=8192)),
    }
    positions = np.array([[4093, 4094, 4095, 4096, 4097, 1, 3, 255, 257, 2047, 2049, 2**20 - 1, 2**20 - 3, 2**20 - 7, 999_999, 2**20]])
    out = []
    for name, spec in specs.items():
        for pairing in ("half", "adjacent"):
            for dtype in DTYPES:
                s = spec.replace(pairing=pairing)
                out.append(forward_case(s, positions, dtype, case_id=f"forward/{name}/{pairing}/{dtype}/long", seed=len(out)))
    return out


@functools.cache
def smoke_cases() -> tuple[GoldenCase, ...]:
    """The whole smoke catalogue, materialized in memory (float64 reference only)."""
    from conformance.cases.materialize import catalogue, materialize

    return tuple(materialize(r, check_fast=False) for r in catalogue("smoke"))


def subset(pattern: str) -> list[GoldenCase]:
    from conformance.selection import select

    return select(smoke_cases(), pattern)


def write_golden_dir(directory: Path, cases) -> Path:
    """A golden directory holding ``cases`` (through the real writer)."""
    from conformance.golden.store import write_golden

    write_golden(list(cases), directory, tier="smoke")
    return directory


def materialize_subset(pattern: str) -> list[GoldenCase]:
    """Only the catalogue recipes matching ``pattern``, materialized (cheaper than the whole tier)."""
    from conformance.cases.materialize import catalogue, materialize
    from conformance.selection import select

    return [materialize(r, check_fast=False) for r in select(catalogue("smoke"), pattern)]
