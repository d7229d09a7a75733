"""Cases generated for a backend's interface, on the fly: every bug class its interface can express.

From the backend's declared capabilities (stages, pairings, dtypes, scaling types, features,
precision) the generator derives, deterministically, a covering set of small cases
(B = 2, T = 16, H = 2, D = 64 like the goldens):

- *regime coverage*: for each stage with positions, every position regime of
  :data:`conformance.generated.positions.COVERAGE_REGIMES` (contiguous from 0, near 256, 2048,
  4096, 65536, 2^20 and 2^31 - T; per-row offsets; sparse; decode B > 1 T = 1; packed) in every
  declared dtype, the pairings rotating over them;
- *length switches*: longrope at seq_len below, at and past L0, dynamic NTK at and past M;
- *class coverage*: for each bug class of the catalogue (:mod:`conformance.bugs.catalogue`) and
  each stage where it can occur, the first probe (spec variant + regime; seq_len on both sides
  of every length switch: longrope below/at/past L0, dynamic at/past M) whose case the interface
  declares *and* that exposes the class at the declared precision; pairing and dtype rotate
  with the class so that classes meet every pairing and dtype.

A generated case's id is ``family/variant/pairing/dtype/shape/tag`` like a golden's (the tag
names the regime and its offsets), so ``--filter ID`` selects it; its inputs are drawn from
its own generator seeded by the CRC-32 of the id, and its expected values come from the NumPy
reference :mod:`roperef.reference` (no files; bit-identical to :mod:`roperef.fast` and as fast on
cases this small: the Numba twin is never judged against itself, and nothing is compiled).
The backend's ``supports`` is asked too: when every declared
case of a class is declined, one declined case is kept so the report says so.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef import reference
from roperef.frequencies import inv_freq
from roperef.spec import PAIRINGS, RopeSpec

from ..bugs.catalogue import CATALOGUE
from ..bugs.facts import case_facts
from ..bugs.model import BugClass
from ..calls.declared import Interface
from ..calls.stage_call import SUPPORTS_RAISED, supports_reason
from ..cases.case import GoldenCase, case_family, numpy_dtype, shape_tag
from ..error_model.tolerance import position_rows
from ..vocabulary import DTYPES, STAGE_OUTPUTS, STAGES
from .positions import COVERAGE_REGIMES, REGIMES, Regime
from .specs import variant_scaling, variant_spec

__all__ = ["Interface", "GenCase", "Plan", "plan_cases", "materialize_generated", "materialize_all", "generated_cases", "light_case"]

HEADS = 2
_SWITCHES = {"longrope": ("below-L0", "at-L0", "past-L0"), "dynamic": ("at-M", "past-M")}
_FINEST = ("float64", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class GenCase:
    """A generated case before materialization: a light GoldenCase (inputs zero) and its recipe."""

    id: str
    stage: str
    variant: str
    spec: RopeSpec
    dtype: str
    regime: Regime
    light: GoldenCase


@dataclass
class Plan:
    """The generated cases and, per bug class, whether the interface can express it (None) or why not.

    ``refused``: every ``supports()`` reason given while planning (a declared candidate the backend
    declined), with its count; the coverage section reports them, so that a backend that declines
    what it declares (or a stand-in that cannot answer) is not shown as fully covered. A candidate
    whose ``supports()`` *raised* is kept, so the run asks again and reports the ERROR."""

    cases: list[GenCase] = field(default_factory=list)
    expressible: dict[str, str | None] = field(default_factory=dict)
    declined: dict[str, list[str]] = field(default_factory=dict)  # class -> supports() reasons
    refused: Counter[str] = field(default_factory=Counter)


def _fits(spec_kind: str, regime: Regime) -> bool:
    want = {"mrope": "mrope", "vision": "vision"}.get(regime.kind, "plain")
    return spec_kind == want


def _spec_kind(spec: RopeSpec) -> str:
    return "mrope" if spec.mrope_section is not None else "vision" if spec.vision is not None else "plain"


def _shape(stage: str, spec: RopeSpec, regime: Regime) -> tuple[int, ...]:
    if stage == "inv_freq":
        return ()
    grid = regime.grid()
    if stage == "cos_sin":
        return grid if len(grid) == 2 else (1, grid[0])
    return (*grid, HEADS, spec.head_dim)


def light_case(case_id: str, stage: str, spec: RopeSpec, dtype: str, regime: Regime) -> GoldenCase:
    """A GoldenCase with the right positions and shapes, zero inputs and placeholder outputs (an apply
    case's placeholder tables differ between batch rows where its positions do)."""
    arrays: dict[str, np.ndarray] = {}
    shape = _shape(stage, spec, regime)
    if stage == "inv_freq":
        arrays["seq_len"] = np.asarray(regime.seq_len, dtype=np.int64)
        arrays["inv_freq"] = np.zeros(spec.n_pairs)
        arrays["attention_factor"] = np.asarray(1.0)
    elif stage == "cos_sin":
        arrays["positions"] = regime.positions
        arrays["cos"] = arrays["sin"] = np.zeros((*position_rows(spec, regime.positions).shape[1:], spec.n_pairs))
    else:
        x = np.zeros(shape)
        if stage == "apply":
            # placeholder tables equal between batch rows exactly where the positions are (shared_tables)
            table = np.broadcast_to(np.asarray(regime.positions, dtype=np.float64)[..., None], (*shape[:-2], spec.n_pairs))
            arrays.update(x=x, cos=table.copy(), sin=table.copy(), y=x)
        else:
            arrays.update({"x" if stage == "forward" else "grad": x, "positions": regime.positions,
                           "y" if stage == "forward" else "grad_x": x})
            if regime.cu_seqlens is not None:
                arrays["cu_seqlens"] = regime.cu_seqlens
    flags = ("generated",)
    return GoldenCase(case_id, case_family(stage, spec), stage, spec, dtype, "smoke", flags, arrays)


def _make(stage: str, variant: str, pairing: str, dtype: str, regime: Regime) -> GenCase | None:
    try:
        spec = variant_spec(variant, pairing)
    except (ValueError, TypeError):
        return None
    if spec.pairing != pairing or not _fits(_spec_kind(spec), regime):
        return None
    if stage == "apply" and regime.kind not in ("shared", "rows"):
        return None
    shape = _shape(stage, spec, regime)
    tag = f"seq{regime.seq_len}" if stage == "inv_freq" else regime.tag
    case_id = f"{case_family(stage, spec)}/{variant}/{pairing}/{dtype}/{shape_tag(shape, stage, spec.head_dim)}/{tag}"
    return GenCase(case_id, stage, variant, spec, dtype, regime, light_case(case_id, stage, spec, dtype, regime))


def _rotate(items: list[str], start: int) -> list[str]:
    return items[start % len(items):] + items[: start % len(items)] if items else []


def _table_dtype(iface: Interface) -> list[str]:
    return [d for d in _FINEST if d in iface.dtypes][:1]


def _dtypes_for(iface: Interface, stage: str) -> list[str]:
    if stage in ("inv_freq", "cos_sin"):
        return _table_dtype(iface)
    return [d for d in DTYPES if d in iface.dtypes]


def _why_not(cls: BugClass, iface: Interface, blocked: set[str]) -> str:
    stages = sorted(cls.stages & iface.stages)
    if not stages:
        return f"the interface cannot express it: needs stage {' or '.join(s for s in STAGES if s in cls.stages)}"
    scal = {variant_scaling(p.spec) for p in cls.probes}
    if not scal & iface.scaling_types:
        return f"the interface cannot express it: needs scaling {' or '.join(sorted(scal))}"
    if blocked:
        return f"the interface cannot express it: needs {'; or '.join(sorted(blocked))}"
    return "the interface cannot express it: no declared case exposes it at the declared precision"


def plan_cases(backend: Any, *, per_stage: int = 1, ask_backend: bool = True) -> Plan:
    """The generated cases for ``backend`` (light, not materialized) and the expressibility of each class."""
    iface = Interface.of(backend)
    plan = Plan()
    seen: dict[str, GenCase] = {}
    pairings = [p for p in PAIRINGS if p in iface.pairings] or ["half"]

    def add(g: GenCase) -> None:
        seen.setdefault(g.id, g)

    def refusal(g: GenCase) -> str | None:
        """The backend's reason for declining ``g`` (counted), or None when it takes it; a supports()
        that raised counts as taken: the run asks again and reports the ERROR."""
        if not ask_backend:
            return None
        reason = supports_reason(backend, g.light)
        if reason is None or reason.startswith(SUPPORTS_RAISED):
            return None
        plan.refused[reason] += 1
        return reason

    # regime coverage (default spec)
    for stage in STAGES:
        if stage not in iface.stages or stage in ("inv_freq", "apply"):
            continue
        dts = _dtypes_for(iface, stage)
        for i, name in enumerate(COVERAGE_REGIMES):
            for j, dt in enumerate(dts if stage == "forward" else dts[i % max(len(dts), 1):][:1]):
                g = _make(stage, "default", pairings[(i + j) % len(pairings)], dt, REGIMES[name])
                if g is not None and iface.declares(g.light) is None and refusal(g) is None:
                    add(g)
    # both sides of every length switch (longrope: seq_len below, at and past L0; dynamic: at and past M)
    for stage in STAGES:
        if stage not in iface.stages or stage == "apply":
            continue
        dts = _dtypes_for(iface, stage)
        for variant, names in _SWITCHES.items():
            if variant_scaling(variant) not in iface.scaling_types or not dts:
                continue
            for i, name in enumerate(names):
                g = _make(stage, variant, pairings[i % len(pairings)], dts[i % len(dts)], REGIMES[name])
                if g is not None and iface.declares(g.light) is None and refusal(g) is None:
                    add(g)
    # class coverage
    for k, cls in enumerate(CATALOGUE):
        blocked: set[str] = set()
        declined: list[tuple[GenCase, str]] = []
        found = 0
        for stage in STAGES:
            if stage not in cls.stages or stage not in iface.stages:
                continue
            took = 0
            for probe in cls.probes:
                if took >= per_stage:
                    break
                if probe.stages and stage not in probe.stages:
                    continue
                if variant_scaling(probe.spec) not in iface.scaling_types:
                    blocked.add(f"scaling {variant_scaling(probe.spec)}")
                    continue
                chosen = None
                for dt in _rotate(_dtypes_for(iface, stage), k):
                    for pr in _rotate(pairings, k + len(stage)):
                        g = _make(stage, probe.spec, pr, dt, REGIMES[probe.regime])
                        if g is None:
                            if probe.spec.startswith("vision") and "half" not in iface.pairings:
                                blocked.add("pairing half (2-D vision)")
                            continue
                        why = iface.declares(g.light)
                        if why is not None:
                            blocked.add(why)
                            continue
                        if not cls.occurs_in(g.light) or not cls.exposed(case_facts(g.light, iface.precision(dt))):
                            continue
                        reason = refusal(g)
                        if reason is not None:
                            declined.append((g, reason))
                            continue
                        chosen = g
                        break
                    if chosen:
                        break
                if chosen is not None:
                    add(chosen)
                    took += 1
            found += took
        if found:
            plan.expressible[cls.id] = None
        elif declined:
            plan.expressible[cls.id] = None
            plan.declined[cls.id] = sorted({r for _, r in declined})
            add(declined[0][0])
        else:
            plan.expressible[cls.id] = _why_not(cls, iface, blocked)
    plan.cases = sorted(seen.values(), key=lambda g: (STAGES.index(g.stage), g.id))
    return plan


# ----------------------------------------------------------------------------- materialize


def _draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(numpy_dtype(dtype)).astype(np.float64)


def materialize_generated(g: GenCase) -> GoldenCase:
    """The full case: inputs from the id's own seeded generator, expected values by :mod:`roperef.reference`."""
    rng = np.random.default_rng(zlib.crc32(g.id.encode("utf-8")))
    spec, stage, reg = g.spec, g.stage, g.regime
    arrays: dict[str, np.ndarray] = {}
    if stage == "inv_freq":
        w, s = inv_freq(spec, reg.seq_len)
        arrays.update(seq_len=np.asarray(reg.seq_len, dtype=np.int64), inv_freq=np.ascontiguousarray(w), attention_factor=np.asarray(s))
    elif stage == "cos_sin":
        pos = reg.positions
        cos, sin = reference.cos_sin(spec, pos)
        arrays.update(positions=pos, cos=np.asarray(cos, dtype=np.float64), sin=np.asarray(sin, dtype=np.float64))
    else:
        shape = _shape(stage, spec, reg)
        x = _draw(rng, shape, g.dtype)
        pos, cu = reg.positions, reg.cu_seqlens
        if stage == "apply":
            cos, sin = reference.cos_sin(spec, pos)
            cos = cos.astype(numpy_dtype(g.dtype)).astype(np.float64)
            sin = sin.astype(numpy_dtype(g.dtype)).astype(np.float64)
            arrays.update(x=x, cos=cos, sin=sin, y=np.asarray(reference.apply(x, cos, sin, spec), dtype=np.float64))
        else:
            fn = getattr(reference, stage)
            out = np.asarray(fn(x, pos, spec, cu_seqlens=cu), dtype=np.float64)
            arrays.update({"x" if stage == "forward" else "grad": x, "positions": pos, "y" if stage == "forward" else "grad_x": out})
            if cu is not None:
                arrays["cu_seqlens"] = cu
    missing = [k for k in STAGE_OUTPUTS[stage] if k not in arrays]
    assert not missing, missing
    return GoldenCase(g.id, g.light.family, stage, spec, g.dtype, "smoke", ("generated",), arrays)


def generated_cases(backend: Any, exclude: Iterable[str] = ()) -> tuple[list[GoldenCase], Plan]:
    """The materialized generated cases of ``backend`` (ids in ``exclude`` skipped) and the plan."""
    plan = plan_cases(backend)
    skip = set(exclude)
    return materialize_all(g for g in plan.cases if g.id not in skip), plan


def materialize_all(items: Iterable[GenCase]) -> list[GoldenCase]:
    """Materialize several cases (NumPy only: nothing is compiled)."""
    return [materialize_generated(g) for g in items]
