"""RopeSpec: everything that defines the RoPE maths, validated once at construction.

Notation (docs/spec.md section 1): ``D`` head dim, ``r`` rotary width (even),
``n = r/2`` pairs, ``d`` the frequency exponent denominator (defaults to ``r``;
an odd partial width ``int(D*rho)`` keeps ``d`` odd while ``r = 2*ceil(d/2)``).

A spec is a frozen, hashable dataclass. ``to_dict``/``from_dict`` round-trip
exactly (floats are kept as Python floats, lists as tuples). Nothing here
computes frequencies; see :mod:`roperef.frequencies`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import bad

__all__ = [
    "PAIRINGS",
    "SCALING_TYPES",
    "MROPE_LAYOUTS",
    "VISION_FORMS",
    "Scaling",
    "RopeSpec",
]

#: ``half``: pairs (j, j+n). ``adjacent``: pairs (2j, 2j+1).
#: ``adjacent_in_half_out``: DeepSeek V3 ``rope_interleave=True``: reads adjacent
#: pairs, writes pair j's results to channels j and j+n.
PAIRINGS = ("half", "adjacent", "adjacent_in_half_out")
SCALING_TYPES = ("default", "linear", "dynamic", "ntk", "yarn", "longrope", "llama3", "proportional")
MROPE_LAYOUTS = ("chunked", "interleaved")
#: ``qwen_vl``: w_k = theta^(-2k/(D/2)), angles [h*w, w*w]; ``pixtral``: even/odd split of theta^(-2k/D).
VISION_FORMS = ("qwen_vl", "pixtral")

# Which Scaling fields each type requires and allows (besides ``type``).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor", "max_position_embeddings"),
    "ntk": ("alpha",),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "proportional": (),
}
_OPTIONAL: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": (),
    "dynamic": (),
    "ntk": (),
    "yarn": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"),
    "longrope": ("factor", "max_position_embeddings", "attention_factor"),
    "llama3": (),
    "proportional": ("factor", "partial_rotary_factor"),
}


def _finite(name: str, value: Any, rule: str = "must be a finite number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(name, value, rule, TypeError)
    value = float(value)
    if not math.isfinite(value):
        bad(name, value, rule)
    return value


def _int(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            bad(name, value, "must be an integer", TypeError)
    if minimum is not None and value < minimum:
        bad(name, value, f"must be an integer >= {minimum}")
    if maximum is not None and value > maximum:
        bad(name, value, f"must be an integer <= {maximum}")
    return int(value)


# Parameter ranges that keep the exact maths of docs/spec.md section 3 inside float64 and
# the angle reduction's domain (|p*w| <= 2^32 for |p| < 2^31 needs every w <= pi). They
# are far outside any published config; the frequencies module re-checks the results.
MAX_THETA = 2.0**64
MAX_FACTOR = 2.0**32
MAX_LENGTH = 2**53
MAX_HEAD_DIM = 2**16
MIN_EXT_FACTOR = 1.0 / math.pi


@dataclass(frozen=True)
class Scaling:
    """The scaling type and its parameters (docs/spec.md section 3).

    Only the fields the type uses may be set; ``None`` means "not given" and the
    documented default applies. ``original_max_position_embeddings`` is ``L0``;
    ``max_position_embeddings`` is ``M`` (dynamic NTK; longrope's default factor
    ``M/L0``). ``alpha`` is the fixed-NTK base multiplier.
    """

    type: str = "default"
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    max_position_embeddings: int | None = None
    alpha: float | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    attention_factor: float | None = None
    truncate: bool | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    partial_rotary_factor: float | None = None

    def __post_init__(self) -> None:
        kind = self.type
        if kind not in SCALING_TYPES:
            bad("rope_type", kind, f"unknown scaling type; expected one of {', '.join(SCALING_TYPES)}")
        allowed = set(_REQUIRED[kind]) | set(_OPTIONAL[kind])
        for f in fields(self):
            if f.name == "type":
                continue
            value = getattr(self, f.name)
            if value is None:
                if f.name in _REQUIRED[kind]:
                    bad(f"rope_scaling.{f.name}", None, f"is required for rope_type '{kind}'")
                continue
            if f.name not in allowed:
                bad(f"rope_scaling.{f.name}", value, f"is not a parameter of rope_type '{kind}'")
            object.__setattr__(self, f.name, self._check(f.name, value))
        self._check_relations()

    def _check(self, name: str, value: Any) -> Any:
        key = f"rope_scaling.{name}"
        if name in ("original_max_position_embeddings", "max_position_embeddings"):
            return _int(key, value, minimum=1, maximum=MAX_LENGTH)
        if name == "truncate":
            if not isinstance(value, bool):
                bad(key, value, "must be true or false", TypeError)
            return value
        if name in ("short_factor", "long_factor"):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                bad(key, value, "must be a list of numbers", TypeError)
            items = tuple(_finite(f"{key}[{i}]", v) for i, v in enumerate(value))
            for i, v in enumerate(items):
                if not MIN_EXT_FACTOR <= v <= MAX_FACTOR:
                    bad(f"{key}[{i}]", v, "must be in [1/pi, 2^32] (w_i = theta^(-2i/d)/ext_i must stay <= pi rad/token)")
            return items
        number = _finite(key, value)
        if name == "factor":
            if self.type in ("longrope", "proportional"):
                if not 0 < number <= MAX_FACTOR:
                    bad(key, number, "must be a finite number > 0 and <= 2^32")
                if self.type == "proportional" and number < MIN_EXT_FACTOR:
                    bad(key, number, "must be >= 1/pi (w_0 = 1/factor must stay <= pi rad/token)")
            elif not 1 <= number <= MAX_FACTOR:
                bad(key, number, "must be a finite number >= 1 and <= 2^32")
        elif name in ("alpha", "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor", "attention_factor"):
            if not 0 < number <= MAX_FACTOR:
                bad(key, number, "must be a finite number > 0 and <= 2^32")
        elif name == "partial_rotary_factor":
            if not 0 < number <= 1:
                bad(key, number, "must be in (0, 1]")
        # mscale, mscale_all_dim: any finite number (0 means "unset" in the YaRN rule)
        return number

    def given(self, name: str) -> float:
        """The value of float parameter ``name``, which this scaling type requires (docs/spec.md section 3).

        ``__post_init__`` has already rejected a missing required parameter; this accessor gives
        the value its non-optional type and names the key if a caller asks for one that is unset.
        """
        value = getattr(self, name)
        if value is None:
            bad(f"rope_scaling.{name}", None, f"is required here for rope_type '{self.type}'")
        return float(value)

    def given_int(self, name: str) -> int:
        """``given`` for the integer parameters (``original_max_position_embeddings``, ``max_position_embeddings``)."""
        value = getattr(self, name)
        if value is None:
            bad(f"rope_scaling.{name}", None, f"is required here for rope_type '{self.type}'")
        return int(value)

    def given_factors(self, name: str) -> tuple[float, ...]:
        """``given`` for the per-pair lists (``short_factor``, ``long_factor``)."""
        value = getattr(self, name)
        if value is None:
            bad(f"rope_scaling.{name}", None, f"is required here for rope_type '{self.type}'")
        return tuple(value)

    def _check_relations(self) -> None:
        if self.type == "yarn":
            fast = 32.0 if self.beta_fast is None else self.beta_fast
            slow = 1.0 if self.beta_slow is None else self.beta_slow
            if fast < slow:
                bad("rope_scaling.beta_fast", fast, f"must be >= beta_slow={slow}")
        if self.type == "llama3" and self.given("high_freq_factor") < self.given("low_freq_factor"):
            bad(
                "rope_scaling.high_freq_factor",
                self.high_freq_factor,
                f"must be >= low_freq_factor={self.low_freq_factor} (equal factors leave the middle band empty, as Llama 4)",
            )
        if self.type == "yarn" and self.mscale and self.mscale_all_dim and self.attention_factor is None:
            for key in ("mscale", "mscale_all_dim"):
                m = getattr(self, key)
                if self.given("factor") > 1 and 0.1 * m * math.log(self.given("factor")) + 1 <= 0:
                    bad(f"rope_scaling.{key}", m, f"makes get_mscale(factor={self.factor}, {key}) = 0.1*m*ln(f) + 1 <= 0 "
                        "(the attention factor would be infinite or negative)")
        if self.type == "longrope" and self.factor is None and self.max_position_embeddings is None:
            bad("rope_scaling.factor", None, "longrope needs factor or max_position_embeddings (factor = M / L0)")
        if self.type == "longrope" and self.original_max_position_embeddings == 1 and self.attention_factor is None:
            f = self.factor if self.factor is not None else float(self.given_int("max_position_embeddings"))
            if f > 1.0:
                bad(
                    "rope_scaling.original_max_position_embeddings",
                    1,
                    "must be >= 2 when longrope derives attention_factor = sqrt(1 + ln f / ln L0) (ln 1 = 0)",
                )

    def to_dict(self) -> dict[str, Any]:
        """The set fields only, lists as lists: JSON-ready."""
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "type" and value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scaling:
        names = {f.name for f in fields(cls)}
        for key in data:
            if key not in names:
                bad(f"rope_scaling.{key}", data[key], f"unknown key; expected one of {', '.join(sorted(names))}")
        return cls(**dict(data))


@dataclass(frozen=True)
class RopeSpec:
    """The full definition of one RoPE (docs/spec.md sections 2-4).

    - ``head_dim`` D; channels ``[rotary_start, rotary_start + rotary_dim)`` rotate,
      the rest pass through bit-exactly. ``rotary_dim`` defaults to D; window-last
      engines use ``rotary_start = D - rotary_dim``.
    - ``freq_dim`` d, the exponent denominator in ``w_i = theta^(-2i/d)``; defaults
      to ``rotary_dim``; ``ceil(d/2)`` must equal ``rotary_dim/2`` unless set
      deliberately (``freq_dim`` may be any integer >= 2, e.g. to model the bug
      "denominator = head dim").
    - ``pairing`` in :data:`PAIRINGS`; ``theta`` the base; ``scaling`` a :class:`Scaling`.
    - ``mrope_section`` (t, h, w) pair counts summing to n, with ``mrope_layout``
      ``chunked`` (Qwen2-VL) or ``interleaved`` (Qwen3-VL).
    - ``vision`` in :data:`VISION_FORMS` for 2-D axial vision RoPE (positions (h, w)).
    """

    head_dim: int
    rotary_dim: int | None = None
    rotary_start: int = 0
    freq_dim: int | None = None
    pairing: str = "half"
    theta: float = 10000.0
    scaling: Scaling = field(default_factory=Scaling)
    mrope_section: tuple[int, ...] | None = None
    mrope_layout: str = "chunked"
    vision: str | None = None

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass normalisation
        head = _int("head_dim", self.head_dim, minimum=2, maximum=MAX_HEAD_DIM)
        set_("head_dim", head)
        width = head if self.rotary_dim is None else _int("rotary_dim", self.rotary_dim, minimum=2)
        if width % 2:
            bad("rotary_dim", width, "must be even (pairs of channels rotate together)")
        if width > head:
            bad("rotary_dim", width, f"must be <= head_dim={head}")
        set_("rotary_dim", width)
        start = _int("rotary_start", self.rotary_start, minimum=0)
        if start + width > head:
            bad("rotary_start", start, f"window [{start}, {start + width}) must fit in head_dim={head}")
        set_("rotary_start", start)
        set_("freq_dim", width if self.freq_dim is None else _int("freq_dim", self.freq_dim, minimum=2, maximum=2 * MAX_HEAD_DIM))
        if self.pairing not in PAIRINGS:
            bad("pairing", self.pairing, f"expected one of {', '.join(PAIRINGS)}")
        theta = _finite("theta", self.theta)
        if not 1 < theta <= MAX_THETA:
            bad("theta", theta, "must be a finite number > 1 and <= 2^64 (theta <= 1 makes the frequencies grow "
                "with the pair index and ln(theta) = 0 divides the YaRN range)")
        set_("theta", theta)
        if isinstance(self.scaling, Mapping):
            set_("scaling", Scaling.from_dict(self.scaling))
        elif not isinstance(self.scaling, Scaling):
            bad("scaling", self.scaling, "must be a Scaling or a dict", TypeError)
        self._check_scaling()
        self._check_mrope()
        self._check_vision()

    @property
    def resolved_rotary_dim(self) -> int:
        """``rotary_dim`` after ``__post_init__`` has defaulted it (never ``None`` on a built spec)."""
        if self.rotary_dim is None:
            bad("rotary_dim", None, "is unset on a spec that __post_init__ did not complete")
        return self.rotary_dim

    @property
    def resolved_freq_dim(self) -> int:
        """d, the exponent denominator: ``freq_dim`` after ``__post_init__`` has defaulted it."""
        if self.freq_dim is None:
            bad("freq_dim", None, "is unset on a spec that __post_init__ did not complete")
        return self.freq_dim

    @property
    def n_pairs(self) -> int:
        """n = rotary_dim / 2."""
        return self.resolved_rotary_dim // 2

    @property
    def n_axes(self) -> int:
        """Rows of the position input: 1 (plain), 3 (mRoPE t,h,w), 2 (vision h,w)."""
        if self.mrope_section is not None:
            return 3
        return 2 if self.vision is not None else 1

    def _check_scaling(self) -> None:
        sc, n, d = self.scaling, self.n_pairs, self.resolved_freq_dim
        for name in ("short_factor", "long_factor"):
            values = getattr(sc, name)
            if values is not None and len(values) != n:
                bad(f"rope_scaling.{name}", f"<{len(values)} entries>", f"must have rotary_dim//2 = {n} entries")
        if sc.type == "dynamic" and d <= 2:
            bad("freq_dim", d, "dynamic NTK needs freq_dim > 2 (exponent d/(d-2))")
        if sc.type == "ntk" and d <= 2:
            bad("freq_dim", d, "fixed NTK needs freq_dim > 2 (exponent d/(d-2))")
        if sc.type == "ntk" and math.log(self.theta) + d / (d - 2) * math.log(sc.given("alpha")) <= 0:
            bad("rope_scaling.alpha", sc.alpha, f"makes the NTK base theta*alpha^(d/(d-2)) <= 1 (theta={self.theta}, d={d}); "
                "the frequencies would grow with the pair index")

    def _check_mrope(self) -> None:
        if self.mrope_section is None:
            return
        sec = self.mrope_section
        if isinstance(sec, (str, bytes)) or not hasattr(sec, "__iter__"):
            bad("mrope_section", sec, "must be a list of 3 integers", TypeError)
        sec = tuple(_int(f"mrope_section[{i}]", v, minimum=0) for i, v in enumerate(sec))
        if len(sec) != 3:
            bad("mrope_section", list(sec), "must have 3 entries (t, h, w)")
        if sum(sec) != self.n_pairs:
            bad("mrope_section", list(sec), f"must sum to rotary_dim/2 = {self.n_pairs} pairs (sum is {sum(sec)})")
        object.__setattr__(self, "mrope_section", sec)
        if self.mrope_layout not in MROPE_LAYOUTS:
            bad("mrope_layout", self.mrope_layout, f"expected one of {', '.join(MROPE_LAYOUTS)}")
        if self.vision is not None:
            bad("vision", self.vision, "cannot be combined with mrope_section")

    def _check_vision(self) -> None:
        if self.vision is None:
            return
        if self.vision not in VISION_FORMS:
            bad("vision", self.vision, f"expected one of {', '.join(VISION_FORMS)}")
        if self.head_dim % 4:
            bad("head_dim", self.head_dim, "2-D vision RoPE needs head_dim divisible by 4")
        if self.rotary_dim != self.head_dim or self.rotary_start != 0 or self.freq_dim != self.head_dim:
            bad("rotary_dim", self.rotary_dim, "2-D vision RoPE rotates the whole head (rotary_dim = freq_dim = head_dim)")
        if self.pairing != "half":
            bad("pairing", self.pairing, "2-D vision RoPE uses half pairing")
        if self.scaling.type != "default":
            bad("rope_type", self.scaling.type, "2-D vision RoPE has no scaling (use default)")

    def replace(self, **changes: Any) -> RopeSpec:
        """A copy with some fields changed (validated again)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if "rotary_dim" in changes and "freq_dim" not in changes and self.freq_dim == self.rotary_dim:
            data["freq_dim"] = None
        data.update(changes)
        return RopeSpec(**data)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``RopeSpec.from_dict(s.to_dict()) == s``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "scaling":
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RopeSpec:
        if not isinstance(data, Mapping):
            bad("spec", data, "must be a dict", TypeError)
        names = {f.name for f in fields(cls)}
        for key in data:
            if key not in names:
                bad(f"spec.{key}", data[key], f"unknown key; expected one of {', '.join(sorted(names))}")
        if "head_dim" not in data:
            bad("spec.head_dim", None, "is required")
        kwargs = dict(data)
        if "scaling" in kwargs and isinstance(kwargs["scaling"], Mapping):
            kwargs["scaling"] = Scaling.from_dict(kwargs["scaling"])
        return cls(**kwargs)
