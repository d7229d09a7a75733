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
  with the class so that classes meet every pairing and dtype;
- *the shape sweep* (:mod:`conformance.generated.shapes`): tokens per row on both sides of every
  power of two up to 1024 and 4097, 1 to 9 heads, 1, 3 or 5 batch rows, 1 to 65 pairs in full and
  partial windows, the declared layouts and call forms, combined pairwise; empty inputs; more
  than 4096 rows.

A generated case's id is ``family/variant/pairing/dtype/shape/tag`` like a golden's (the tag
names the regime and its offsets), so ``--filter ID`` selects it; its inputs are drawn from
its own generator seeded by the CRC-32 of the id, and its expected values come from the NumPy
reference :mod:`roperef.reference` (no files; bit-identical to :mod:`roperef.fast` and as fast on
cases this small: the Numba twin is never judged against itself, and nothing is compiled).
The backend's ``supports`` is asked too: when every declared
case of a class is declined, one declined case is kept so the report says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roperef.spec import PAIRINGS, RopeSpec

from ..bugs.catalogue import CATALOGUE
from ..bugs.exposure_cache import ExposureCache
from ..bugs.facts import case_facts
from ..bugs.model import BugClass
from ..calls.declared import Interface
from ..calls.stage_call import SUPPORTS_RAISED, SupportsAsker
from ..cases.case import GoldenCase, case_family, shape_tag
from ..vocabulary import DTYPES, STAGES
from .gencase import GenCase, light_case, materialize_all, materialize_generated, tensor_shape
from .positions import COVERAGE_REGIMES, REGIMES, Regime
from .shapes import sweep_cases
from .specs import variant_scaling, variant_spec

__all__ = ["Interface", "GenCase", "Plan", "plan_cases", "materialize_generated", "materialize_all", "generated_cases", "light_case"]

_SWITCHES = {"longrope": ("below-L0", "at-L0", "past-L0"), "dynamic": ("at-M", "past-M")}
_FINEST = ("float64", "float32", "float16", "bfloat16")


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


def _make(stage: str, variant: str, pairing: str, dtype: str, regime: Regime) -> GenCase | None:
    try:
        spec = variant_spec(variant, pairing)
    except (ValueError, TypeError):
        return None
    if spec.pairing != pairing or not _fits(_spec_kind(spec), regime):
        return None
    if stage == "apply" and regime.kind not in ("shared", "rows"):
        return None
    shape = tensor_shape(stage, spec, regime)
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


def plan_cases(backend: Any, *, per_stage: int = 1, ask_backend: bool = True, shapes: bool = True,
               exposure: ExposureCache | None = None) -> Plan:
    """The generated cases for ``backend`` (light, not materialized) and the expressibility of each class;
    ``shapes``: with the shape sweep (:mod:`conformance.generated.shapes`); ``exposure``: the exposure
    rules' answers remembered between runs (:mod:`conformance.bugs.exposure_cache`; None: computed)."""
    exposed = exposure.exposed if exposure is not None else (lambda cls, facts: cls.exposed(facts))
    iface = Interface.of(backend)
    plan = Plan()
    seen: dict[str, GenCase] = {}
    pairings = [p for p in PAIRINGS if p in iface.pairings] or ["half"]

    def add(g: GenCase) -> None:
        seen.setdefault(g.id, g)

    asker = SupportsAsker(backend)  # supports() asked in a call thread, under a time limit

    def refusal(g: GenCase) -> str | None:
        """The backend's reason for declining ``g`` (counted), or None when it takes it; a supports()
        that raised counts as taken: the run asks again and reports the ERROR."""
        if not ask_backend:
            return None
        reason = asker.reason(g.light)
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
                        if not cls.occurs_in(g.light) or not exposed(cls, case_facts(g.light, iface.precision(dt))):
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
    # the shape sweep: tokens, heads, batch rows, pairs, layouts and call forms (pairwise)
    if shapes:
        for g in sweep_cases(iface):
            if iface.declares(g.light) is None and refusal(g) is None:
                add(g)
    plan.cases = sorted(seen.values(), key=lambda g: (STAGES.index(g.stage), g.id))
    return plan


def generated_cases(backend: Any, exclude: Iterable[str] = ()) -> tuple[list[GoldenCase], Plan]:
    """The materialized generated cases of ``backend`` (ids in ``exclude`` skipped) and the plan."""
    plan = plan_cases(backend)
    skip = set(exclude)
    return materialize_all(g for g in plan.cases if g.id not in skip), plan
