"""The error model of the judge: a bound per output element, from named profiles (data).

For a rotated pair ``(a, b)`` with exact angle ``phi = p*w`` (the reference's float64
angle of the case's integer position) and attention factor ``s``, every output element
of the pair must satisfy::

    |y_backend - y_exact| <= s*(|x_a| + |x_b|) * (c_out*u_out + c_tab*u_tab
                                                   + u_ang*|phi|*(c_ang + c_log*|ln w| + c_blend*kappa)) + floor

- ``u_out``: unit roundoff of the dtype the backend *returned*;
- ``u_tab``: unit roundoff of the backend's cos/sin table and multiply dtype
  (``Capabilities.table_dtype``; ``"input"`` = the case dtype), but never smaller than
  ``u_ang`` (cos/sin are evaluated in the angle dtype; an fp32-angle engine casting its
  tables to float64 inputs still has float32 tables);
- ``u_ang``: unit roundoff of the dtype its ``inv_freq`` and angles are computed in;
- ``floor = c_floor * smallest_subnormal(max(out, table dtype))``: only matters where
  the pair is zero or subnormal (an exact zero pair must give exactly zero).

Pass-through channels must be bit-exact: their bound is ``floor``.

Derivation of the constants (u = unit roundoff of the dtype each step runs in):

- ``c_out = 2``: the final rounding of ``y`` to the output dtype is ``<= u_out*|y|`` and
  ``|y| <= s*(|x_a|+|x_b|)`` (equality nearly reached when one of ``x_a, x_b`` is tiny), plus
  1 u of margin for the double rounding compute dtype -> output dtype and the small errors
  already in ``y`` before that rounding (measured: budgets up to 0.96 with ``c_out = 1``).
- ``c_tab = 4``: ``cos``/``sin`` rounded to the table dtype (1 u), the two products and
  the sum/difference in that dtype (at most 2 u of ``|x_a c|+|x_b s|`` plus 1 u of
  ``|y|``): ``3u*s*(|x_a|+|x_b|)``, plus 1 u for a library cos/sin that is not
  correctly rounded.
- ``c_ang = 8``, ``c_log = 1``: an angle error ``d`` moves the pair by at most
  ``s*(|x_a|+|x_b|)*|d|``. In a float32 engine ``|d|/|phi|`` collects: the position
  rounded to float32 (1 u, exact below 2^24), ``w_i = 1/theta^(2i/d)``: the exponent
  ``2i/d`` rounded (relative ``u*e``, which ``pow`` turns into ``u*e*ln(theta) =
  u*|ln w_i|``: the ``c_log`` term), ``pow`` itself (<= 2 u), the reciprocal (1 u), the
  scaling arithmetic (YaRN/llama3 blends, longrope/linear divisions: <= 3 u), and the
  product ``p*w`` (1 u): 8 u in all.
- ``c_blend = 1`` times ``kappa`` (per pair, :func:`conformance.error_model.conditioning.blend_conditioning`):
  YaRN and llama3 blend ``w0`` with ``w0/f`` through a weight ``t``; a rounding of ``t``
  is amplified by ``(1 - 1/f)/g`` where ``g = w/w0`` can be as small as ``1/f``. ``kappa``
  is that amplification times the count of roundings feeding ``t`` (0 for other scalings
  and for clamped pairs). Without it a correct float32 YaRN (truncate off, factor 32) fails.
- ``c_floor = 4``: up to three products/sums that underflow, each off by half a subnormal step.

So a correct float32 engine passes at position 2^20 (budget typically < 0.3), while
positions or ``w`` rounded to bfloat16 (relative error up to 2^-9, i.e. 2^15 float32
units) fail by orders of magnitude, and an O(1e-2) error at position ~5000 on a unit
input is above the bound (``8 * 2^-24 * 5000 ~ 2.4e-3`` per unit of pair magnitude).

Other stages (documented analogues):

- ``cos_sin``: the pair magnitude is 1 (a table is the rotation of a unit vector):
  ``|cos_b - s*cos(phi)| <= s*(c_out*u_out + c_tab*u_tab + u_ang*|phi|*(c_ang + c_log*|ln w| + c_blend*kappa)) + floor``.
- ``apply``: tables are given, no angle term: ``m*(c_out*u_out + c_tab*u_tab) + floor``
  with ``m = sqrt(cos^2 + sin^2)*(|x_a|+|x_b|)``.
- ``inv_freq``: relative: ``|w_b - w| <= w*(c_out*u_out + u_ang*(c_ang + c_log*|ln w| + c_blend*kappa)) + floor``;
  the attention factor: ``|s_b - s| <= s*(c_out*u_out + c_ang*u_ang) + floor``.
- ``backward``: as forward with the incoming gradient in place of ``x`` (same angles).

Profiles are data (:data:`PROFILES`); a custom profile is a TOML file with the same keys
(``[profile]`` table or top level) or ``KEY=VALUE`` overrides. ``angle_dtype`` /
``table_dtype`` may be ``"backend"`` (take the backend's declared capabilities),
``"input"`` (tables only: the case dtype) or a dtype name.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from roperef.errors import bad
from roperef.frequencies import inv_freq as ref_inv_freq
from roperef.json_input import JSONInputError, read_text_file
from roperef.layout import pair_axes, pair_map
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..vocabulary import DTYPES
from .conditioning import blend_conditioning

__all__ = [
    "PROFILES",
    "ignored_declaration",
    "Profile",
    "Metrics",
    "unit_roundoff",
    "get_profile",
    "default_profile_name",
    "Resolved",
    "resolve",
    "bounds",
    "pair_coefficients",
    "compare",
    "case_angles",
    "position_rows",
    "UNINFORMATIVE_C",
    "admitted_error",
]

#: Unit roundoff u = 2^-(mantissa bits + 1) per dtype name.
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
SMALLEST_SUBNORMAL = {"float64": 2.0**-1074, "float32": 2.0**-149, "float16": 2.0**-24, "bfloat16": 2.0**-133}

#: The default constants, derived in the module docstring; every profile starts from them.
CONSTANTS: dict[str, float] = {"c_out": 2.0, "c_tab": 4.0, "c_ang": 8.0, "c_log": 1.0, "c_blend": 1.0, "c_floor": 4.0}

#: The named profiles (data). ``strict`` assumes float64 angles; ``fp32-angles`` is the default
#: for engines that compute angles in float32 (or declare bf16/fp16 tables).
PROFILES: dict[str, dict[str, Any]] = {
    "strict": {
        "description": "angles in float64 (a float64 engine, or one with exact two-term angles)",
        "angle_dtype": "float64",
        "table_dtype": "backend",
        **CONSTANTS,
    },
    "fp32-angles": {
        "description": "inv_freq and angles in float32; tables as the backend declares",
        "angle_dtype": "float32",
        "table_dtype": "backend",
        **CONSTANTS,
    },
    "backend": {
        "description": "angle and table dtypes exactly as the backend declares",
        "angle_dtype": "backend",
        "table_dtype": "backend",
        **CONSTANTS,
    },
}

_NUMBER_KEYS = tuple(CONSTANTS)


def unit_roundoff(dtype: npt.DTypeLike) -> float:
    """u of a dtype (name or NumPy dtype); bfloat16 via its name."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in UNIT_ROUNDOFF:
        bad("dtype", name, f"no unit roundoff known; expected one of {', '.join(UNIT_ROUNDOFF)}")
    return UNIT_ROUNDOFF[name]


@dataclass(frozen=True)
class Profile:
    """A named set of tolerance constants (see the module docstring for their meaning)."""

    name: str
    angle_dtype: str = "backend"
    table_dtype: str = "backend"
    c_out: float = CONSTANTS["c_out"]
    c_tab: float = CONSTANTS["c_tab"]
    c_ang: float = CONSTANTS["c_ang"]
    c_log: float = CONSTANTS["c_log"]
    c_blend: float = CONSTANTS["c_blend"]
    c_floor: float = CONSTANTS["c_floor"]
    description: str = ""

    def __post_init__(self) -> None:
        for key in _NUMBER_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                bad(f"profile {self.name}: {key}", value, "must be a finite number >= 0")
            object.__setattr__(self, key, float(value))
        if self.angle_dtype not in ("backend", *DTYPES):
            bad(f"profile {self.name}: angle_dtype", self.angle_dtype, f"expected backend or one of {', '.join(DTYPES)}")
        if self.table_dtype not in ("backend", "input", *DTYPES):
            bad(f"profile {self.name}: table_dtype", self.table_dtype, f"expected backend, input or one of {', '.join(DTYPES)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _profile_from_mapping(name: str, data: Mapping[str, Any], source: str) -> Profile:
    known = {f.name for f in fields(Profile)} - {"name"}
    for key in data:
        if key not in known:
            bad(f"{source}: {key}", data[key], f"unknown profile key; expected one of {', '.join(sorted(known))}")
    return Profile(name=name, **dict(data))


def _load_toml(path: Path) -> Profile:
    try:
        data = tomllib.loads(read_text_file(path, what="profile file", max_bytes=2**20))
    except FileNotFoundError:
        bad("--profile", str(path), "file not found")
    except JSONInputError as exc:  # a FIFO, a directory, too large, not UTF-8
        bad("--profile", str(path), str(exc).removeprefix(f"{path}: "))
    except RecursionError:
        bad("--profile", str(path), "is nested too deeply to parse")
    except tomllib.TOMLDecodeError as exc:
        bad("--profile", str(path), f"is not valid TOML ({exc})")
    table = data.get("profile", data)
    if not isinstance(table, Mapping):
        bad(f"{path}: profile", table, "must be a table")
    table = dict(table)
    base = table.pop("base", None)
    name = str(table.pop("name", path.stem))
    start: dict[str, Any] = {}
    if base is not None:
        if base not in PROFILES:
            bad(f"{path}: base", base, f"unknown profile; expected one of {', '.join(PROFILES)}")
        start = dict(PROFILES[base])
    start.update(table)
    return _profile_from_mapping(name, start, str(path))


def _parse_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        bad("--tol", text, "must be KEY=VALUE (e.g. c_ang=16)")
    key, value = (t.strip() for t in text.split("=", 1))
    if key in _NUMBER_KEYS:
        try:
            return key, float(value)
        except ValueError:
            bad(f"--tol {key}", value, "must be a number")
    if key in ("angle_dtype", "table_dtype"):
        return key, value
    bad("--tol", key, f"unknown key; expected one of {', '.join((*_NUMBER_KEYS, 'angle_dtype', 'table_dtype'))}")


def get_profile(name: str | None, overrides: Sequence[str] | Mapping[str, Any] = (), *, default: str = "backend") -> Profile:
    """A profile by name (:data:`PROFILES`), by TOML path (``*.toml``), or ``default``; then overrides."""
    name = name or default
    if name in PROFILES:
        profile = _profile_from_mapping(name, PROFILES[name], f"profile {name}")
    elif name.endswith(".toml") or Path(name).is_file():
        profile = _load_toml(Path(name))
    else:
        bad("--profile", name, f"unknown profile; expected one of {', '.join(PROFILES)} or a .toml file")
    items = dict(overrides) if isinstance(overrides, Mapping) else dict(_parse_override(t) for t in overrides)
    if items:
        profile = replace(profile, name=f"{profile.name}+custom", **items)
    return profile


def ignored_declaration(capabilities: Any, profile: Profile) -> tuple[str, ...]:
    """Sentences for the report header when ``profile`` judges with an angle or table dtype other than
    the one ``capabilities`` declare (the declaration is then ignored for that dtype): e.g. the default
    profile of an engine declaring ``angle_dtype="bfloat16"`` is ``fp32-angles``, which judges its
    angles as float32; ``--profile backend`` judges the declared dtypes."""
    notes = []
    for key in ("angle_dtype", "table_dtype"):
        used, declared = getattr(profile, key), getattr(capabilities, key, None)
        if used != "backend" and declared is not None and used != declared:
            notes.append(f"declared {key}={declared} is ignored by profile {profile.name}, which judges "
                         f"{key.split('_')[0]}s as {used}; --profile backend judges the declared dtype")
    return tuple(notes)


def default_profile_name(capabilities: Any) -> str:
    """``strict`` for a float64-angle backend, else ``fp32-angles``."""
    return "strict" if getattr(capabilities, "angle_dtype", "float64") == "float64" else "fp32-angles"


@dataclass(frozen=True)
class Resolved:
    """The numbers a case is judged with (printed with every result)."""

    profile: str
    angle_dtype: str
    table_dtype: str
    out_dtype: str
    u_out: float
    u_tab: float
    u_ang: float
    floor: float
    c_out: float
    c_tab: float
    c_ang: float
    c_log: float
    c_blend: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _dtype_name(dtype: npt.DTypeLike) -> str:
    name = np.dtype(dtype).name
    return name if name in UNIT_ROUNDOFF else "float64"


def resolve(profile: Profile, capabilities: Any, case: GoldenCase, out_dtype: npt.DTypeLike) -> Resolved:
    """Pick u_out / u_tab / u_ang for ``case`` given the backend's capabilities and returned dtype."""
    angle = profile.angle_dtype
    if angle == "backend":
        angle = getattr(capabilities, "angle_dtype", "float64")
    table = profile.table_dtype
    if table == "backend":
        table = getattr(capabilities, "table_dtype", "float64")
    if table == "input":
        table = case.dtype
    if angle not in UNIT_ROUNDOFF:
        bad("capabilities.angle_dtype", angle, f"expected one of {', '.join(UNIT_ROUNDOFF)}")
    if table not in UNIT_ROUNDOFF:
        bad("capabilities.table_dtype", table, f"expected input or one of {', '.join(UNIT_ROUNDOFF)}")
    if UNIT_ROUNDOFF[angle] > UNIT_ROUNDOFF[table]:
        table = angle  # cos/sin are evaluated in the angle dtype: a table is never more precise
    out = _dtype_name(out_dtype)
    coarse = max((out, table), key=lambda k: SMALLEST_SUBNORMAL[k])
    return Resolved(
        profile=profile.name,
        angle_dtype=angle,
        table_dtype=table,
        out_dtype=out,
        u_out=UNIT_ROUNDOFF[out],
        u_tab=UNIT_ROUNDOFF[table],
        u_ang=UNIT_ROUNDOFF[angle],
        floor=profile.c_floor * SMALLEST_SUBNORMAL[coarse],
        c_out=profile.c_out,
        c_tab=profile.c_tab,
        c_ang=profile.c_ang,
        c_log=profile.c_log,
        c_blend=profile.c_blend,
    )


# ----------------------------------------------------------------------------- angles


def position_rows(spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...] | None = None) -> np.ndarray:
    """Position rows ``[A, *P]`` (int64) as the reference reads them (plain, mRoPE, vision)."""
    pos = np.asarray(positions, dtype=np.int64)
    if spec.n_axes == 1:
        rows = pos[None]
    elif spec.mrope_section is not None:
        rows = pos
    else:
        rows = np.moveaxis(pos, -1, 0)
    if grid is not None:
        rows = np.broadcast_to(rows, (rows.shape[0], *grid))
    return rows


def _log_freq(freqs: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(freqs > 0, np.abs(np.log(np.where(freqs > 0, freqs, 1.0))), 0.0)


def case_angles(spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(|phi| [*P, n], |ln w| [n], kappa [n], s)`` at the protocol's ``seq_len = max(position) + 1``."""
    rows = position_rows(spec, positions, grid)
    seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    freqs, s = ref_inv_freq(spec, seq_len)
    p = np.moveaxis(rows, 0, -1).astype(np.float64)[..., pair_axes(spec)]
    return np.abs(p * freqs), _log_freq(freqs), blend_conditioning(spec), s


# ----------------------------------------------------------------------------- bounds


def _freq_coef(r: Resolved, logw: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """Relative error of a frequency in units of ``u_ang``: ``c_ang + c_log*|ln w| + c_blend*kappa``."""
    return r.c_ang + r.c_log * logw + r.c_blend * kappa


def _angle_coef(r: Resolved, phi: np.ndarray, logw: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    return r.c_out * r.u_out + r.c_tab * r.u_tab + r.u_ang * phi * _freq_coef(r, logw, kappa)


def pair_coefficients(spec: RopeSpec, positions: np.ndarray, r: Resolved, grid: tuple[int, ...] | None = None) -> np.ndarray:
    """``s*(c_out*u_out + c_tab*u_tab + u_ang*|phi|*(c_ang + c_log*|ln w| + c_blend*kappa))`` per (token, pair),
    ``[*P, n]``: the bound of a rotated element is this times the pair magnitude, plus the floor."""
    phi, logw, kappa, s = case_angles(spec, positions, grid)
    return abs(s) * _angle_coef(r, phi, logw, kappa)


def _pair_bound(x: np.ndarray, coef: np.ndarray, spec: RopeSpec, transposed: bool, floor: float) -> np.ndarray:
    """Bound for every element of a [..., H, D] output: coef [P, n] times the pair magnitude."""
    pm = pair_map(spec)
    if transposed:
        pm = pm.transposed()
    ax = np.abs(x)
    mag = (ax[..., pm.in_a] + ax[..., pm.in_b]) * coef[..., None, :]
    out = np.full(x.shape, floor, dtype=np.float64)
    out[..., pm.out_a] = mag + floor
    out[..., pm.out_b] = mag + floor
    return out


def bounds(case: GoldenCase, r: Resolved) -> dict[str, np.ndarray]:
    """The per-element bound of every output of ``case`` (float64 arrays shaped like the outputs)."""
    a, spec = case.arrays, case.spec
    if case.stage == "inv_freq":
        w, s = ref_inv_freq(spec, int(np.asarray(a["seq_len"])))  # equals the stored expected values
        bw = np.abs(w) * (r.c_out * r.u_out + r.u_ang * _freq_coef(r, _log_freq(w), blend_conditioning(spec))) + r.floor
        bs = np.asarray(abs(s) * (r.c_out * r.u_out + r.c_ang * r.u_ang) + r.floor)
        return {"inv_freq": bw, "attention_factor": bs}
    if case.stage == "cos_sin":
        b = pair_coefficients(spec, a["positions"], r) + r.floor
        return {"cos": b, "sin": b}
    if case.stage == "apply":
        x = np.asarray(a["x"], dtype=np.float64)
        m = np.hypot(np.asarray(a["cos"], dtype=np.float64), np.asarray(a["sin"], dtype=np.float64))
        coef = np.broadcast_to(m * (r.c_out * r.u_out + r.c_tab * r.u_tab), (*x.shape[:-2], spec.n_pairs))
        return {"y": _pair_bound(x, coef, spec, False, r.floor)}
    name = "x" if case.stage == "forward" else "grad"
    x = np.asarray(a[name], dtype=np.float64)
    coef = pair_coefficients(spec, a["positions"], r, x.shape[:-2])
    out = "y" if case.stage == "forward" else "grad_x"
    return {out: _pair_bound(x, coef, spec, case.stage == "backward", r.floor)}


# ----------------------------------------------------------------------------- metrics


@dataclass
class Metrics:
    """What one comparison measured. ``budget_used`` = max(|error| / bound); pass iff <= 1."""

    max_abs_error: float
    budget_used: float
    nmse: float
    n_elements: int
    n_over: int
    worst: dict[str, Any]
    profile_positions: list[float] | None = None  # per-position max(error/bound), for plots
    profile_ratios: list[float] | None = None
    worst_elements: list[dict[str, Any]] = field(default_factory=list)  # the WORST_K largest error/bound, worst first
    #: the largest relative error a PASS admits at one token: max_t sqrt(sum bound^2 / sum expected^2)
    #: (:func:`admitted_error`); ``>= UNINFORMATIVE_C`` makes a PASS UNINFORMATIVE
    admitted: float = 0.0

    @property
    def uninformative(self) -> bool:
        """The bound is as large as the output's own scale somewhere (:data:`UNINFORMATIVE_C`)."""
        return self.admitted >= UNINFORMATIVE_C

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_abs_error": self.max_abs_error,
            "budget_used": self.budget_used,
            "nmse": self.nmse,
            "admitted": self.admitted,
            "n_elements": self.n_elements,
            "n_over": self.n_over,
            "worst": self.worst,
            "worst_elements": self.worst_elements,
        }


def _worst_location(case: GoldenCase, output: str, index: tuple[int, ...]) -> dict[str, Any]:
    """Name the worst element: (batch, position, head, channel) for tensors, pair for tables."""
    a = case.arrays
    loc: dict[str, Any] = {"output": output, "index": [int(i) for i in index]}
    if case.stage in ("forward", "backward", "apply") and len(index) >= 3:
        *lead, head, ch = index
        loc["head"], loc["channel"] = int(head), int(ch)
        if "cu_seqlens" in a and len(lead) == 1:
            cu = np.asarray(a["cu_seqlens"])
            loc["batch"] = int(np.searchsorted(cu, lead[0], side="right") - 1)
            loc["token"] = int(lead[0])
        elif len(lead) == 2:
            loc["batch"], loc["token"] = int(lead[0]), int(lead[1])
        else:
            loc["token"] = [int(i) for i in lead]
        if "positions" in a:
            rows = position_rows(case.spec, a["positions"], tuple(np.asarray(a.get("x", a.get("grad"))).shape[:-2]))
            every: tuple[slice | int, ...] = (slice(None), *lead)  # every position row at this token
            loc["position"] = [int(v) for v in rows[every]] if rows.shape[0] > 1 else int(rows[(0, *lead)])
    elif case.stage == "cos_sin":
        *lead, pair = index
        loc["pair"] = int(pair)
        rows = position_rows(case.spec, a["positions"])
        every = (slice(None), *lead)  # every position row at this token (typed above)
        loc["position"] = [int(v) for v in rows[every]] if rows.shape[0] > 1 else int(rows[(0, *lead)])
    elif case.stage == "inv_freq" and output == "inv_freq":
        loc["pair"] = int(index[0]) if index else 0
    return loc


def _position_profile(case: GoldenCase, ratio: np.ndarray, limit: int = 2000) -> tuple[list[float], list[float]] | None:
    if case.stage not in ("forward", "backward", "cos_sin") or "positions" not in case.arrays:
        return None
    grid = ratio.shape[:-2] if case.stage != "cos_sin" else ratio.shape[:-1]
    rows = position_rows(case.spec, case.arrays["positions"], grid)
    pos = rows.max(axis=0).reshape(-1).astype(np.float64)
    per = ratio.reshape(len(pos), -1).max(axis=1)
    order = np.argsort(pos, kind="stable")
    pos, per = pos[order], per[order]
    uniq, start = np.unique(pos, return_index=True)
    per = np.maximum.reduceat(per, start) if len(per) else per
    if len(uniq) > limit:
        idx = np.linspace(0, len(uniq), limit + 1).astype(int)
        uniq = np.maximum.reduceat(uniq, idx[:-1])
        per = np.maximum.reduceat(per, idx[:-1])
    return uniq.tolist(), per.tolist()


#: A PASS is UNINFORMATIVE where the bound admits a relative error of at least this at one token
#: (docs/conformance.md, "A PASS must inform"): sqrt(sum b^2 / sum e^2) >= 1/2 admits an error with a
#: quarter of the output's energy, i.e. a rotation of every pair by ~29 degrees (2 sin(d/2) = 1/2).
UNINFORMATIVE_C = 0.5


def admitted_error(case: GoldenCase, expected: np.ndarray, bound: np.ndarray) -> float:
    """``max_t sqrt(sum_t b^2 / sum_t e^2)``: the relative (RMS) error the bound ``b`` admits at each
    token ``t`` of one output ``e`` (forward/backward/apply: the heads and channels of a token;
    cos_sin: the pairs of a position; inv_freq: the whole vector), the worst token. A token whose
    expected output is all zero has no scale of its own (its bound is the floor: exactness) and is skipped."""
    e = np.asarray(expected, dtype=np.float64)
    b = np.asarray(bound, dtype=np.float64)
    if case.stage in ("forward", "backward", "apply") and e.ndim >= 3:
        width = e.shape[-2] * e.shape[-1]
    elif case.stage == "cos_sin" and e.ndim >= 2:
        width = e.shape[-1]
    else:
        width = max(e.size, 1)
    if e.size == 0:
        return 0.0
    se = np.sum((e * e).reshape(-1, width), axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        sb = np.sum((b * b).reshape(-1, width), axis=1)
        ok = se > 0
        if not ok.any():
            return 0.0
        ratio = np.sqrt(sb[ok] / se[ok])
    return float(np.max(np.where(np.isnan(ratio), np.inf, ratio)))


#: How many of the worst elements a comparison keeps (for failure messages).
WORST_K = 5


def _element(case: GoldenCase, name: str, shape: tuple[int, ...], k: int, err: np.ndarray, b: np.ndarray, e: np.ndarray,
             got: np.ndarray, ratio: np.ndarray) -> dict[str, Any]:
    """Location and values of the flat element ``k`` of output ``name``."""
    idx = np.unravel_index(k, shape) if len(shape) else ()
    loc = _worst_location(case, name, tuple(int(i) for i in idx))
    loc.update(
        error=float(err.reshape(-1)[k]),
        bound=float(b.reshape(-1)[k]),
        expected=float(e.reshape(-1)[k]),
        actual=float(got.reshape(-1)[k]),
        budget=float(ratio.reshape(-1)[k]),
    )
    return loc


def _top(ratio: np.ndarray, k: int) -> np.ndarray:
    """Flat indices of the ``k`` largest ratios, largest first (ties: lowest index first)."""
    flat = ratio.reshape(-1)
    if flat.size <= k:
        return np.argsort(-flat, kind="stable")
    part = np.argpartition(-flat, k - 1)[:k]
    return part[np.lexsort((part, -flat[part]))]


def compare(case: GoldenCase, actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], bound: Mapping[str, np.ndarray], *,
            with_profile: bool = True) -> Metrics:
    """Error metrics of ``actual`` against ``expected`` under ``bound`` (all float64-compatible)."""
    max_err, budget, num, den, n, over, admitted = 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0
    worst: dict[str, Any] = {}
    elements: list[dict[str, Any]] = []
    prof = None
    for name, exp in expected.items():
        e = np.asarray(exp, dtype=np.float64)
        got = np.asarray(actual[name], dtype=np.float64)
        err = np.abs(got - e)
        b = np.asarray(bound[name], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(err == 0, 0.0, err / b)
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        n += err.size
        over += int((ratio > 1).sum())
        if name != "attention_factor":  # a scalar beside inv_freq: its bound is relative by construction
            admitted = max(admitted, admitted_error(case, e, b))
        num += float(np.sum(err * err))
        den += float(np.sum(e * e))
        if err.size:
            k = int(np.argmax(ratio))
            if float(ratio.reshape(-1)[k]) >= budget or not worst:
                budget = float(ratio.reshape(-1)[k])
                worst = _element(case, name, err.shape, k, err, b, e, got, ratio)
                worst.pop("budget")
            elements += [_element(case, name, err.shape, int(j), err, b, e, got, ratio) for j in _top(ratio, WORST_K)]
            max_err = max(max_err, float(err.max()))
            if with_profile and prof is None:
                prof = _position_profile(case, ratio)
    nmse = num / den if den > 0 else (0.0 if num == 0 else math.inf)
    elements.sort(key=lambda el: -el["budget"])
    return Metrics(
        max_abs_error=max_err,
        budget_used=budget,
        nmse=nmse,
        n_elements=n,
        n_over=over,
        worst=worst,
        profile_positions=prof[0] if prof else None,
        profile_ratios=prof[1] if prof else None,
        worst_elements=elements[:WORST_K],
        admitted=admitted,
    )
