"""The float64 NumPy reference: angles, cos/sin tables, apply, forward, backward.

Maths (docs/spec.md sections 2-5). For pair ``j`` with channels ``(a, b)``,
position ``p`` and inverse frequency ``w_j``::

    phi = p * w_j
    y_a = s * (x_a cos(phi) - x_b sin(phi))
    y_b = s * (x_b cos(phi) + x_a sin(phi))

Channels outside the rotary window are copied bit-exactly; inputs are never
modified; the VJP is the rotation by ``-phi`` (``s R(-phi) g``).

Accuracy. ``p`` is an integer in ``[-2^31, 2^31)`` and exact in float64, but the
product ``p*w`` is not: rounding it would give an absolute angle error up to
``2^-53 * |phi|`` (about ``2.4e-7`` rad at ``|phi| = 2^31``), far above a unit
roundoff of the output. So the angle is kept as an unrounded two-term product
``phi = hi + lo`` (Dekker's TwoProduct with Veltkamp splitting; exact, no FMA
needed) and ``cos``/``sin`` of the exact sum are computed by :func:`roperef.sincos.sincos`
(an exact Cody-Waite reduction and Taylor kernels from IEEE ``+ - *`` only, within
0.7 ulp, error over spacing: :func:`roperef.ulp.ulp_error`). With that, each output is within a few units of roundoff (``u = 2^-53``) of
the pair magnitude ``s (|x_a| + |x_b|)`` of exact arithmetic on the float64 inputs and
the float64 ``w`` of :func:`roperef.frequencies.inv_freq`, at every position up to
``2^31`` (the golden audit measures it against mpmath). Angles are never accumulated
by repeated multiplication or addition.

Machine independence (docs/spec.md section 3, "What the float64 numbers are"): the
frequencies and ``s`` are correctly rounded exact values, and everything after them is
IEEE basic arithmetic in a fixed order, so every output bit is the same on every
IEEE-754 machine, whatever C library or SIMD path NumPy uses.
"""

from __future__ import annotations

import numpy as np

from .errors import bad
from .frequencies import inv_freq as _inv_freq
from .inputs import check_spec, float_array, prepare, resolve_out_dtype
from .layout import PairMap, pair_axes, pair_map
from .positions import check_positions
from .sincos import sincos, two_product
from .spec import RopeSpec

__all__ = ["two_product", "angles", "angle_cos_sin", "cos_sin", "apply", "forward", "backward", "inv_freq"]

inv_freq = _inv_freq


def angles(rows: np.ndarray, freqs: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``phi[..., j] = rows[axes[j]][...] * freqs[j]`` as ``(hi, lo)``, each ``[*P, n]``.

    ``rows`` int64 ``[A, *P]``; ``freqs`` float64 ``[n]``; ``axes`` int64 ``[n]`` in ``[0, A)``.
    """
    p = np.moveaxis(rows, 0, -1).astype(np.float64)[..., axes]  # [*P, n], exact (|p| < 2^31)
    return two_product(p, freqs)


def angle_cos_sin(hi: np.ndarray, lo: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """``(s*cos(hi + lo), s*sin(hi + lo))`` by :func:`roperef.sincos.sincos` (machine-independent bits)."""
    cos, sin = sincos(hi, lo)
    return cos * s, sin * s


def rows_for(spec: RopeSpec, positions: object) -> np.ndarray:
    """The checked positions as rows ``[A, ...]``, one per position axis of ``spec`` (shared with roperef.fast)."""
    pos = check_positions(positions)
    if spec.n_axes == 1:
        return pos[None]
    if spec.mrope_section is not None:
        if pos.ndim < 1 or pos.shape[0] != 3:
            bad("positions.shape", pos.shape, "mRoPE positions must be [3, ...] (rows t, h, w)")
        return pos
    if pos.ndim < 1 or pos.shape[-1] != 2:
        bad("positions.shape", pos.shape, "vision positions must be [..., 2] (columns h, w)")
    return np.moveaxis(pos, -1, 0)


def _tables(spec: RopeSpec, rows: np.ndarray, seq_len: int | None) -> tuple[np.ndarray, np.ndarray]:
    if seq_len is None:
        seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    freqs, s = _inv_freq(spec, seq_len)
    hi, lo = angles(rows, freqs, pair_axes(spec))
    return angle_cos_sin(hi, lo, s)


def cos_sin(spec: RopeSpec, positions: object, seq_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(s*cos(phi), s*sin(phi))``, each float64 ``[*P, n]`` (HF convention: the attention factor is folded in).

    ``positions``: plain ``[*P]``, mRoPE ``[3, *P]``, vision ``[*P, 2]``. ``seq_len``
    (dynamic, longrope) defaults to ``max(position) + 1``.
    """
    check_spec(spec)
    return _tables(spec, rows_for(spec, positions), seq_len)


def _rotate(x64: np.ndarray, cos: np.ndarray, sin: np.ndarray, pm: PairMap) -> np.ndarray:
    c = cos[..., None, :]
    s = sin[..., None, :]
    xa = x64[..., pm.in_a]
    xb = x64[..., pm.in_b]
    y = x64.copy()
    y[..., pm.out_a] = xa * c - xb * s
    y[..., pm.out_b] = xb * c + xa * s
    return y


def check_tables(x: np.ndarray, cos: object, sin: object, spec: RopeSpec) -> tuple[np.ndarray, np.ndarray]:
    """Given cos/sin tables as float64, checked against ``x`` and ``spec`` (shared with roperef.fast)."""
    c = float_array(cos, "cos").astype(np.float64)
    s = float_array(sin, "sin").astype(np.float64)
    if c.shape != s.shape:
        bad("sin.shape", s.shape, f"must equal cos.shape={c.shape}")
    if c.ndim < 1 or c.shape[-1] != spec.n_pairs:
        bad("cos.shape", c.shape, f"last dim must be n = rotary_dim/2 = {spec.n_pairs}")
    if x.ndim < 2 or x.shape[-1] != spec.head_dim:
        bad("x.shape", x.shape, f"must be [..., heads, head_dim={spec.head_dim}]")
    try:
        fits = np.broadcast_shapes(c.shape[:-1], x.shape[:-2]) == x.shape[:-2]
    except ValueError:
        fits = False  # reported below, outside the handler: no chained NumPy traceback
    if not fits:
        bad("cos.shape", c.shape, f"leading dims must broadcast to x.shape[:-2]={x.shape[:-2]} (tables are [..., n])")
    return c, s


def apply(x: object, cos: object, sin: object, spec: RopeSpec, out_dtype: object = None) -> np.ndarray:
    """Rotate ``x [..., H, D]`` with given tables ``cos, sin [..., n]`` (broadcast over heads)."""
    check_spec(spec)
    arr = float_array(x, "x")
    c, s = check_tables(arr, cos, sin, spec)
    y = _rotate(arr.astype(np.float64), c, s, pair_map(spec))
    return y.astype(resolve_out_dtype(out_dtype), copy=False)


def forward(
    x: object,
    positions: object,
    spec: RopeSpec,
    cu_seqlens: object = None,
    seq_len: int | None = None,
    out_dtype: object = None,
) -> np.ndarray:
    """RoPE of ``x`` (bshd ``[B,T,H,D]`` or packed thd ``[N,H,D]`` with ``cu_seqlens``); float64 result.

    ``seq_len`` (dynamic NTK, longrope) defaults to ``max(position) + 1``; ``out_dtype``
    float32 rounds the float64 result once.
    """
    prep = prepare(x, positions, spec, cu_seqlens, seq_len)
    cos, sin = _tables(spec, prep.rows, prep.seq_len)
    y = _rotate(prep.x.astype(np.float64), cos, sin, pair_map(spec))
    return y.astype(resolve_out_dtype(out_dtype), copy=False)


def backward(
    grad: object,
    positions: object,
    spec: RopeSpec,
    cu_seqlens: object = None,
    seq_len: int | None = None,
    out_dtype: object = None,
) -> np.ndarray:
    """VJP of :func:`forward`: ``s R(-phi) g`` per pair, read/write maps transposed; identity elsewhere."""
    prep = prepare(grad, positions, spec, cu_seqlens, seq_len, name="grad")
    cos, sin = _tables(spec, prep.rows, prep.seq_len)
    y = _rotate(prep.x.astype(np.float64), cos, -sin, pair_map(spec).transposed())
    return y.astype(resolve_out_dtype(out_dtype), copy=False)
