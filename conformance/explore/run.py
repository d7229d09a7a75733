"""Explore mode: judge a backend on random cases drawn within its declared interface.

``roperef check --explore N --seed S`` draws case ``i`` (``0 <= i < N``) from
``np.random.default_rng(S + i)`` (:mod:`conformance.explore.draw`), so the run is
deterministic given the seed, and case ``i`` alone is ``--explore 1 --seed S+i``.
A draw outside the backend's declared capabilities is drawn again (it cannot happen by
construction, but a spec may imply a feature); a draw the backend then declines through
``supports()`` (a case inside what it declared) is counted with its reason and drawn
again, up to :data:`MAX_DRAWS` times, after which the case is NOT_SUPPORTED.

Each case is judged exactly like a golden case (:func:`conformance.judge.runner.run_one`: the
tolerance model, the output checks, the diagnosis). On a FAIL or ERROR the case is shrunk
(:mod:`conformance.explore.shrink`) to a minimal case that still fails the same way; the
report then holds the minimal case (its message names the draw it came from) and a
:class:`Finding` records both. :func:`save_cases` writes minimal cases as a golden set
(:mod:`conformance.golden.store`) that ``roperef check --golden DIR`` replays.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..calls.stage_call import SupportsAsker
from ..cases.case import GoldenCase
from ..error_model.tolerance import Profile, default_profile_name, get_profile
from ..golden.store import MANIFEST, load_golden, write_golden
from ..judge.runner import FAILING, CaseResult, RunOptions, RunReport, open_caller, run_one
from .draw import Draw, build_case, declared_reason, draw_case
from .shrink import shrink
from .specs import Interface

__all__ = ["ExploreConfig", "Finding", "ExploreOutcome", "explore", "save_cases", "MAX_COUNT", "MAX_SEED", "MAX_DRAWS"]

#: the largest --explore count (about an hour of small cases on a fast backend)
MAX_COUNT = 100_000
#: seeds are 0 <= S and S + N - 1 <= MAX_SEED (NumPy seeds are unsigned; 2^63 - 1 keeps them printable)
MAX_SEED = 2**63 - 1
#: draws per case before the case is NOT_SUPPORTED (the backend declined every one)
MAX_DRAWS = 25
#: backend calls allowed to shrink one failing case
MAX_SHRINK_CALLS = 200


@dataclass(frozen=True)
class ExploreConfig:
    """How many cases, from which seed; ``dtypes`` restricts the drawn dtypes (``--dtype``)."""

    count: int
    seed: int
    dtypes: tuple[str, ...] = ()
    max_draws: int = MAX_DRAWS
    max_shrink_calls: int = MAX_SHRINK_CALLS


@dataclass
class Finding:
    """A failing draw and the minimal case it shrank to."""

    index: int
    seed: int
    original: CaseResult
    minimal: CaseResult
    case: GoldenCase
    draw: Draw
    steps: int
    calls: int
    exhausted: bool
    saved_to: str | None = None
    replay: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "seed": self.seed,
            "original_id": self.original.id,
            "original_message": self.original.message,
            "minimal_id": self.minimal.id,
            "status": self.minimal.status,
            "shrink_steps": self.steps,
            "shrink_calls": self.calls,
            "shrink_budget_exhausted": self.exhausted,
            "spec": self.case.spec.to_dict(),
            "shape": list(self.draw.tensor.shape) if self.draw.tensor is not None else None,
            "positions": self.draw.positions.tolist() if self.draw.positions is not None and self.draw.positions.size <= 64 else None,
            "seq_len": self.draw.seq_len,
            "diagnosis": (self.minimal.diagnosis or {}).get("summary"),
            "repro": self.minimal.repro,
            "saved_to": self.saved_to,
            "replay": self.replay,
        }


@dataclass
class ExploreOutcome:
    """The run as a :class:`RunReport` (one result per drawn case) plus what explore adds."""

    config: ExploreConfig
    interface: Interface
    report: RunReport
    findings: list[Finding] = field(default_factory=list)
    declined: Counter = field(default_factory=Counter)
    outside: int = 0

    def info(self) -> dict[str, Any]:
        """The ``golden`` (case source) object of the JSON report (docs/report-schema.md)."""
        return {
            "directory": None,
            "set_hash": None,
            "source": "explore",
            "selected": len(self.report.results),
            "explore": {
                "count": self.config.count,
                "seed": self.config.seed,
                "dtypes": list(self.interface.dtypes),
                "declined_draws": dict(self.declined),
                "outside_interface_draws": self.outside,
                "findings": [f.to_dict() for f in self.findings],
            },
        }


def _profile(options: RunOptions, backend: Any) -> Profile:
    if isinstance(options.profile, Profile):
        return options.profile
    return get_profile(options.profile, options.tolerance_overrides, default=default_profile_name(backend.capabilities))


def explore(
    backend: Any,
    config: ExploreConfig,
    options: RunOptions | None = None,
    *,
    selector: str | None = None,
    repro: Callable[[int], str] | None = None,
    progress: Callable[[CaseResult], None] | None = None,
) -> ExploreOutcome:
    """Draw, judge and shrink ``config.count`` cases on ``backend`` (see the module docstring).

    ``repro(seed)`` gives the command that replays one case; ``selector`` is needed with
    ``options.isolate``. Raises ValueError when the declared interface admits no case at all.
    """
    options = options or RunOptions()
    iface = Interface.of(backend, config.dtypes)
    why = iface.empty_reason()
    if why:
        raise ValueError(f"explore: nothing to draw: {why}")
    profile = _profile(options, backend)
    call, close = open_caller(backend, options, selector)
    asker = SupportsAsker(backend, options.timeout)  # the planner's questions, in a call thread under the limit
    out = ExploreOutcome(config, iface, RunReport(
        backend=str(getattr(backend, "name", selector or "backend")),
        capabilities=backend.capabilities.to_dict() if hasattr(backend.capabilities, "to_dict") else {},
        profile=profile.to_dict(),
    ))
    t0 = time.perf_counter()

    def judge(draw: Draw, suffix: str = "") -> tuple[GoldenCase, CaseResult] | None:
        """Judge ``draw``; None when it is outside what the backend takes (asked on a probe without
        expected values, so a declined draw costs no reference computation)."""
        probe = build_case(draw, suffix, expected=False)
        if declared_reason(iface, probe) or asker.reason(probe):
            return None
        case = build_case(draw, suffix)
        return case, run_one(case, backend, call, profile, options)

    try:
        for i in range(config.count):
            seed = config.seed + i
            result = _one(i, seed, asker, iface, config, judge, out)
            if repro is not None:
                result.repro = repro(seed)
                if out.findings and out.findings[-1].index == i:
                    out.findings[-1].original.repro = result.repro
            out.report.results.append(result)
            if progress:
                progress(result)
    finally:
        close()
        asker.close()
    out.report.seconds = time.perf_counter() - t0
    return out


def _one(index: int, seed: int, asker: SupportsAsker, iface: Interface, config: ExploreConfig,
         judge: Callable[..., tuple[GoldenCase, CaseResult] | None], out: ExploreOutcome) -> CaseResult:
    rng = np.random.default_rng(seed)
    last: tuple[GoldenCase, str] | None = None
    for _ in range(config.max_draws):
        draw = draw_case(rng, iface, seed)
        probe = build_case(draw, expected=False)
        if declared_reason(iface, probe):
            out.outside += 1
            continue
        reason = asker.reason(probe)
        if reason:
            out.declined[reason] += 1
            last = (probe, reason)
            continue
        judged = judge(draw)
        assert judged is not None  # (the probe was accepted just above)
        case, result = judged
        if result.status not in FAILING:
            return result
        found = shrink(draw, case, result, lambda d: judge(d, "-min"), iface.pairings, iface.scaling_types,
                       max_calls=config.max_shrink_calls)
        minimal = found.result
        if found.steps:
            minimal.message = f"{minimal.message} [minimal case; drawn as {result.id}]"
        out.findings.append(Finding(index, seed, result, minimal, found.case, found.draw, found.steps, found.calls,
                                    found.exhausted))
        return minimal
    if last is None:
        return CaseResult(id=f"explore/seed{seed}", family="forward", stage=iface.stages[0], dtype=iface.dtypes[0],
                          status="NOT_SUPPORTED", message=f"{config.max_draws} draws all fell outside the declared interface")
    case, reason = last
    return CaseResult(
        id=case.id, family=case.family, stage=case.stage, dtype=case.dtype, status="NOT_SUPPORTED",
        message=f"the backend declined {config.max_draws} draws within its declared interface; last reason: {reason}",
        flags=tuple(case.flags),
    )


def save_cases(cases: Iterable[GoldenCase], directory: str | Path) -> Path:
    """Write ``cases`` into the golden set at ``directory`` (created, or merged into the set already
    there: same ids are replaced). Raises :class:`conformance.golden.store.GoldenError` for a damaged set
    or a directory holding stray ``.npz`` files."""
    directory = Path(directory)
    merged: dict[str, GoldenCase] = {}
    existing = (directory / MANIFEST).is_file()
    if existing:
        merged.update({c.id: c for c in load_golden(directory).cases})
    merged.update({c.id: c for c in cases})
    write_golden(merged.values(), directory, force=existing, tier="smoke")
    return directory

