"""Explore mode: the backend's declared interface, and random specs drawn within it.

:class:`Interface` is what a backend declares (its ``Capabilities``) intersected with the stages
it implements and the dtypes asked for. :func:`draw_spec` draws a valid :class:`RopeSpec` inside
it (docs/spec.md sections 2-4): a declared scaling type with realistic random parameters, theta
from real models or log-uniform in [1e2, 1e7], head dims 4-256 or a pair count of the shape space
(:data:`~conformance.generated.shapes.PAIR_COUNTS`, 1 to 65 pairs, with an odd tail or offset), a
declared pairing, and a
partial, window-last or odd-denominator rotary window, mRoPE sections or a 2-D vision form only
when declared. :func:`scaling_switches` gives the ``seq_len`` values where a length-dependent
scaling changes (drawn positions and ``inv_freq`` lengths aim at them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roperef.errors import bad
from roperef.spec import PAIRINGS, SCALING_TYPES, RopeSpec, Scaling

from ..backends.base import backend_stages
from ..generated.shapes import PAIR_COUNTS, WINDOW_OFFSETS
from ..vocabulary import DTYPES, FEATURES, STAGES

__all__ = ["Interface", "draw_spec", "scaling_switches", "pick", "log_uniform", "odd"]

_FEATURES = frozenset(FEATURES)


@dataclass(frozen=True)
class Interface:
    """What explore may draw for a backend: its declared capabilities, intersected with the
    stages it implements and (``--dtype``) the dtypes asked for. Tuples keep a fixed order."""

    stages: tuple[str, ...]
    pairings: tuple[str, ...]
    dtypes: tuple[str, ...]
    scaling_types: tuple[str, ...]
    features: frozenset[str]

    @classmethod
    def of(cls, backend: Any, dtypes: Sequence[str] = ()) -> Interface:
        caps = backend.capabilities
        declared = set(getattr(caps, "stages", ()))
        implemented = backend_stages(backend)
        wanted = set(dtypes) if dtypes else set(DTYPES)
        return cls(
            stages=tuple(s for s in STAGES if s in declared and s in implemented),
            pairings=tuple(p for p in PAIRINGS if p in set(getattr(caps, "pairings", ()))),
            dtypes=tuple(d for d in DTYPES if d in set(getattr(caps, "dtypes", ())) and d in wanted),
            scaling_types=tuple(t for t in SCALING_TYPES if t in set(getattr(caps, "scaling_types", ()))),
            features=frozenset(getattr(caps, "features", ())) & _FEATURES,
        )

    def empty_reason(self) -> str | None:
        """Why nothing can be drawn (None when something can)."""
        if not self.stages:
            return "the backend declares no stage that it also implements"
        if not self.pairings:
            return "the backend declares no pairing"
        if not self.dtypes:
            return "no dtype is both declared by the backend and selected with --dtype"
        if not self.scaling_types:
            return "the backend declares no scaling type"
        return None



def pick(rng: np.random.Generator, items: Sequence[Any], weights: Sequence[float] | None = None) -> Any:
    if weights is None:
        return items[int(rng.integers(len(items)))]
    w = np.asarray(weights, dtype=np.float64)
    return items[int(rng.choice(len(items), p=w / w.sum()))]


def log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def odd(value: int) -> int:
    return value | 1



def _theta(rng: np.random.Generator) -> float:
    if rng.random() < 0.6:
        return float(pick(rng, (10000.0, 500000.0, 1000000.0, 150000.0, 50000.0, 1e7)))
    return float(f"{log_uniform(rng, 1e2, 1e7):.6g}")


def _factor(rng: np.random.Generator, top: float = 64.0) -> float:
    if rng.random() < 0.5:
        return float(pick(rng, tuple(f for f in (2.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0) if f <= top)))
    return float(f"{log_uniform(rng, 1.0, top):.4g}")


def _scaling(rng: np.random.Generator, kind: str, n: int) -> Scaling:
    """A random, valid :class:`Scaling` of ``kind`` for ``n`` rotary pairs."""
    l0 = int(pick(rng, (2048, 4096, 8192, 32768)))
    if kind == "default":
        return Scaling()
    if kind == "linear":
        return Scaling("linear", factor=_factor(rng, 32.0))
    if kind == "dynamic":
        return Scaling("dynamic", factor=_factor(rng, 16.0), max_position_embeddings=int(pick(rng, (512, 2048, 4096, 8192))))
    if kind == "ntk":
        return Scaling("ntk", alpha=float(f"{log_uniform(rng, 1.0, 1000.0):.4g}"))
    if kind == "yarn":
        extra: dict[str, Any] = {}
        if rng.random() < 0.4:
            fast = float(pick(rng, (32.0, 16.0, 64.0)))
            extra.update(beta_fast=fast, beta_slow=float(pick(rng, (1.0, 2.0, 0.5))))
        if rng.random() < 0.3:
            extra.update(mscale=float(pick(rng, (1.0, 0.707))), mscale_all_dim=float(pick(rng, (0.0, 0.707, 0.8))))
        elif rng.random() < 0.2:
            extra.update(attention_factor=float(f"{rng.uniform(0.5, 1.5):.3g}"))
        if rng.random() < 0.3:
            extra.update(truncate=bool(rng.random() < 0.5))
        return Scaling("yarn", factor=_factor(rng), original_max_position_embeddings=l0, **extra)
    if kind == "longrope":
        ramp = (np.arange(n) / max(n - 1, 1)) ** 2
        short = tuple(float(f"{v:.6g}") for v in 1.0 + rng.uniform(0.0, 1.0) * ramp)
        long = tuple(float(f"{v:.6g}") for v in 1.0 + rng.uniform(1.0, 63.0) * ramp)
        return Scaling("longrope", short_factor=short, long_factor=long, original_max_position_embeddings=l0,
                       max_position_embeddings=l0 * int(pick(rng, (2, 8, 32))))
    if kind == "llama3":
        low = float(pick(rng, (1.0, 1.0, 0.5, 2.0)))
        return Scaling("llama3", factor=_factor(rng, 32.0), low_freq_factor=low,
                       high_freq_factor=low + float(pick(rng, (3.0, 1.0, 7.0))), original_max_position_embeddings=l0)
    if kind == "proportional":
        extra = {"factor": _factor(rng, 8.0)} if rng.random() < 0.3 else {}
        return Scaling("proportional", partial_rotary_factor=float(pick(rng, (0.25, 0.5, 1.0, 0.125))), **extra)
    bad("scaling type", kind, f"expected one of {', '.join(SCALING_TYPES)}")


def _window(rng: np.random.Generator, head: int, features: frozenset[str]) -> dict[str, Any]:
    """rotary_dim / rotary_start / freq_dim for a plain spec (a declared window kind)."""
    kinds = ["full", "full"]
    if head >= 4 and "partial" in features:
        kinds.append("partial")
    if head >= 4 and "window_last" in features:
        kinds.append("last")
    if head >= 4 and "odd_freq_dim" in features:
        kinds.append("odd")
    kind = pick(rng, kinds)
    if kind == "full":
        return {}
    if kind == "odd":  # d odd, rotary width 2*ceil(d/2) = d + 1
        d = int(rng.integers(1, head // 2)) * 2 + 1
        if d + 1 < head and "partial" not in features:
            d = head - 1
        return {"rotary_dim": d + 1, "freq_dim": d}
    width = 2 * int(rng.integers(1, head // 2))
    return {"rotary_dim": width, "rotary_start": head - width if kind == "last" else 0}


def _pair_count_window(rng: np.random.Generator, features: frozenset[str]) -> tuple[int, dict[str, Any]]:
    """A head dim and window from the shape space: a pair count of :data:`PAIR_COUNTS` in a full
    window, or with an odd pass-through tail (``partial``) or at an odd offset (``window_last``)."""
    n = int(pick(rng, PAIR_COUNTS))
    kinds = ["full"] + [k for k, f in (("partial", "partial"), ("last", "window_last")) if f in features]
    kind, extra = pick(rng, kinds), int(pick(rng, WINDOW_OFFSETS))
    if kind == "full":
        return 2 * n, {}
    return 2 * n + extra, {"rotary_dim": 2 * n, "rotary_start": extra if kind == "last" else 0}


def _plain_spec(rng: np.random.Generator, iface: Interface) -> RopeSpec:
    roll = rng.random()
    if roll < 0.3:
        head, window = _pair_count_window(rng, iface.features)
    else:
        head = int(pick(rng, (8, 16, 32, 64, 64, 80, 96, 128, 128, 256))) if roll < 0.8 else 2 * int(rng.integers(2, 81))
        window = _window(rng, head, iface.features)
    kind = pick(rng, iface.scaling_types)
    width = window.get("rotary_dim", head)
    if kind in ("dynamic", "ntk") and window.get("freq_dim", width) <= 2:  # the NTK exponent d / (d - 2) needs d > 2
        window = {}
        head = width = head if head > 2 and head % 2 == 0 else 6
    return RopeSpec(head, pairing=pick(rng, iface.pairings), theta=_theta(rng), scaling=_scaling(rng, kind, width // 2),
                    **window)


def _mrope_spec(rng: np.random.Generator, iface: Interface) -> RopeSpec:
    layouts = [x for x in ("chunked", "interleaved") if f"mrope_{x}" in iface.features]
    head = int(pick(rng, (16, 32, 64, 128)))
    n = head // 2
    cut = np.sort(rng.integers(0, n + 1, size=2))
    section = (int(cut[0]), int(cut[1] - cut[0]), int(n - cut[1]))
    kind = "default" if "default" in iface.scaling_types else pick(rng, iface.scaling_types)
    return RopeSpec(head, pairing=pick(rng, iface.pairings), theta=_theta(rng), scaling=_scaling(rng, kind, n),
                    mrope_section=section, mrope_layout=pick(rng, layouts))


def _vision_spec(rng: np.random.Generator, iface: Interface) -> RopeSpec:
    forms = [x for x in ("qwen_vl", "pixtral") if f"vision_{x}" in iface.features]
    head = int(pick(rng, (16, 32, 64, 80, 128)))
    return RopeSpec(head, pairing="half", theta=float(pick(rng, (10000.0, 100000.0))), vision=pick(rng, forms))


def draw_spec(rng: np.random.Generator, iface: Interface) -> RopeSpec:
    kinds, weights = ["plain"], [3.0]
    if iface.features & {"mrope_chunked", "mrope_interleaved"}:
        kinds.append("mrope")
        weights.append(1.0)
    if iface.features & {"vision_qwen_vl", "vision_pixtral"} and "half" in iface.pairings and "default" in iface.scaling_types:
        kinds.append("vision")
        weights.append(1.0)
    kind = pick(rng, kinds, weights)
    return {"plain": _plain_spec, "mrope": _mrope_spec, "vision": _vision_spec}[kind](rng, iface)


def scaling_switches(spec: RopeSpec) -> tuple[int, ...]:
    """seq_len values where a length-dependent scaling changes (longrope L0, dynamic M and 2M)."""
    sc = spec.scaling
    if sc.type == "longrope":
        return (sc.given_int("original_max_position_embeddings"),)
    if sc.type == "dynamic":
        m = sc.given_int("max_position_embeddings")
        return (m, 2 * m)
    return ()
