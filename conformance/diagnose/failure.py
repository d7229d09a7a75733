"""Everything said about one FAIL beyond its numbers, and whether it is a FAIL or IMPRECISE.

Called by :func:`conformance.judge.runner.judge_case` on every case over its bound
(:func:`failure_verdict`):

1. **precision** (:mod:`.precision`): a FAIL within a small factor of its bound that a precision
   mechanism reproduces is IMPRECISE, unless a catalogue decoy of a semantic class reproduces it
   too (then it stays a FAIL: a semantic bug is never swallowed);
2. **the operator measured** from the case's own data (:mod:`.operator`) and, when the backend can be
   called again, by **probing** it once per failing group (:mod:`.probe`);
3. **decoys** of the catalogue (:mod:`.likely_bug`). A class is named only when its decoy reproduces
   the output within the declared precision and nothing measured contradicts it: probing found
   state, cross-head/token dependence, non-linearity or head-dependent maps (no decoy has those), or
   the fitted parameter is not one a config or a real engine would hold (:func:`implausible`);
4. the **summary**: the named cause, or what was measured and which section of docs/spec.md it
   contradicts; never a "closest" guess.

The per-pair profile (the worst error/bound of each pair, with the pair's wavelength ``2*pi/w``)
feeds the run-level verdict (:mod:`conformance.judge.verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.layout import pair_map

from ..bugs.catalogue import BY_ID
from ..bugs.decoy import budget, run_decoy
from ..bugs.facts import Precision, case_facts
from ..bugs.freqs import plain_spec
from ..cases.case import GoldenCase
from ..error_model.expected import attention_divisor, divide_rotated
from ..error_model.tolerance import Profile, Resolved, position_rows
from .declaration import declaration_hints
from .findings import Finding
from .likely_bug import diagnose
from .operator import measure_operator
from .precision import MAX_FACTOR, ROUNDING_CLASSES, PrecisionVerdict, precision_verdict, shift_like_growth
from .probe import ProbeResult
from .samples import case_seq_len
from .separate import separating_case

__all__ = ["explain_failure", "pair_profile", "failure_verdict", "precision_note", "implausible", "Prober", "UNDESCRIBED_AXES"]

#: ``prober(case, outputs, bound, resolved) -> (ProbeResult, reused) | None``: the runner's access to probing
Prober = Callable[[GoldenCase, Mapping[str, np.ndarray], Mapping[str, np.ndarray], Resolved], "tuple[ProbeResult, bool] | None"]
#: measured properties no decoy of the catalogue has: a decoy matching the output is not named when one is found
UNDESCRIBED_AXES = frozenset({"state", "dependence", "linearity", "head"})
#: on the head axis, the patterns that are such a property (a small deviation on one head is not)
_HEAD_PATTERNS = frozenset({"copied", "heads-differ", "head-dependent", "identity", "zero"})


def pair_profile(case: GoldenCase, outputs: Mapping[str, np.ndarray], exp: Mapping[str, np.ndarray],
                 bnd: Mapping[str, np.ndarray]) -> dict[str, list[float]] | None:
    """``{"ratio": [...], "wavelength": [...]}``: per pair, the worst |error|/bound and the wavelength
    2*pi/w of its *unscaled* frequency (the quantity llama3 bands and YaRN ramps are defined on)."""
    if case.stage not in ("cos_sin", "forward", "backward", "inv_freq"):
        return None
    name = next(iter(exp))
    with np.errstate(all="ignore"):
        err = np.abs(np.asarray(outputs[name], dtype=np.float64) - exp[name])
        ratio = np.where(err == 0, 0.0, err / bnd[name])
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    spec = case.spec
    if case.stage == "inv_freq":
        per = ratio
        seq = int(np.asarray(case.arrays["seq_len"]))
    elif case.stage == "cos_sin":
        per = np.maximum(ratio, np.abs(np.asarray(outputs["sin"], dtype=np.float64) - exp["sin"]) / bnd["sin"]).reshape(-1, spec.n_pairs).max(axis=0)
        seq = max(int(position_rows(spec, case.arrays["positions"]).max()) + 1, 1)
    else:
        pm = pair_map(spec) if case.stage == "forward" else pair_map(spec).transposed()
        per = np.maximum(ratio[..., pm.out_a], ratio[..., pm.out_b]).reshape(-1, spec.n_pairs).max(axis=0)
        seq = max(int(position_rows(spec, case.arrays["positions"]).max()) + 1, 1)
    base = plain_spec(spec) if spec.scaling.type not in ("default", "proportional") else spec
    w, _ = inv_freq(base or spec, seq)
    lam = [2 * math.pi / float(x) if x > 0 else math.inf for x in w]
    return {"ratio": [float(x) for x in per], "wavelength": lam}


def _round_number(v: float, digits: int = 3, rel: float = 1e-4) -> bool:
    """``v`` is within ``rel`` (the precision of a fit) of a number with at most ``digits`` significant decimal
    digits, or of a power of two times such a number."""
    if not math.isfinite(v) or v == 0:
        return False
    a = abs(v)
    for base in (a, a / 2 ** round(math.log2(a))):
        e = math.floor(math.log10(base)) - (digits - 1)
        m = base / 10**e
        if abs(m - round(m)) <= rel * m:
            return True
    return False


def implausible(match: str, param: Any, spec_theta: float | None = None, seq_len: int | None = None,
                static_lengths: tuple[int, ...] = ()) -> str | None:
    """Why a fitted parameter is not one a config or an engine would hold (None: plausible). ``spec_theta``,
    ``seq_len``, ``static_lengths``: the case's theta, length and the lengths a static dynamic-NTK policy uses."""
    if param is None:
        return None
    if match == "positions:shifted":
        k = int(param)
        if abs(k) >= 128 and abs(k) & (abs(k) - 1) == 0:
            return (f"a shift by {k} on every token is also what a table indexed modulo {abs(k)} (or a tile/cache offset) "
                    "does on these positions")
        return None
    if match in ("theta:wrong", "scaling:factor") and isinstance(param, (int, float)) and not _round_number(float(param)):
        return f"the fitted {'theta' if match == 'theta:wrong' else 'factor'} {float(param):.6g} is not a value a config holds"
    if match == "theta:wrong" and isinstance(param, (int, float)) and spec_theta and spec_theta > 1 and float(param) > 1:
        q = math.log(float(param)) / math.log(spec_theta)
        for power, what in ((0.5, "i/d instead of 2i/d"), (2.0, "4i/d instead of 2i/d")):
            if abs(q - power) < 1e-4:
                return (f"the fitted theta {float(param):.6g} is theta^{power:g}: the exponent {what} gives the same frequencies "
                        "(not a config value)")
    if match == "dynamic:length" and seq_len and isinstance(param, (int, float)):
        if int(param) < seq_len and int(param) not in static_lengths:
            return (f"a dynamic length {int(param)} shorter than the case's own {seq_len} is neither a stale longer length nor "
                    "the static f*M: the dynamic formula itself differs")
    return None


def _round_values(v: float) -> list[float]:
    """Round numbers near ``v``: 1 to 3 significant digits, and powers of two times 1, 1.5 or 3."""
    out = []
    for digits in (1, 2, 3):
        e = math.floor(math.log10(abs(v))) - (digits - 1)
        out.append(round(v / 10**e) * 10**e)
    for m in (1.0, 1.5, 3.0):
        out.append(m * 2.0 ** round(math.log2(abs(v) / m)))
    return sorted(set(out), key=lambda x: abs(x - v))


def _round_match(case: GoldenCase, outputs: Mapping[str, np.ndarray], r: Resolved, divisor: float, class_id: str,
                 param: float) -> float | None:
    """A round value of a fitted theta or factor whose decoy reproduces the output as well (a fit on a coarse
    output lands near, not on, the config's value), or None."""
    cls = BY_ID.get(class_id)
    if cls is None or not math.isfinite(param) or param == 0:
        return None
    for v in _round_values(param)[:4]:
        if abs(v - param) > 0.05 * abs(param):
            continue
        try:
            d = cls.family.make(case, v)
            if d is None:
                continue
            with np.errstate(all="ignore"):
                run = run_decoy(case, d, r)
            out, bnd = run.outputs, run.bound
            if divisor != 1.0:
                out, bnd = divide_rotated(case, out, divisor), divide_rotated(case, bnd, divisor)
            if budget(outputs, out, bnd) <= 1.0:
                return float(v)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError):
            continue
    return None


def _gate(case: GoldenCase, diag: dict[str, Any], findings: list[Finding], outputs: Mapping[str, np.ndarray], r: Resolved,
          divisor: float) -> str | None:
    """Why the matched class must not be named (None: it may)."""
    match = diag.get("match")
    if not match:
        return None
    odd = [f for f in findings if f.axis in UNDESCRIBED_AXES and (f.axis != "head" or f.pattern in _HEAD_PATTERNS)]
    if odd:
        return f"the operator also has what no decoy has ({odd[0].words})"
    if len(diag.get("matches") or []) == 1:
        param = next((c.get("param") for c in diag.get("candidates", []) if c["name"] == match), None)
        sc = case.spec.scaling
        static = tuple(int(v) for v in (sc.max_position_embeddings, (sc.factor or 1) * (sc.max_position_embeddings or 0)) if v)
        if match in ("theta:wrong", "scaling:factor") and isinstance(param, (int, float)) and not _round_number(float(param)):
            near = _round_match(case, outputs, r, divisor, match, float(param))
            if near is None:
                return implausible(match, param, case.spec.theta, case_seq_len(case), static)
            diag["round_value"] = near  # the config's value that reproduces the output as well as the fit
            param = near
        return implausible(match, param, case.spec.theta, case_seq_len(case), static)
    return None


def _returns_input(case: GoldenCase, outputs: Mapping[str, np.ndarray]) -> bool:
    """A tensor case whose output equals its input on every element."""
    if case.stage not in ("apply", "forward", "backward"):
        return False
    name, out = ("grad", "grad_x") if case.stage == "backward" else ("x", "y")
    x, y = np.asarray(case.arrays[name], dtype=np.float64), np.asarray(outputs[out], dtype=np.float64)
    return x.shape == y.shape and bool(np.array_equal(x, y))


def _single_position(case: GoldenCase) -> float | None:
    """The one non-zero position every token of a tensor or table case has (None: several, or none)."""
    pos = case.arrays.get("positions")
    if pos is None:
        return None
    vals = np.unique(np.asarray(position_rows(case.spec, pos), dtype=np.float64))
    return float(vals[0]) if vals.size == 1 and vals[0] != 0 else None


#: rows no longer than this many tokens cannot tell "offsets ignored" from a restart every kernel tile (tiles are 8-128 tokens)
SHORT_ROWS = 64


def _longest_row(case: GoldenCase) -> int:
    """The most tokens of one batch row (or packed sequence) of a tensor or table case (0: no positions)."""
    a = case.arrays
    if "cu_seqlens" in a:
        return int(np.max(np.diff(np.asarray(a["cu_seqlens"])), initial=0))
    pos = a.get("positions")
    if pos is None:
        return 0
    shape = np.shape(pos)[1:] if case.spec.n_axes > 1 else np.shape(pos)
    return int(shape[-1]) if shape else 1


def _one_token_rows(case: GoldenCase) -> bool:
    """Every batch row (or packed sequence) of a tensor or table case holds one token (decode steps)."""
    a = case.arrays
    if "cu_seqlens" in a:
        return bool(np.all(np.diff(np.asarray(a["cu_seqlens"])) == 1))
    pos = a.get("positions")
    if pos is None or case.spec.n_axes != 1:
        return False
    return np.ndim(pos) == 2 and np.shape(pos)[-1] == 1


#: findings that say little on their own (said after the specific ones and the probes')
_WEAK = frozenset({"mixed", "unexplained", "heads-differ", "small-deviation", "table"})


def _measured_words(findings: list[Finding], limit: int = 3) -> list[str]:
    ranked = sorted(findings, key=lambda f: (f.pattern in _WEAK, f.probe, f.axis in ("gain",)))
    out = []
    for f in ranked[:limit]:
        out.append(f"{f.words} [docs/spec.md section {f.section}]")
    if len(findings) > limit:
        out.append(f"and {len(findings) - limit} more finding(s)")
    return out


def explain_failure(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, r: Resolved,
                    exp: Mapping[str, np.ndarray], bnd: Mapping[str, np.ndarray], out_dtype: Any, *,
                    probe: Prober | None = None, precision: PrecisionVerdict | None = None,
                    hints: list[str] | None = None) -> dict[str, Any]:
    """The diagnosis dict of a FAIL (see :func:`conformance.diagnose.likely_bug.diagnose`) plus ``profile``,
    ``findings`` (the measured operator, data-only and probed), ``operator``, ``probe`` and ``precision``."""
    if hints is None:
        hints = declaration_hints(case, outputs, caps, profile, out_dtype)
    notes: list[str] = []
    try:
        measured = measure_operator(case, outputs, exp, bnd, r)
    except (ValueError, FloatingPointError, IndexError, ZeroDivisionError, np.linalg.LinAlgError) as exc:
        measured = None
        notes.append(f"the operator could not be measured: {type(exc).__name__}: {exc}")
    findings: list[Finding] = list(measured.findings) if measured else []
    probed = probe(case, outputs, bnd, r) if probe is not None else None
    if probed is not None:
        findings += probed[0].findings
    words = _measured_words(findings)
    if not words and measured is not None and measured.notes:
        words = [f"{measured.notes[0]}: a small deviation, not a different rotation"]
    diag = diagnose(case, outputs, r, exp, divisor=attention_divisor(case, caps), hints=hints, separate=separating_case,
                    measured=words)
    prof = pair_profile(case, outputs, exp, bnd)
    if prof is not None:
        diag["profile"] = prof
    local = [f for f in findings if f.pattern in ("shift", "per-row") and f.axis in ("row", "token", "head")]
    if diag.get("match") == "positions:shifted" and len(diag.get("matches") or []) == 1 and local:
        # the decoy shifts every token; the case measures the shift only on some (the others are not resolved, or
        # differ): both explain it, so it is a tie between the decoy and what was measured, not a named cause
        cand = next(c for c in diag["candidates"] if c["name"] == "positions:shifted")
        diag["match"] = None
        diag["ambiguous"] = {"class": "positions:shifted", "measured": local[0].words}
        diag["summary"] = (f"likely cause, one of: {cand['words']} on every token (positions:shifted, budget {cand['budget']:.3g}); "
                           f"or a shift only where it is measured: {local[0].words} [docs/spec.md section {local[0].section}]")
    if diag.get("match") and _returns_input(case, outputs):
        # the output is the input, bit for bit: whatever decoy reproduces that (positions all 0, rows not rotated) is
        # as much a cause as a rotation that never ran on these heads and tokens (a kernel's loop or tile bound)
        named = [c for c in diag["candidates"] if c["name"] in (diag.get("matches") or [])]
        diag["match"] = None
        diag["ambiguous"] = {"class": named[0]["name"], "measured": "the input returned unchanged"}
        diag["summary"] = ("likely cause, one of: " + "; ".join(f"{c['words']} ({c['name']}, budget {c['budget']:.3g})" for c in named)
                           + "; or the rotation not applied at all: every (token, head) returns its input unchanged, which "
                           "these give too; a case with other positions, heads or lengths tells them apart")
    one = _single_position(case)
    if diag.get("match") == "positions:shifted" and len(diag.get("matches") or []) == 1 and one:
        # every token at one position p: a shift by k is the same operator as every angle scaled by (p + k) / p
        cand = next(c for c in diag["candidates"] if c["name"] == "positions:shifted")
        k = cand.get("param")
        ratio = f"{(one + float(k)) / one:.6g}" if isinstance(k, (int, float)) else "(p + k) / p"
        scaled = next((f for f in findings if f.axis in ("angle", "frequency") and f.pattern in ("doubled", "tripled", "uniform")), None)
        diag["match"] = None
        diag["ambiguous"] = {"class": "positions:shifted", "measured": scaled.words if scaled else f"every angle x{ratio}"}
        diag["summary"] = (f"likely cause, one of: {cand['words']} (positions:shifted, budget {cand['budget']:.3g}); or every angle "
                           f"scaled by {ratio}" + (f" ({scaled.words})" if scaled else "") + f": with every token at position "
                           f"{one:g} these are the same operator; a case with several positions tells them apart")
    if (diag.get("match") == "scaling:factor" and case.spec.scaling.type == "linear"
            and len(diag.get("matches") or []) == 1):
        # a linear factor changes every frequency by one ratio: the same operator as doubled angles or scaled positions
        cand = next(c for c in diag["candidates"] if c["name"] == "scaling:factor")
        uniform = next((f for f in findings if (f.axis, f.pattern) in (("frequency", "uniform"), ("position", "scaled"))
                        or (f.axis == "angle" and f.pattern in ("doubled", "tripled"))), None)
        diag["match"] = None
        diag["ambiguous"] = {"class": "scaling:factor", "measured": uniform.words if uniform else "a uniform frequency ratio"}
        diag["summary"] = (f"likely cause, one of: {cand['words']} (scaling:factor, budget {cand['budget']:.3g}); or every angle "
                           f"scaled by one ratio ({uniform.words if uniform else 'a uniform frequency ratio'}): for linear "
                           "scaling these are the same operator")
    zeroish = {"positions:zero", "positions:offsets-ignored"}
    if diag.get("match") in zeroish and set(diag.get("matches") or []) <= zeroish and _one_token_rows(case):
        # one token per row: position 0 on every token is also what positions relative to each row's (or tile's) first
        # token, or a tail of every row left unrotated, give
        named = [c for c in diag["candidates"] if c["name"] in (diag.get("matches") or [])]
        diag["match"] = None
        diag["ambiguous"] = {"class": named[0]["name"], "measured": "one token per row"}
        diag["summary"] = ("likely cause, one of: " + "; ".join(f"{c['words']} ({c['name']}, budget {c['budget']:.3g})" for c in named)
                           + "; or positions taken relative to each row's (or tile's) first token, or the rows' last tokens left "
                           "unrotated: with one token per row these are the same; a case with several tokens per row tells them apart")
    elif (diag.get("match") == "positions:offsets-ignored" and set(diag.get("matches") or []) <= zeroish
            and 1 < _longest_row(case) <= SHORT_ROWS):
        # every row at most a kernel tile long: positions counted from each row's first token are also what positions
        # restarting every tile of K >= T tokens give
        named = [c for c in diag["candidates"] if c["name"] in (diag.get("matches") or [])]
        diag["match"] = None
        diag["ambiguous"] = {"class": named[0]["name"], "measured": f"rows of at most {_longest_row(case)} tokens"}
        diag["summary"] = ("likely cause, one of: " + "; ".join(f"{c['words']} ({c['name']}, budget {c['budget']:.3g})" for c in named)
                           + f"; or positions restarting at 0 every tile of K tokens, for any K >= {_longest_row(case)} (the "
                           "longest row here): a case with longer rows tells them apart")
    why_not = _gate(case, diag, findings, outputs, r, attention_divisor(case, caps))
    if why_not:
        named = diag["match"]
        diag["not_named"] = {"class": named, "why": why_not}
        diag["match"], diag["matches"] = None, []
        budget = next((c["budget"] for c in diag["candidates"] if c["name"] == named), math.nan)
        diag["summary"] = (f"not named: the output matches decoy {named} on this case (budget {budget:.3g}) but {why_not}. "
                           "The output itself says: " + "; ".join(words))
    diag["findings"] = [f.to_dict() for f in findings]
    diag["operator"] = measured.to_dict() if measured else None
    if probed is not None:
        diag["probe"] = probed[0].to_dict(reused=probed[1])
        diag["summary"] += (f" [probed: {probed[0].calls} extra call(s) for this failing group"
                            f"{', reused from ' + probed[0].first_case if probed[1] else ''}]")
    else:
        diag["probe"] = None
    diag["precision"] = precision.to_dict() if precision else None
    if notes:
        diag.setdefault("notes", []).extend(notes)
    return diag


def _exposes(class_id: str, case: GoldenCase, caps: Any) -> bool:
    """Whether the catalogue's exposure rule says this case shows class ``class_id`` as a bug at the declared
    precision (a rounding class matching where its rule holds is a bug there, not a precision warning)."""
    cls = BY_ID.get(class_id)
    if cls is None or not cls.occurs_in(case):
        return False
    prec = Precision.of(str(getattr(caps, "angle_dtype", "float64")), str(getattr(caps, "table_dtype", "float64")), case.dtype)
    return bool(cls.exposed(case_facts(case, prec)))


def precision_note(pv: PrecisionVerdict) -> str:
    """``precision mechanism frequency-drift (passes with --tol c_log=3.2 ...)``: the short form for a message."""
    return f"precision mechanism {pv.mechanism}" + (f" (passes with {' or '.join(pv.passes_with)})" if pv.passes_with else "")


def _ambiguous(diag: dict[str, Any], named: str, weak: PrecisionVerdict) -> None:
    """Neither the decoy ``named`` nor the precision mechanism ``weak`` is named: on this case they are the same output."""
    cand = next(c for c in diag["candidates"] if c["name"] == named)
    diag["match"], diag["matches"] = None, []
    diag["ambiguous"] = {"class": named, "measured": weak.mechanism}
    diag["summary"] = (f"likely cause, one of: {cand['words']} ({named}, budget {cand['budget']:.3g}); or a precision "
                       f"mechanism, {weak.mechanism} ({weak.words.split(': ', 1)[-1]}): on these positions they give "
                       "the same output; a case at smaller positions tells them apart")


def failure_verdict(case: GoldenCase, outputs: Mapping[str, np.ndarray], caps: Any, profile: Profile, r: Resolved,
                    exp: Mapping[str, np.ndarray], bnd: Mapping[str, np.ndarray], out_dtype: Any, fail_budget: float, *,
                    diagnose: bool = True, probe: Prober | None = None) -> tuple[str, dict[str, Any] | None, str]:
    """``(status, diagnosis, note)`` of a case over its bound: ``"IMPRECISE"`` when a precision mechanism
    reproduces it and no semantic decoy does, else ``"FAIL"``; the diagnosis when ``diagnose``; ``note``:
    the mechanism in a few words (IMPRECISE only)."""
    hints = declaration_hints(case, outputs, caps, profile, out_dtype) if diagnose or fail_budget <= MAX_FACTOR else []
    pv = precision_verdict(case, outputs, exp, bnd, r, caps, fail_budget, attention_divisor(case, caps), hints)
    if not diagnose:
        return ("IMPRECISE", None, precision_note(pv)) if pv else ("FAIL", None, "")
    diag = explain_failure(case, outputs, caps, profile, r, exp, bnd, out_dtype, probe=probe if pv is None else None,
                           precision=pv, hints=hints)
    if pv is None:
        if diag.get("match") and len(diag.get("matches") or []) == 1 and diag["match"] not in ROUNDING_CLASSES:
            weak = precision_verdict(case, outputs, exp, bnd, r, caps, fail_budget, attention_divisor(case, caps), hints,
                                     verify_growth=False)
            if weak is not None and not _exposes(diag["match"], case, caps):
                _ambiguous(diag, diag["match"], weak)
        return "FAIL", diag, ""
    matched = [c for c in diag.get("candidates", []) if c["name"] in (diag.get("matches") or [])]
    shown = [c for c in matched if _exposes(c["name"], case, caps)]
    clearly = [c for c in matched if c["name"] not in ROUNDING_CLASSES and c["budget"] <= 0.5 * pv.model_budget]
    if not shown and clearly and clearly[0]["name"] == "positions:shifted":
        # a uniform relative angle error eps at positions near P is a shift of eps P on every pair: where the shift
        # fits as well as an angle growth does, the two cannot be told apart on this case
        weak = shift_like_growth(case, outputs, exp, bnd, r, caps, attention_divisor(case, caps), hints)
        if weak is not None:
            diag["precision"] = None
            _ambiguous(diag, "positions:shifted", weak)
            return "FAIL", diag, ""
    if shown or clearly:
        c = (shown or clearly)[0]
        why = "the catalogue's rule says this case exposes it as a bug" if shown else "it reproduces the output clearly better"
        if probe is not None:  # a FAIL after all: probed like any other (state, dependence may still unname the decoy)
            diag = explain_failure(case, outputs, caps, profile, r, exp, bnd, out_dtype, probe=probe, precision=None, hints=hints)
            if diag.get("match") != c["name"]:
                return "FAIL", diag, ""
        diag["precision"] = None
        diag["summary"] += (f" (a precision mechanism, {pv.mechanism}, also reproduces it with budget {pv.model_budget:.3g}, but decoy "
                            f"{c['name']} matches and {why}: a FAIL)")
        return "FAIL", diag, ""
    tail = f"; passes with {' or '.join(pv.passes_with)}" if pv.passes_with else ""
    semantic = [c for c in matched if c["name"] not in ROUNDING_CLASSES]
    if semantic:
        names = ", ".join(f"{c['name']} (budget {c['budget']:.3g})" for c in semantic)
        diag["not_named"] = {"class": semantic[0]["name"], "why": "a precision mechanism reproduces the output as well"}
        diag["match"], diag["matches"] = None, []
        diag["summary"] = (f"{pv.words}{tail}. Decoys {names} would also reproduce this case (its bound is too loose to tell them "
                           f"from {pv.mechanism}, model budget {pv.model_budget:.3g}): not named; other cases tell them apart")
    else:
        diag["summary"] = pv.words + tail + ". " + diag["summary"]
    return "IMPRECISE", diag, precision_note(pv)
