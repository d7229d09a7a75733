"""Numba-parallel twins of :mod:`roperef.reference`: same signatures, same maths, same errors.

``cos_sin``, ``apply``, ``forward`` and ``backward`` validate through the very same
functions as the reference (:func:`roperef.inputs.prepare`, ``check_spec``,
``float_array``, ``resolve_out_dtype``, the reference's table checks) and take the
channel layout from :func:`roperef.layout.pair_map` / :func:`~roperef.layout.pair_axes`
and the frequencies from :func:`roperef.frequencies.inv_freq`. The kernels live in
:mod:`roperef.fast.kernels` and repeat the reference's float64 arithmetic operation
for operation (two-term angle ``p*w = hi + lo``, cos/sin of ``hi + lo`` by the same
IEEE-only routine as :mod:`roperef.sincos` (:mod:`roperef.fast.sincos`), times the attention
factor ``s``)::

    y_a = x_a*(s cos phi) - x_b*(s sin phi)
    y_b = x_b*(s cos phi) + x_a*(s sin phi)

Differences from the reference are only in cost:

- cos/sin are computed once per (token, pair) into a per-block ``[n]`` scratch and
  reused across heads, in a pipeline that overlaps them with the memory traffic; no
  table of the size of ``x`` and no float64 copy of a float32 ``x`` is made.
  ``forward``/``backward`` allocate only their output (or none, with ``out=``), except
  small calls (below), which also keep their ``[N, n]`` cos/sin tables (at most the output's
  element count, so at most 512 KiB).
- Tokens that share a position share one cos/sin row (:func:`shared_positions`);
  large memory-bound outputs are written with non-temporal stores (:func:`streams`).
- float32 ``x`` is read as float32 and computed in float64; the output (float64 by
  default, float32 with ``out_dtype=np.float32`` or a float32 ``out``) is rounded once.
- Inputs that the kernels cannot read in place (non-contiguous, float16, bfloat16,
  non-native byte order) are first copied to a contiguous array (float64 unless the input is
  float32/float64). Every array a kernel reads is passed as a read-only view (read-only inputs
  are read in place, and each kernel has one compiled signature per dtype of ``x``, not one more
  per writeable flag). The input is never modified.
- Small calls (output of at most :data:`SERIAL_MAX_ELEMENTS` elements, such as every case of
  ``roperef check``) run the serial kernels of :mod:`roperef.fast.serial`: the same operations,
  a fraction of the compile time, no thread start-up.

Nothing is compiled at import; the first call of each kernel/dtype combination
compiles it (``cache=True``: later processes load it from the Numba cache).

Numba and the kernels (:mod:`roperef.fast.kernels`) are imported lazily, inside the functions,
on the first call: ``import roperef.fast`` loads neither.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import bad
from ..frequencies import inv_freq
from ..inputs import check_spec, float_array, prepare, resolve_out_dtype
from ..layout import PairMap, pair_axes, pair_map
from ..reference import check_tables, rows_for
from ..spec import RopeSpec

__all__ = ["cos_sin", "apply", "forward", "backward"]

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_BLOCKS_PER_THREAD = 8
STREAM_MIN_BYTES = 16 * 2**20
"""Outputs of at least this size may be written with non-temporal stores (:func:`streams`)."""
STREAM_MIN_ELEMENTS_PER_PAIR = 32
"""... when each cos/sin pair a token computes is reused over at least this many elements (:func:`streams`)."""
SHARE_MAX_DISTINCT = 0.5
"""Tokens share cos/sin rows when at most this fraction of them have distinct positions (:func:`shared_positions`)."""
SHARE_MAX_TABLE = 0.125
"""... and the shared tables hold at most this fraction of the output's element count."""
SERIAL_MAX_ELEMENTS = 2**20
"""Calls whose output has at most this many elements run the serial kernels (:mod:`roperef.fast.serial`).

Below it (4 MiB of float32, every case ``roperef check`` runs, including the shape sweep's
rows of more than 4096 tokens) threads and streaming stores save a few milliseconds while the parallel kernels cost seconds
to compile on a machine's first run; the serial ones compute the same bits."""


def _n_blocks() -> int:
    from numba import get_num_threads

    return _BLOCKS_PER_THREAD * max(1, int(get_num_threads()))


def _read_only(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr`` (no copy): every array a kernel only reads is typed alike, one signature."""
    view = arr.view()
    view.flags.writeable = False
    return view


def _kernel_input(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr`` if a kernel can read it (C-contiguous, native float32/64), else of a copy."""
    if arr.dtype not in _KERNEL_DTYPES:  # float16, bfloat16, longdouble, byte-swapped: widen exactly (or round once)
        return _read_only(np.ascontiguousarray(arr.astype(np.float64)))
    if not arr.flags.c_contiguous:
        return _read_only(np.array(arr, dtype=arr.dtype, order="C", copy=True))
    return _read_only(arr)


def _serial(y: np.ndarray) -> bool:
    """Whether a call with output ``y`` runs the serial kernels (:data:`SERIAL_MAX_ELEMENTS`)."""
    return y.size <= SERIAL_MAX_ELEMENTS


def _as_tokens(arr: np.ndarray) -> np.ndarray:
    """View ``[..., H, D]`` as ``[N, H, D]`` (``arr`` is C-contiguous)."""
    return arr.reshape((math.prod(arr.shape[:-2]), arr.shape[-2], arr.shape[-1]))


def _output(x: np.ndarray, out: object, out_dtype: object, name: str) -> np.ndarray:
    """The output buffer: a new array, or the validated ``out`` (same shape as ``x``, C-contiguous, writeable, no alias)."""
    if out is None:
        return np.empty(x.shape, dtype=resolve_out_dtype(out_dtype))
    if not isinstance(out, np.ndarray):
        bad("out", type(out).__name__, "must be a numpy.ndarray or None", TypeError)
    if out.dtype not in _KERNEL_DTYPES:
        bad("out.dtype", str(out.dtype), "must be float32 or float64 (native byte order)", TypeError)
    if out_dtype is not None and resolve_out_dtype(out_dtype) != out.dtype:
        bad("out.dtype", str(out.dtype), f"must equal out_dtype={resolve_out_dtype(out_dtype)}")
    if out.shape != x.shape:
        bad("out.shape", out.shape, f"must equal {name}.shape={x.shape}")
    if not out.flags.c_contiguous:
        bad("out", "<non-contiguous array>", "must be C-contiguous")
    if not out.flags.writeable:
        bad("out", "<read-only array>", "must be writeable")
    if np.may_share_memory(out, x):
        bad("out", "<array sharing memory with the input>", f"must not alias {name} (the input is never modified)")
    return out


def streams(y: np.ndarray, pairs_per_token: int = 0) -> bool:
    """Whether the kernels write ``y [..., H, D]`` with non-temporal (streaming) stores.

    Yes when ``y`` is at least :data:`STREAM_MIN_BYTES` (far beyond what a cache would
    keep, so skipping the read-for-ownership of every output line saves a third of the
    memory traffic), its address is 16-byte aligned, a token's ``H*D`` elements are a whole
    number of 16-byte stores, and the pass is memory-bound: ``H*D`` is at least
    :data:`STREAM_MIN_ELEMENTS_PER_PAIR` times the ``pairs_per_token`` cos/sin pairs the
    kernel computes per token (0 for :func:`apply`, which reads its tables). With fewer
    heads the cos/sin arithmetic dominates and the extra pass through the scratch costs more than
    it saves (measured: ``(8,8,2048,64)``, 16 elements per pair, 1.07x (float64) and 1.26x
    (float32) slower streamed; ``(1,32,4096,128)``, 64 per pair, 1.2x faster streamed).
    Smaller or misaligned outputs (``out=`` a view at an odd offset) use ordinary stores.
    Same values either way.
    """
    token_elements = y.shape[-2] * y.shape[-1]
    return (
        y.nbytes >= STREAM_MIN_BYTES
        and y.ctypes.data % 16 == 0
        and (token_elements * y.itemsize) % 16 == 0
        and token_elements >= STREAM_MIN_ELEMENTS_PER_PAIR * pairs_per_token
    )


def _keep(spec: RopeSpec) -> np.ndarray:
    """Pass-through channels: outside ``[rotary_start, rotary_start + rotary_dim)`` (read-only int64)."""
    start, stop = spec.rotary_start, spec.rotary_start + spec.resolved_rotary_dim
    return _read_only(np.concatenate([np.arange(0, start), np.arange(stop, spec.head_dim)]).astype(np.int64))


def _stride(a: np.ndarray, b: np.ndarray) -> int:
    """1 or 2 when ``a[j] = a[0] + k*j`` and ``b[j] = b[0] + k*j``; 0 otherwise (the kernel then gathers)."""
    j = np.arange(a.shape[0], dtype=np.int64)
    for k in (1, 2):
        if np.array_equal(a, a[0] + k * j) and np.array_equal(b, b[0] + k * j):
            return k
    return 0


def _index_arrays(pm: PairMap) -> tuple[np.ndarray, ...]:
    """``in_a, in_b, out_a, out_b`` of a pair map as read-only contiguous int64."""
    return tuple(_read_only(np.ascontiguousarray(a, dtype=np.int64)) for a in (pm.in_a, pm.in_b, pm.out_a, pm.out_b))


def _maps(pm: PairMap) -> tuple[object, ...]:
    """Kernel arguments ``in_a, in_b, out_a, out_b, k_in, k_out`` of a pair map."""
    arrays = _index_arrays(pm)
    return (*arrays, _stride(arrays[0], arrays[1]), _stride(arrays[2], arrays[3]))


def _token_rows(rows: np.ndarray) -> np.ndarray:
    """Position rows ``[A, *P]`` (possibly a broadcast view) as contiguous int64 ``[A, N]``, read-only."""
    return _read_only(np.ascontiguousarray(rows, dtype=np.int64).reshape((rows.shape[0], -1)))


def _freqs(spec: RopeSpec, seq_len: int | None) -> tuple[np.ndarray, float]:
    freqs, s = inv_freq(spec, seq_len)
    return _read_only(np.ascontiguousarray(freqs, dtype=np.float64)), float(s)


def _axes(spec: RopeSpec) -> np.ndarray:
    """The position row of each pair, read-only contiguous int64."""
    return _read_only(np.ascontiguousarray(pair_axes(spec), dtype=np.int64))


def cos_sin(spec: RopeSpec, positions: object, seq_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(s*cos(phi), s*sin(phi))``, each float64 ``[*P, n]``; as :func:`roperef.reference.cos_sin`."""
    check_spec(spec)
    rows = rows_for(spec, positions)
    if seq_len is None:
        seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
    freqs, s = _freqs(spec, seq_len)
    grid = rows.shape[1:]
    cos = np.empty((*grid, spec.n_pairs), dtype=np.float64)
    sin = np.empty_like(cos)
    _tables(_token_rows(rows), freqs, _axes(spec), s, 1.0, cos.reshape((-1, spec.n_pairs)), sin.reshape((-1, spec.n_pairs)))
    return cos, sin


def _tables(rows: np.ndarray, freqs: np.ndarray, axes: np.ndarray, s: float, sign: float, cos: np.ndarray, sin: np.ndarray) -> None:
    """Fill ``cos, sin [N, n]`` for the position columns ``rows [A, N]``: serial when small, else parallel."""
    if _serial(cos):
        from .serial import tables_serial

        tables_serial(rows, freqs, axes, s, sign, cos, sin)
    else:
        from .kernels import tables_kernel

        tables_kernel(rows, freqs, axes, s, sign, cos, sin, _n_blocks())


def _rotate(x3: np.ndarray, cos: np.ndarray, sin: np.ndarray, idx: np.ndarray, pm: PairMap, keep: np.ndarray, y: np.ndarray) -> None:
    """``y[t] = RoPE(x3[t])`` with table row ``idx[t]`` (``y``: the output, any shape ``[..., H, D]``): serial when small."""
    y3 = _as_tokens(y)
    cos, sin, idx = _read_only(cos), _read_only(sin), _read_only(idx)
    if _serial(y):
        from .serial import rotate_serial

        rotate_serial(x3, cos, sin, idx, *_index_arrays(pm), keep, y3)  # type: ignore[call-arg]  # numba: the jitted Dispatcher's stub does not carry the kernel signature
    else:
        from .kernels import apply_kernel

        apply_kernel(x3, cos, sin, idx, *_maps(pm), keep, y3, _n_blocks(), streams(y))  # type: ignore[call-arg]  # numba: the jitted Dispatcher's stub does not carry the kernel signature


def apply(
    x: object, cos: object, sin: object, spec: RopeSpec, out_dtype: object = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Rotate ``x [..., H, D]`` with given tables ``cos, sin [..., n]`` (broadcast over heads); as the reference."""
    check_spec(spec)
    arr = float_array(x, "x")
    c, s = check_tables(arr, cos, sin, spec)
    grid, n = arr.shape[:-2], spec.n_pairs
    c2 = np.ascontiguousarray(np.broadcast_to(c, (*grid, n))).reshape((math.prod(grid), n))
    s2 = np.ascontiguousarray(np.broadcast_to(s, (*grid, n))).reshape((math.prod(grid), n))
    y = _output(arr, out, out_dtype, "x")
    idx = np.arange(c2.shape[0], dtype=np.int64)
    _rotate(_as_tokens(_kernel_input(arr)), c2, s2, idx, pair_map(spec), _keep(spec), y)
    return y


def shared_positions(rows: np.ndarray, token_elements: int, n_pairs: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(distinct position columns [A, U], each token's column [N])`` when sharing cos/sin pays, else ``None``.

    Tokens at the same position (every batch row of a prefill, every packed sequence from
    0) need the same cos/sin. When at most :data:`SHARE_MAX_DISTINCT` of the ``N`` tokens
    have distinct positions, computing the ``U`` rows once and streaming ``x`` through them
    beats computing ``N`` rows (the cos/sin arithmetic dominates when a pair serves few elements).
    The tables must stay small next to the output: ``2 U n <= SHARE_MAX_TABLE * N * H * D``
    (elements), so no temporary grows like ``x``.
    """
    n_tok = rows.shape[1]
    if n_tok < 2:
        return None
    if rows.shape[0] == 1:
        distinct, index = np.unique(rows[0], return_inverse=True)
        distinct = distinct[None]
    else:
        distinct, index = np.unique(rows, axis=1, return_inverse=True)
    n_distinct = distinct.shape[1]
    if n_distinct > SHARE_MAX_DISTINCT * n_tok or 2 * n_distinct * n_pairs > SHARE_MAX_TABLE * n_tok * token_elements:
        return None
    return np.ascontiguousarray(distinct, dtype=np.int64), np.ascontiguousarray(index.reshape(-1), dtype=np.int64)


def _run(name: str, x, positions, spec, cu_seqlens, seq_len, out_dtype, out, backward: bool) -> np.ndarray:
    prep = prepare(x, positions, spec, cu_seqlens, seq_len, name=name)
    freqs, s = _freqs(spec, prep.seq_len)
    y = _output(prep.x, out, out_dtype, name)
    pm = pair_map(spec).transposed() if backward else pair_map(spec)
    x3, rows = _as_tokens(_kernel_input(prep.x)), _token_rows(prep.rows)
    sign = -1.0 if backward else 1.0
    shared = shared_positions(rows, x3.shape[1] * x3.shape[2], spec.n_pairs)
    if shared is None and not _serial(y):  # one pipelined pass: cos/sin per token, overlapped with the memory traffic
        from .kernels import rope_kernel

        rope_kernel(x3, rows, freqs, _axes(spec), s, sign, *_maps(pm), _keep(spec), _as_tokens(y), _n_blocks(), streams(y, spec.n_pairs))  # type: ignore[call-arg]  # numba: the jitted Dispatcher's stub does not carry the kernel signature
        return y
    # cos/sin once per distinct position (or, for a small call, per token), then the rotation pass
    distinct, index = shared if shared is not None else (rows, np.arange(rows.shape[1], dtype=np.int64))
    cos = np.empty((distinct.shape[1], spec.n_pairs), dtype=np.float64)
    sin = np.empty_like(cos)
    _tables(_read_only(distinct), freqs, _axes(spec), s, sign, cos, sin)
    _rotate(x3, cos, sin, index, pm, _keep(spec), y)
    return y


def forward(
    x: object,
    positions: object,
    spec: RopeSpec,
    cu_seqlens: object = None,
    seq_len: int | None = None,
    out_dtype: object = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """RoPE of ``x`` (bshd ``[B,T,H,D]`` or packed thd ``[N,H,D]`` with ``cu_seqlens``); as the reference.

    ``out``: optional float32/float64 C-contiguous buffer of ``x.shape`` (not aliasing ``x``);
    the result is written there and returned.
    """
    return _run("x", x, positions, spec, cu_seqlens, seq_len, out_dtype, out, backward=False)


def backward(
    grad: object,
    positions: object,
    spec: RopeSpec,
    cu_seqlens: object = None,
    seq_len: int | None = None,
    out_dtype: object = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """VJP of :func:`forward`: ``s R(-phi) g`` per pair (maps transposed), identity elsewhere; as the reference."""
    return _run("grad", grad, positions, spec, cu_seqlens, seq_len, out_dtype, out, backward=True)
