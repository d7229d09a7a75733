"""Correctly rounded float64 values of exact real formulas (Ziv's strategy on mpmath).

docs/spec.md section 3 defines every frequency and attention factor as the exact real
value of its formula, the spec's float64 parameters taken as exact, rounded to float64
once (round to nearest, ties to even). This module computes such values so that the
result cannot depend on the CPU, the C library or the NumPy version:

1. the formula is evaluated with mpmath in a private context at ``prec`` bits
   (160 to start: 48 digits), every float64 and integer parameter entered exactly and
   rational sub-expressions kept exact (:class:`fractions.Fraction`);
2. the value ``v`` is trusted to relative error ``e = 2^-(prec - GUARD_BITS)`` (a
   formula here takes a few dozen mpmath operations, each within an ulp or two of
   ``prec`` bits); the real value lies in ``[v - e|v|, v + e|v|]``;
3. if that whole interval rounds to one float64 (it holds no rounding boundary, i.e.
   no midpoint between two neighbouring doubles), that double is the correctly rounded
   value; otherwise the formula is evaluated again at twice the precision.

Branch decisions inside a formula (``floor``/``ceil`` of a transcendental value, an
order between two values) are certified the same way (:meth:`Exact.floor`,
:meth:`Exact.less`): when the value is too close to the boundary to decide at ``prec``
bits, :class:`NeedMorePrecision` restarts the evaluation at a higher precision.

The rounding itself is exact integer arithmetic: an mpmath value is turned into a
:class:`~fractions.Fraction` (``man * 2**exp``) and Python's ``int / int`` true
division, which is correctly rounded, gives the double.

mpmath is imported on first use (``import roperef`` stays light).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = [
    "GUARD_BITS",
    "START_PREC",
    "MAX_PREC",
    "NeedMorePrecision",
    "Exact",
    "ExactValue",
    "correctly_rounded",
    "round_to_double",
    "Estimate",
    "estimated",
]

GUARD_BITS = 32
"""The value of a formula at ``prec`` bits is trusted to ``2^-(prec - GUARD_BITS)`` relative."""
START_PREC = 160
"""First working precision in bits (about 48 decimal digits)."""
MAX_PREC = 160 * 2**6
"""Last working precision tried (10240 bits) before a value is declared undecidable."""

#: What a formula returns per value: an mpmath number, or an exact Fraction/int/float.
ExactValue = Any | Fraction | int | float


class NeedMorePrecision(Exception):
    """Raised inside a formula when a decision cannot be certified at the current precision."""


@dataclass(frozen=True)
class Exact:
    """The evaluation context a formula receives: an mpmath context at ``prec`` bits.

    ``num`` enters a float64, integer or Fraction exactly (a Fraction is rounded once
    to ``prec`` bits); ``ln``, ``exp``, ``sqrt`` and ``pi`` are mpmath's; ``floor``,
    ``ceil`` and ``less`` are certified decisions.
    """

    ctx: Any
    prec: int

    @property
    def tolerance_bits(self) -> int:
        return self.prec - GUARD_BITS

    def num(self, value: float | int | Fraction) -> Any:
        if isinstance(value, Fraction):
            return self.ctx.mpf(value.numerator) / self.ctx.mpf(value.denominator)
        return self.ctx.mpf(value)

    def ln(self, value: Any) -> Any:
        return self.ctx.log(value if not isinstance(value, (int, float, Fraction)) else self.num(value))

    def exp(self, value: Any) -> Any:
        return self.ctx.exp(value)

    def sqrt(self, value: Any) -> Any:
        return self.ctx.sqrt(value)

    @property
    def pi(self) -> Any:
        return +self.ctx.pi

    def _slack(self, value: Any) -> Any:
        return (abs(value) + 1) * self.ctx.ldexp(1, -self.tolerance_bits)

    def floor(self, value: Any) -> int:
        """``floor(value)``, certified: the value is not within the error bound of an integer."""
        f = int(self.ctx.floor(value))
        slack = self._slack(value)
        if value - f <= slack or (f + 1) - value <= slack:
            raise NeedMorePrecision
        return f

    def ceil(self, value: Any) -> int:
        """``ceil(value)``, certified like :meth:`floor`."""
        return self.floor(value) + 1

    def less(self, a: Any, b: Any) -> bool:
        """``a < b``, certified: ``a`` and ``b`` are further apart than their error bounds."""
        if isinstance(a, (int, Fraction)) and isinstance(b, (int, Fraction)):
            return a < b  # exact
        a_m = a if not isinstance(a, (int, float, Fraction)) else self.num(a)
        b_m = b if not isinstance(b, (int, float, Fraction)) else self.num(b)
        if abs(a_m - b_m) <= self._slack(a_m) + self._slack(b_m):
            raise NeedMorePrecision
        return bool(a_m < b_m)


def _as_fraction(value: Any) -> Fraction:
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, float)):
        return Fraction(value)
    man, exp = value.man_exp  # mpmath mpf: value = man * 2**exp exactly
    return Fraction(int(man)) * (Fraction(2) ** int(exp))


def round_to_double(value: Fraction) -> float:
    """The float64 nearest to ``value`` (ties to even), by Python's correctly rounded division."""
    return value.numerator / value.denominator


def _decided(value: Any, tolerance_bits: int) -> float | None:
    """The double every real in ``value +- |value| 2^-tolerance_bits`` rounds to, or None."""
    if isinstance(value, (int, Fraction)) or isinstance(value, float):
        return round_to_double(Fraction(value))  # exact input: one rounding, nothing to certify
    v = _as_fraction(value)
    if v == 0:
        return 0.0
    err = abs(v) / (Fraction(2) ** tolerance_bits)
    d = round_to_double(v)
    if math.isinf(d):
        return d
    below = Fraction(math.nextafter(d, -math.inf)) if d != -math.inf else None
    above = Fraction(math.nextafter(d, math.inf))
    here = Fraction(d)
    lo_mid = (here + below) / 2 if below is not None else None
    hi_mid = (here + above) / 2
    if lo_mid is not None and v - err <= lo_mid:
        return None
    if v + err >= hi_mid:
        return None
    return d


def correctly_rounded(
    formula: Callable[[Exact], Sequence[ExactValue]],
    start_prec: int = START_PREC,
    max_prec: int = MAX_PREC,
) -> tuple[float, ...]:
    """Every value of ``formula`` correctly rounded to float64 (see the module docstring).

    ``formula(exact)`` returns a sequence of mpmath numbers or exact numbers (Fraction,
    int, float: rounded once, nothing to certify). It may raise :class:`NeedMorePrecision`.
    Raises ``ArithmeticError`` if ``max_prec`` bits do not decide a value (an exact
    rounding boundary, which the formulas of docs/spec.md section 3 cannot produce).
    """
    import mpmath

    prec = start_prec
    while prec <= max_prec:
        ctx = mpmath.MPContext()
        ctx.prec = prec
        exact = Exact(ctx=ctx, prec=prec)
        try:
            values = list(formula(exact))
        except NeedMorePrecision:
            prec *= 2
            continue
        out = [_decided(v, exact.tolerance_bits) for v in values]
        decided = [d for d in out if d is not None]
        if len(decided) == len(out):
            return tuple(float(d) for d in decided)
        prec *= 2
    raise ArithmeticError(f"a value could not be rounded with certainty at {max_prec} bits")


@dataclass(frozen=True)
class Estimate:
    """The evaluation context of :func:`estimated`: the same formulas in float64 arithmetic.

    ``num`` rounds once to float64; ``ln``, ``exp``, ``sqrt`` are Python's ``math`` (the C
    library: within an ulp or two, last bits machine-dependent); ``floor``/``ceil``/``less``
    decide on the float64 values without certification. Same interface as :class:`Exact`.
    """

    def num(self, value: Any) -> float:
        return float(value)

    def ln(self, value: Any) -> float:
        return math.log(float(value))

    def exp(self, value: Any) -> float:
        return math.exp(float(value))

    def sqrt(self, value: Any) -> float:
        return math.sqrt(float(value))

    @property
    def pi(self) -> float:
        return math.pi

    def floor(self, value: Any) -> int:
        return math.floor(float(value))

    def ceil(self, value: Any) -> int:
        return self.floor(value) + 1  # as Exact.ceil: the value is taken as not an integer

    def less(self, a: Any, b: Any) -> bool:
        return float(a) < float(b)


def estimated(formula: Callable[[Any], Sequence[ExactValue]]) -> tuple[float, ...]:
    """``formula`` evaluated once in float64 arithmetic (:class:`Estimate`).

    Each value is within a few ulp of :func:`correctly_rounded`'s (a formula here takes a few
    float64 operations and libm calls, each within an ulp or two; a branch decided next to its
    boundary may go the other way) and costs ~1/100 of it. Its last bits depend on the machine:
    it is for searches over many candidate parameters (conformance's bug-decoy fits), never for
    the reference, the goldens or anything promised bit for bit.
    """
    return tuple(float(v) for v in formula(Estimate()))
