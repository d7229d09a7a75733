"""Run-level diagnosis: one verdict over all the FAILs of a run.

Each FAIL names its own likely cause; on a real bug those can differ from case to case (a
llama3 band bug looks like "scaling applied twice" on one case and "tables bf16" on another).
The run-level verdict looks at all of them together:

- *consensus*: the bug classes whose decoy matches every failing case (or the most);
- *pattern*: which case properties separate the failing cases from the passing ones (scaling
  type, pairing, dtype, stage, spec kind, position regime): "every llama3 case fails, nothing else";
- *per-pair profile*: the wavelengths ``2*pi/w`` of the pairs over their bound in failing cases
  against those within it: "errors only on pairs with wavelength between 2048 and 8192";
- *per-position profile*: the worst error/bound per position: errors only past a threshold
  (256, 2048, 65504...), growing with the position, or constant;
- *measured operator*: the findings (axis and pattern, :mod:`conformance.diagnose.findings`) the
  failing cases share: "12 of 12 failing cases measure position/wrap";
- *IMPRECISE* cases: how many, by which precision mechanism, and what they would pass with.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..cases.case import GoldenCase
from .runner import RunReport

__all__ = ["run_verdict", "write_verdict_plot"]

_FAILED = ("FAIL", "XFAIL")


def _props(case: GoldenCase) -> dict[str, str]:
    spec = case.spec
    kind = "mRoPE" if spec.mrope_section is not None else "2-D vision" if spec.vision is not None else \
        "partial rotary" if spec.resolved_rotary_dim < spec.head_dim else "full rotary"
    regime = case.id.rsplit("/", 1)[-1]
    return {"scaling": spec.scaling.type, "pairing": spec.pairing, "dtype": case.dtype, "stage": case.stage,
            "spec kind": kind, "positions": regime, "family": case.family}


_ATTRS = ("scaling", "spec kind", "pairing", "stage", "dtype", "family", "positions")


def _pattern(results: list[Any], by_id: dict[str, GoldenCase]) -> list[str]:
    judged = [(r, by_id[r.id]) for r in results if r.id in by_id and r.status in ("PASS", "FAIL", "XFAIL", "XPASS")]
    failing = {r.id for r, _ in judged if r.status in _FAILED}
    if not failing:
        return []
    if len(failing) == len(judged):
        return [f"every judged case fails ({len(failing)})"]
    for attr in _ATTRS:
        groups: dict[str, set[str]] = {}
        for r, c in judged:
            groups.setdefault(_props(c)[attr], set()).add(r.id)
        all_fail = sorted(v for v, ids in groups.items() if ids <= failing)
        if all_fail and len(all_fail) < len(groups) and set().union(*(groups[v] for v in all_fail)) == failing:
            if len(all_fail) == 1:
                return [f"every {attr}={all_fail[0]} case fails, nothing else ({len(failing)} cases)"]
            return [f"every case with {attr} in {{{', '.join(all_fail)}}} fails, nothing else ({len(failing)} cases)"]
    for attr in _ATTRS[:5]:
        vals = Counter(_props(by_id[i])[attr] for i in failing)
        if len(vals) == 1 and len({_props(c)[attr] for _, c in judged}) > 1:
            (v,) = vals
            total = sum(1 for _, c in judged if _props(c)[attr] == v)
            return [f"all failing cases have {attr}={v} ({len(failing)} of the {total} judged {attr}={v} cases fail)"]
    return []


def _band(fails: list[Any]) -> str | None:
    bad: list[float] = []
    good: list[float] = []
    for r in fails:
        prof = (r.diagnosis or {}).get("profile")
        if not prof:
            continue
        for ratio, lam in zip(prof["ratio"], prof["wavelength"]):
            if math.isfinite(lam):
                (bad if ratio > 1 else good).append(lam)
    if not bad:
        return None
    lo, hi = min(bad), max(bad)
    if not good:
        return "errors on every pair (all frequencies)"
    inside = [g for g in good if lo <= g <= hi]
    if inside:
        return f"errors on pairs with wavelengths {lo:.4g} to {hi:.4g}, mixed with pairs within their bound"
    below = sorted({round(g, 6) for g in good if g < lo})
    above = sorted({round(g, 6) for g in good if g > hi})
    side = " (all of them shorter)" if below and not above else " (all of them longer)" if above and not below else ""
    return (f"errors only on pairs with unscaled wavelength 2*pi/w in [{lo:.4g}, {hi:.4g}]; the {len(below) + len(above)} "
            f"distinct wavelength(s) outside that range are within their bound{side}")


def _pairs(fails: list[Any], by_id: dict[str, GoldenCase]) -> list[str]:
    """The per-pair profile per spec family (pairs only compare within one scaling's parameters)."""
    groups: dict[str, list[Any]] = {}
    for r in fails:
        case = by_id.get(r.id)
        key = "" if case is None else ", ".join(
            f"{k}={v}" for k, v in case.spec.scaling.to_dict().items() if k not in ("short_factor", "long_factor"))
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:3]:
        words = _band(rs)
        if words:
            out.append(f"{key or 'cases'} ({len(rs)} failing): {words}")
    return out


def _positions(fails: list[Any]) -> str | None:
    pts: list[tuple[float, float]] = []
    for r in fails:
        m = r.metrics
        if m is None or m.profile_positions is None or m.profile_ratios is None:  # set together (tolerance.compare)
            continue
        pts += list(zip(m.profile_positions, m.profile_ratios))
    if len(pts) < 3:
        return None
    p = np.abs(np.array([x for x, _ in pts], dtype=np.float64))
    q = np.array([y for _, y in pts], dtype=np.float64)
    over = q > 1
    if not over.any():
        return None
    first = float(p[over].min())
    n_below = int(np.sum(~over & (p < first)))
    if n_below:
        past = next((t for t in (256, 2048, 4096, 65504, 2**20, 2**24) if p[p < first].max() <= t < first), None)
        words = f"errors only at |position| >= {int(first)}: the {n_below} smaller position(s) are within their bound"
        if past:
            words += f" (a threshold past {past})"
        if np.any(~over & (p > first)):
            words += "; some larger positions pass too"
        return words
    fin = over & np.isfinite(q) & (p > 0)
    if fin.sum() >= 4 and np.ptp(np.log(p[fin])) > 1.0:
        slope = float(np.polyfit(np.log(p[fin]), np.log(q[fin]), 1)[0])
        if slope > 0.5:
            return f"error/bound grows with the position (~ p^{slope:.2g}) across positions {int(p[fin].min())}..{int(p[fin].max())}"
        if abs(slope) <= 0.3:
            return "error/bound about constant over positions (not a position-precision effect)"
    return f"errors at every position from {int(first)} to {int(p[over].max())}"


def _split_by_attribute(fails: list[Any], by_id: dict[str, GoldenCase], counts: Counter) -> str | None:
    """"positions:bf16 explains every dtype=bfloat16 FAIL, positions:fp16 every dtype=float16 FAIL" when the
    named classes partition the failing cases along one case property."""
    explained = {k: {r.id for r in fails if k in ((r.diagnosis or {}).get("matches") or [])} for k, _ in counts.most_common(4)}
    all_ids = {r.id for r in fails}
    for attr in _ATTRS:
        parts = []
        for k, ids in explained.items():
            vals = {_props(by_id[i])[attr] for i in ids if i in by_id}
            if len(vals) == 1:
                (v,) = vals
                same = {r.id for r in fails if r.id in by_id and _props(by_id[r.id])[attr] == v}
                if same == ids:
                    parts.append((k, v))
        covered = set().union(*(explained[k] for k, _ in parts)) if parts else set()
        if len(parts) > 1 and covered == all_ids:
            return "the cause follows " + attr + ": " + ", ".join(f"{k} explains every {attr}={v} FAIL" for k, v in parts)
    return None


def _measured(fails: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The (axis, pattern) of the findings the failing cases share, most common first."""
    counts: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for r in fails:
        seen = set()
        for f in (r.diagnosis or {}).get("findings") or []:
            key = (f["axis"], f["pattern"])
            if key not in seen:
                seen.add(key)
                counts[key] += 1
                example.setdefault(key, f["words"])
    n = len(fails)
    data = [{"axis": a, "pattern": p, "cases": c, "example": example[(a, p)]} for (a, p), c in counts.most_common(4)]
    words = [f"{d['cases']} of {n} failing case(s) measure {d['axis']}/{d['pattern']} (e.g. {d['example']})" for d in data[:2]]
    return words, data


def _imprecise(report: RunReport) -> tuple[list[str], dict[str, Any] | None]:
    rs = [r for r in report.results if r.status == "IMPRECISE"]
    if not rs:
        return [], None
    mech: Counter[str] = Counter()
    needed: dict[str, float] = {}  # profile constant -> the largest value any IMPRECISE case needs
    for r in rs:
        pv = (r.diagnosis or {}).get("precision") or {}
        mech[pv.get("mechanism", "a precision mechanism")] += 1
        for p in pv.get("passes_with", []):
            if p.startswith("--tol ") and "=" in p:
                key, _, rest = p[len("--tol "):].partition("=")
                try:
                    needed[key] = max(needed.get(key, 0.0), float(rest.split(" ", 1)[0]))
                except ValueError:
                    continue
    text = ", ".join(f"{m} ({k})" for m, k in mech.most_common())
    every = sorted(k for k in needed if all(any(p.startswith(f"--tol {k}=") for p in ((x.diagnosis or {}).get("precision") or {})
                                                  .get("passes_with", [])) for x in rs))
    tail = (f"; all of them would pass with {' or '.join(f'--tol {k}={needed[k]:.3g}' for k in every)}" if every else "")
    words = [f"{len(rs)} case(s) IMPRECISE, by {text}{tail}"]
    return words, {"count": len(rs), "mechanisms": dict(mech), "passes_with": {f"--tol {k}": needed[k] for k in every}}


def run_verdict(report: RunReport, cases: Iterable[GoldenCase]) -> dict[str, Any] | None:
    """The run-level diagnosis (None when nothing failed and nothing is IMPRECISE)."""
    fails = [r for r in report.results if r.status in _FAILED]
    imp_words, imprecise = _imprecise(report)
    if not fails:
        if imprecise is None:
            return None
        return {"failing": 0, "consensus": [], "named": {}, "words": imp_words, "summary": "; ".join(imp_words),
                "measured": [], "imprecise": imprecise}
    by_id = {c.id: c for c in cases}
    counts: Counter[str] = Counter()
    for r in fails:
        diagnosis = r.diagnosis or {}
        for m in diagnosis.get("matches", []) or ([diagnosis["match"]] if diagnosis.get("match") else []):
            counts[m] += 1
    n = len(fails)
    words: list[str] = []
    everywhere = sorted(k for k, v in counts.items() if v == n)
    if len(everywhere) == 1:
        words.append(f"every failing case is explained by {everywhere[0]}")
    elif everywhere:
        words.append(f"every failing case is explained by each of: {', '.join(everywhere)}")
    elif counts:
        split = _split_by_attribute(fails, by_id, counts)
        if split:
            words.append(split)
        else:
            top = ", ".join(f"{k} ({v} of {n})" for k, v in counts.most_common(3))
            words.append(f"no single bug class explains every failing case; most named: {top}")
    else:
        words.append(f"no known bug class matches any of the {n} failing cases")
    words += _pattern(report.results, by_id)
    words += _pairs(fails, by_id)
    pos = _positions(fails)
    if pos:
        words.append(pos)
    m_words, measured = _measured(fails)
    words += m_words + imp_words
    return {
        "failing": n,
        "consensus": everywhere,
        "named": dict(counts.most_common()),
        "words": words,
        "summary": "; ".join(words),
        "measured": measured,
        "imprecise": imprecise,
    }


def write_verdict_plot(report: RunReport, path: str) -> str | None:
    """A PNG of the run's error profile: worst error/bound per pair wavelength and per position over the FAILs."""
    fails = [r for r in report.results if r.status in _FAILED]
    if not fails:
        return None
    import matplotlib  # lazy: optional (roperef[plot]), needed for --plot only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: after choosing the Agg backend

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for r in fails:
        prof = (r.diagnosis or {}).get("profile")
        if prof:
            lam = np.array(prof["wavelength"], dtype=np.float64)
            ok = np.isfinite(lam)
            a1.plot(lam[ok], np.maximum(np.array(prof["ratio"])[ok], 1e-3), ".", ms=3)
        m = r.metrics
        if m is not None and m.profile_positions and m.profile_ratios is not None:  # set together (tolerance.compare)
            a2.plot(np.maximum(np.abs(m.profile_positions), 1), np.maximum(m.profile_ratios, 1e-3), ".", ms=3)
    for ax, label in ((a1, "pair wavelength 2*pi/w"), (a2, "|position|")):
        ax.axhline(1.0, color="red", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("max |error| / bound")
    fig.suptitle(f"{report.backend}: {len(fails)} failing case(s)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
