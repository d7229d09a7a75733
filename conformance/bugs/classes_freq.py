"""Bug classes of frequencies and the attention factor (docs/spec.md section 3)."""

from __future__ import annotations

import math
from functools import partial
from typing import SupportsFloat, SupportsInt

import numpy as np

from roperef.frequencies import estimate_inv_freq, inv_freq, yarn_correction_range
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from .decoy import Decoy, protocol_seq_len
from .facts import CaseFacts
from .freqs import llama3_bands_swapped, llama3_smooth_in_wavelength, plain_spec, proportional_denominator, scaling_twice, with_scaling, yarn_ramp
from .model import BugClass, Family, Hints, Probe
from .rounding import round_to

__all__ = ["FREQ_CLASSES", "freq_visible"]

FREQ = frozenset({"inv_freq", "cos_sin", "forward", "backward"})
_SAME = 1e-4  # a fitted theta or factor within this relative distance of the spec's is not "another value"


def _kind(*kinds: str):
    return lambda s: s.vision is None and s.scaling.type in kinds


def _scaled(spec: RopeSpec) -> bool:
    return spec.vision is None and spec.scaling.type != "default"


def freq_visible(f: CaseFacts, bug: tuple[np.ndarray, float] | None) -> bool:
    """Whether frequencies/attention factor ``bug`` differ visibly from the spec's on this case:
    relative to the bound of the inv_freq stage, or as an angle ``|dw| * max|p|`` (and a gain
    ``|ds|``) against the bound of a rotated unit pair at the largest position."""
    if bug is None:
        return False
    w, s = inv_freq(f.spec, f.seq_len)
    wb, sb = np.asarray(bug[0], dtype=np.float64), float(bug[1])
    if wb.shape != w.shape:
        return True
    p = f.precision
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.where(w > 0, np.abs(np.log(np.where(w > 0, w, 1.0))), 0.0)
    rel = p.u_angle * (8.0 + logw + 20.0)
    gain = abs(sb - s) > 8.0 * abs(s) * (2.0 * p.u_out + 8.0 * p.u_angle)
    if f.stage == "inv_freq":
        return bool(gain or (np.abs(wb - w) > 8.0 * (w * (2.0 * p.u_out + rel))).any())
    if not (f.has_positions and f.any_nonzero):
        return False
    x = float(f.max_abs)
    const = 2.0 * p.u_out + 4.0 * p.u_table
    dphi = np.abs(wb - w) * x
    bound = const + x * np.maximum(w, wb) * rel
    return bool(gain or ((dphi > 8.0 * bound) & (dphi < 6.0)).any() or ((dphi >= 6.0) & (bound < 0.1)).any())


def _decoy_freqs(case_or_facts, d: Decoy | None) -> tuple[np.ndarray, float] | None:
    """The frequencies a decoy uses on a case (for the exposure rules)."""
    if d is None:
        return None
    spec = d.spec or case_or_facts.spec
    seq = case_or_facts.seq_len
    if d.seq_len is not None:
        seq = int(d.seq_len(seq))
    if d.freqs is not None:
        w, s = d.freqs(spec, seq)
    elif spec == case_or_facts.spec and seq == case_or_facts.seq_len:
        w, s = inv_freq(spec, seq)  # the case's own frequencies: exact and cached
    else:
        # another spec or length (a wrong theta, factor, length): whether the case could tell it is
        # decided with wide margins, so the float64 estimate (a few ulp, ~30x cheaper) is enough
        w, s = estimate_inv_freq(spec, seq)
    if d.scale is not None:
        s = d.scale(s)
    if d.round_freqs:
        w = round_to(d.round_freqs, w)
    return w, s


class _Shim:
    """The minimum of a case the decoy makers read when only facts are at hand."""

    def __init__(self, f: CaseFacts) -> None:
        self.spec, self.stage, self.seq_len = f.spec, "inv_freq", f.seq_len
        self.arrays = {"seq_len": np.asarray(f.seq_len)}


def _visible_with(make, param: object = None):
    def rule(f: CaseFacts) -> bool:
        try:
            d = make(_Shim(f), param)
            return freq_visible(f, _decoy_freqs(f, d))
        except (ValueError, TypeError, ZeroDivisionError, OverflowError):
            return False

    return rule


# --------------------------------------------------------------------------- decoy makers


def _inv_round(dtype: str):
    short = {"bfloat16": "bf16", "float16": "fp16"}[dtype]
    return lambda c, _: Decoy(f"inv_freq:{short}", f"inv_freq rounded to {dtype}", round_freqs=dtype)


def _denom(which: str):
    def make(case: GoldenCase, _: object) -> Decoy | None:
        spec = case.spec
        target = spec.head_dim if which == "head-dim" else spec.resolved_rotary_dim
        if spec.vision is not None or target == spec.freq_dim or spec.scaling.type == "proportional":
            return None
        try:
            other = spec.replace(freq_dim=target)
        except (ValueError, TypeError):
            return None
        name = "head dim" if which == "head-dim" else "rotary width"
        return Decoy(f"freq:denominator-{which}", f"frequency exponent denominator = {name} {target} instead of {spec.freq_dim}", spec=other)

    return make


_THETAS = (10000.0, 500000.0, 1000000.0, 100000.0, 5000000.0, 10000000.0, 1000.0)


def _theta_candidates(case: GoldenCase, hints: Hints) -> list[float]:
    t = case.spec.theta
    out = [x for x in (*_THETAS, 2 * t, t / 2) if abs(x - t) > 1e-9 * t]
    h = hints.get("theta")
    if isinstance(h, float) and math.isfinite(h) and h > 1 and abs(h - t) > 1e-6 * t:
        out.insert(0, h)
    return out


def _theta(case: GoldenCase, theta: SupportsFloat) -> Decoy | None:
    t = float(theta)
    if not (t > 1.0) or abs(t - case.spec.theta) <= _SAME * case.spec.theta:
        return None  # a theta this close is the fit absorbing rounding noise, not a wrong theta
    try:
        spec = case.spec.replace(theta=t)
    except (ValueError, TypeError):
        return None
    return Decoy("theta:wrong", f"rope_theta = {t:.6g} used instead of {case.spec.theta:.6g}"
                 + (" (silently defaulted)" if t == 10000.0 else ""), param=t, spec=spec)


def _dropped(case: GoldenCase, _: object) -> Decoy | None:
    plain = plain_spec(case.spec)
    if plain is None:
        return None
    return Decoy("scaling:dropped", f"{case.spec.scaling.type} scaling dropped (default frequencies used)", spec=plain)


def _twice(case: GoldenCase, _: object) -> Decoy:
    return Decoy("scaling:twice", f"{case.spec.scaling.type} scaling applied twice (frequency change squared)", freqs=scaling_twice)


def _factor_candidates(case: GoldenCase, hints: Hints) -> list[float]:
    f = float(case.spec.scaling.factor or 1.0)
    out = [f * f, math.sqrt(f), 2 * f, f / 2, 4 * f, f / 4, f + 1]
    h = hints.get("factor")
    if isinstance(h, float) and math.isfinite(h) and h > 0:
        out.insert(0, h)
    return [x for x in dict.fromkeys(out) if x >= 1.0 and abs(x - f) > 1e-9 * f]


def _factor(case: GoldenCase, value: SupportsFloat) -> Decoy | None:
    sc = case.spec.scaling
    v = float(value)
    spec = with_scaling(case.spec, factor=v)
    if spec is None or sc.factor is None or abs(v - sc.factor) <= _SAME * sc.factor:
        return None
    return Decoy("scaling:factor", f"{sc.type} factor {v:.6g} used instead of {sc.factor:.6g}", param=v, spec=spec)


def _att_missing(case: GoldenCase, _: object) -> Decoy:
    return Decoy("attention:missing", "attention factor missing (s = 1; gain 1 instead of s)", scale=lambda s: 1.0)


def _att_squared(case: GoldenCase, _: object) -> Decoy:
    return Decoy("attention:squared", "attention factor squared (s^2 applied to q and k each)", scale=lambda s: s * s)


def _dyn_candidates(case: GoldenCase, hints: Hints) -> list[int]:
    sc = case.spec.scaling
    m = sc.given_int("max_position_embeddings")
    seq = protocol_seq_len(case)
    out = [m, 2 * seq, seq + 1, max(seq - 1, 1), int(round(sc.given("factor") * m)), 2 * m, 4 * m, 4 * seq, 16 * seq]
    out += [m * 2**k for k in range(0, 23)]
    h = hints.get("dynamic_length")
    if isinstance(h, (int, np.integer)) and h > 0:
        out.insert(0, int(h))
    return [x for x in dict.fromkeys(out) if 1 <= x < 2**40 and max(x, m) != max(seq, m)]


def _dynamic(case: GoldenCase, length: SupportsInt) -> Decoy | None:
    seq, L = protocol_seq_len(case), int(length)
    m = case.spec.scaling.given_int("max_position_embeddings")
    if L < 1 or max(L, m) == max(seq, m):
        return None
    return Decoy("dynamic:length", f"dynamic NTK evaluated at seq_len {L} instead of {seq} (stale or static state)",
                 param=L, seq_len=lambda s: L)


def _longrope(which: str):
    def make(case: GoldenCase, _: object) -> Decoy | None:
        l0 = case.spec.scaling.given_int("original_max_position_embeddings")
        seq = protocol_seq_len(case)
        long_used = seq > l0
        if which == "swapped":
            new = 1 if long_used else l0 + 1
            words = f"longrope short and long factors swapped ({'short' if long_used else 'long'} factors at seq_len {seq}, L0={l0})"
        elif which == "always-long":
            new, words = l0 + 1, f"longrope always uses the long factors (seq_len {seq} <= L0={l0} needs the short ones)"
        elif which == "always-short":
            new, words = 1, f"longrope always uses the short factors (seq_len {seq} > L0={l0} needs the long ones)"
        else:
            new = l0 + 1 if seq >= l0 else seq
            words = f"longrope switches at seq_len >= L0 instead of > L0 (long factors at seq_len {seq} = L0)"
        if (new > l0) == long_used:
            return None
        return Decoy(f"longrope:{which}", words, seq_len=lambda s: new)

    return make


def _truncate(case: GoldenCase, _: object) -> Decoy | None:
    sc = case.spec.scaling
    now = sc.truncate is None or sc.truncate
    spec = with_scaling(case.spec, truncate=not now)
    if spec is None or yarn_correction_range(spec) == yarn_correction_range(case.spec):
        return None
    words = ("YaRN correction range not truncated (floor/ceil skipped) although truncate is on" if now
             else "YaRN correction range truncated (floor/ceil) although truncate=false")
    return Decoy("yarn:truncate-flipped", words, spec=spec)


def _range_candidates(case: GoldenCase, hints: Hints) -> list[int]:
    sc = case.spec.scaling
    l0, factor = sc.given_int("original_max_position_embeddings"), sc.given("factor")
    out = [int(round(factor * l0)), int(round(l0 / factor))] + [int(round(l0 * 2 ** (k / 2))) for k in range(-12, 13) if k]
    out.append(protocol_seq_len(case))
    return [x for x in dict.fromkeys(out) if x >= 2 and x != l0]


def _range(case: GoldenCase, length: SupportsInt) -> Decoy | None:
    sc = case.spec.scaling
    L = int(length)
    spec = with_scaling(case.spec, original_max_position_embeddings=L)
    if spec is None or yarn_correction_range(spec) == yarn_correction_range(case.spec):
        return None
    return Decoy("yarn:range-length", f"YaRN correction range computed with length {L} instead of "
                 f"original_max_position_embeddings={sc.original_max_position_embeddings}", param=L,
                 freqs=lambda s, n: (inv_freq(spec, n)[0], inv_freq(s, n)[1]))


def _ramp2j(case: GoldenCase, _: object) -> Decoy:
    return Decoy("yarn:ramp-2j", "YaRN ramp evaluated at 2j (the channel index) instead of the pair index j",
                 freqs=partial(yarn_ramp, index_scale=2.0))


def _ramp_inverted(case: GoldenCase, _: object) -> Decoy:
    return Decoy("yarn:ramp-inverted", "YaRN ramp inverted (high-frequency pairs divided by the factor, low ones kept)",
                 freqs=partial(yarn_ramp, inverted=True))


def _bands(case: GoldenCase, medium: object) -> Decoy:
    what = "the band between them divided by the factor" if medium == "divided" else "the band between them kept unscaled"
    return Decoy("llama3:bands-swapped", f"llama3 band edges swapped (L0/low_freq_factor and L0/high_freq_factor exchanged: {what})",
                 param=medium, freqs=partial(llama3_bands_swapped, medium=str(medium)))


def _smooth(case: GoldenCase, inverted: object) -> Decoy:
    words = "llama3 smoothing linear in the wavelength instead of in 1/wavelength"
    return Decoy("llama3:smooth-wavelength", words + (" (and running the other way)" if inverted else ""), param=bool(inverted) or None,
                 freqs=partial(llama3_smooth_in_wavelength, inverted=bool(inverted)))


def _prop_candidates(case: GoldenCase, hints: Hints) -> list[int]:
    w, _s = inv_freq(case.spec, 1)
    k = int(np.count_nonzero(w))
    d = case.spec.resolved_freq_dim
    return [x for x in dict.fromkeys([2 * k, k, d // 2, 2 * k + 2, 2 * k - 2, 2 * k + 1]) if x >= 2 and x != d]


def _prop(case: GoldenCase, denominator: SupportsInt | None) -> Decoy | None:
    w, _s = inv_freq(case.spec, 1)
    k = int(np.count_nonzero(w))
    den = int(denominator) if denominator is not None else 2 * k
    if k < 2 or den == case.spec.freq_dim:
        return None
    what = "the rotated width " if den == 2 * k else ""
    return Decoy("proportional:denominator", f"proportional exponent denominator = {what}{den} instead of d = {case.spec.freq_dim}",
                 param=den, freqs=partial(proportional_denominator, denominator=den))


def _theta_rule(f: CaseFacts) -> bool:
    other = 10000.0 if f.spec.theta != 10000.0 else 500000.0
    return _visible_with(_theta, other)(f)


def _attention(f: CaseFacts, factor: float) -> bool:
    s = f.attention_factor
    return f.stage != "apply" and abs(s * factor - s) > 0.02 * abs(s)


def _lr(f: CaseFacts, which: str) -> bool:
    l0 = f.spec.scaling.given_int("original_max_position_embeddings")
    seq = f.seq_len
    ok = {"swapped": True, "always-long": seq <= l0, "always-short": seq > l0, "boundary": seq == l0}[which]
    return ok and _visible_with(_longrope(which))(f)


#: one probe per scaling type, where its scaling matters
_SCALED_PROBES = tuple(Probe(k, "near4096") for k in ("linear", "ntk", "yarn", "llama3", "proportional")) + (
    Probe("dynamic", "past-M"), Probe("longrope", "past-L0"))

FREQ_CLASSES: tuple[BugClass, ...] = (
    BugClass("inv_freq:bf16", 6, "inv_freq rounded to bfloat16", FREQ, "inv_freq, cos_sin, forward, backward; every spec",
             "frequencies rounded to bfloat16", "any stage with frequencies (angles past ~64 rad in tensor stages)",
             Family(_inv_round("bfloat16")), _visible_with(_inv_round("bfloat16")), probes=(Probe("default", "near4096"),)),
    BugClass("inv_freq:fp16", 6, "inv_freq rounded to float16", FREQ, "inv_freq, cos_sin, forward, backward; every spec",
             "frequencies rounded to float16", "any stage with frequencies (angles past ~500 rad in tensor stages)",
             Family(_inv_round("float16")), _visible_with(_inv_round("float16")), probes=(Probe("default", "near4096"),)),
    BugClass("freq:denominator-head-dim", 3, "frequency exponent denominator = head dim instead of d", FREQ,
             "every stage with frequencies; partial rotary or odd d", "w_i = theta^(-2i/D)", "a partial or odd-width spec",
             Family(_denom("head-dim")), _visible_with(_denom("head-dim")),
             applies=lambda s: s.vision is None and s.freq_dim != s.head_dim and s.scaling.type != "proportional",
             probes=(Probe("partial", "near4096"), Probe("odd-width", "near4096"))),
    BugClass("freq:denominator-rotary-width", 3, "frequency exponent denominator = rotary width instead of an odd d", FREQ,
             "every stage with frequencies; odd exponent denominator (partial_rotary_factor)", "w_i = theta^(-2i/r)",
             "an odd-width spec", Family(_denom("rotary-width")), _visible_with(_denom("rotary-width")),
             applies=lambda s: s.vision is None and s.freq_dim != s.rotary_dim and s.scaling.type != "proportional",
             probes=(Probe("odd-width", "near4096"),)),
    BugClass("theta:wrong", 3, "rope_theta ignored or wrong (e.g. silently defaulted to 10000)", FREQ,
             "every stage with frequencies; plain and mRoPE specs", "frequencies with another theta, fitted",
             "any spec (a theta other than 10000 shows the silent default)", Family(_theta, _theta_candidates, "log"),
             _theta_rule, applies=lambda s: s.vision is None and s.n_pairs > 1,
             probes=(Probe("theta5e5", "near4096"),), parameter="theta", fallback=True),
    BugClass("scaling:dropped", 3, "the scaling type ignored (default frequencies)", FREQ, "every stage with frequencies; every scaling type",
             "default frequencies", "a scaled spec at positions where the scaling matters (dynamic: seq_len > M)",
             Family(_dropped), _visible_with(_dropped), applies=_scaled,
             probes=_SCALED_PROBES),
    BugClass("scaling:twice", 3, "the scaling applied twice (frequency change squared)", FREQ, "every stage with frequencies; every scaling type",
             "w_scaled^2 / w_default", "a scaled spec (dynamic: seq_len > M)", Family(_twice), _visible_with(_twice), applies=_scaled,
             probes=_SCALED_PROBES),
    BugClass("scaling:factor", 3, "the scaling factor wrong (another value than the config's)", FREQ,
             "every stage with frequencies; linear, dynamic, yarn, llama3", "the scaling with another factor, fitted",
             "a scaled spec", Family(_factor, _factor_candidates, "log"), _visible_with(_factor, 2.0),
             applies=_kind("linear", "dynamic", "yarn", "llama3"),
             probes=(Probe("linear", "near4096"), Probe("llama3", "near4096"), Probe("yarn", "near4096")), parameter="factor",
             fallback=True),
    BugClass("attention:missing", 3, "attention factor dropped (s = 1)", FREQ, "every stage with frequencies; yarn, longrope (s != 1)",
             "s = 1", "a spec with s != 1 (YaRN, longrope)", Family(_att_missing), lambda f: _attention(f, 1.0 / f.attention_factor),
             applies=_kind("yarn", "longrope"), probes=(Probe("yarn", "near4096"), Probe("longrope", "past-L0"))),
    BugClass("attention:squared", 3, "attention factor squared (s^2 on q and k each)", FREQ, "every stage with frequencies; yarn, longrope",
             "s^2", "a spec with s != 1", Family(_att_squared), lambda f: _attention(f, f.attention_factor),
             applies=_kind("yarn", "longrope"), probes=(Probe("yarn", "near4096"), Probe("longrope", "past-L0"))),
    BugClass("dynamic:length", 3, "dynamic NTK evaluated at another sequence length (stale or static state)", FREQ,
             "every stage with frequencies; dynamic", "dynamic NTK at another length, fitted", "a dynamic spec past M (or a stale longer length)",
             Family(_dynamic, _dyn_candidates, "log-int"), _visible_with(_dynamic, 1 << 22), applies=_kind("dynamic"),
             probes=(Probe("dynamic", "past-M"), Probe("dynamic", "at-M")), parameter="seq_len"),
    BugClass("longrope:swapped", 3, "longrope short and long factors swapped", FREQ, "every stage with frequencies; longrope",
             "the other factor list", "any longrope case", Family(_longrope("swapped")), lambda f: _lr(f, "swapped"),
             applies=_kind("longrope"), probes=(Probe("longrope", "below-L0"), Probe("longrope", "past-L0"))),
    BugClass("longrope:always-long", 3, "longrope always uses the long factors", FREQ, "every stage with frequencies; longrope",
             "long factors at every length", "seq_len <= L0", Family(_longrope("always-long")), lambda f: _lr(f, "always-long"),
             applies=_kind("longrope"), probes=(Probe("longrope", "below-L0"),)),
    BugClass("longrope:always-short", 3, "longrope always uses the short factors", FREQ, "every stage with frequencies; longrope",
             "short factors at every length", "seq_len > L0", Family(_longrope("always-short")), lambda f: _lr(f, "always-short"),
             applies=_kind("longrope"), probes=(Probe("longrope", "past-L0"),)),
    BugClass("longrope:boundary", 3, "longrope switches at seq_len >= L0 instead of > L0", FREQ, "every stage with frequencies; longrope",
             "long factors at seq_len = L0", "seq_len exactly L0", Family(_longrope("boundary")), lambda f: _lr(f, "boundary"),
             applies=_kind("longrope"), probes=(Probe("longrope", "at-L0"),)),
    BugClass("yarn:truncate-flipped", 3, "YaRN truncate ignored: range truncated when truncate=false, or not when it should be", FREQ,
             "every stage with frequencies; yarn", "the correction range with the other truncate",
             "a YaRN spec whose correction range is not integral",
             Family(_truncate), _visible_with(_truncate), applies=_kind("yarn"),
             probes=(Probe("yarn-notrunc", "near4096"), Probe("yarn", "near4096"))),
    BugClass("yarn:range-length", 3, "YaRN correction range computed from another length", FREQ, "every stage with frequencies; yarn",
             "the correction range at another original length, fitted", "a YaRN spec",
             Family(_range, _range_candidates), _visible_with(_range, 131072), applies=_kind("yarn"),
             probes=(Probe("yarn", "near4096"),), parameter="length"),
    BugClass("yarn:ramp-2j", 3, "YaRN ramp evaluated over 2j (channel index) instead of j", FREQ, "every stage with frequencies; yarn",
             "ramp((2j - low)/(high - low))", "a YaRN spec", Family(_ramp2j), _visible_with(_ramp2j), applies=_kind("yarn"),
             probes=(Probe("yarn", "near4096"),)),
    BugClass("yarn:ramp-inverted", 3, "YaRN ramp inverted (high frequencies divided by the factor)", FREQ, "every stage with frequencies; yarn",
             "blend weights 1 - ramp", "a YaRN spec", Family(_ramp_inverted), _visible_with(_ramp_inverted), applies=_kind("yarn"),
             probes=(Probe("yarn", "near4096"),)),
    BugClass("llama3:bands-swapped", 3, "llama3 band edges swapped (L0/a and L0/b exchanged)", FREQ, "every stage with frequencies; llama3",
             "w/f above L0/b, w below (or the band kept: the order of the tests)", "a llama3 spec with pairs in the smoothing band",
             Family(_bands, lambda c, h: ("divided", "kept")), _visible_with(_bands, "divided"),
             applies=_kind("llama3"), probes=(Probe("llama3", "near4096"),), parameter="test order"),
    BugClass("llama3:smooth-wavelength", 3, "llama3 smoothing linear in wavelength instead of 1/wavelength", FREQ,
             "every stage with frequencies; llama3", "sigma = (L0/a - lambda)/(L0/a - L0/b)", "a llama3 spec with pairs inside the smoothing band",
             Family(_smooth, lambda c, h: (None, True)), _visible_with(_smooth), applies=_kind("llama3"), probes=(Probe("llama3", "near4096"),)),
    BugClass("proportional:denominator", 3, "proportional (Gemma 4) exponent denominator = rotated width 2k instead of d (a config's head dim)", FREQ,
             "every stage with frequencies; proportional", "w_i = theta^(-i/k)", "a proportional spec",
             Family(_prop, _prop_candidates), _visible_with(_prop), applies=_kind("proportional"), probes=(Probe("proportional", "near4096"),),
             parameter="denominator"),
)
