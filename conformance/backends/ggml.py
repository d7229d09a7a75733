"""ggml's rope operator (the C kernels of llama.cpp) on CPU, through the ``ggml-python`` ctypes bindings.

API mapping (ggml as vendored by ggml-python 0.0.45; ``ggml.h``, ``src/ggml-cpu/ops.cpp``)::

    ggml_rope_ext(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale,
                  ext_factor, attn_factor, beta_fast, beta_slow)            # forward
    ggml_rope_multi(ctx, a, b, c, n_dims, sections[4], mode, ...)            # MROPE, IMROPE, VISION
    ggml_rope_ext_back / ggml_rope_multi_back (same arguments)               # backward

- ``a`` is ``ne = (D, H, T)``: one batch row of the case's ``x [B, T, H, D]`` (ggml's positions
  ``b`` are one int32 per token, shared by every row of ``ne[3]``, so each batch row is its own
  call), or the packed ``x [N, H, D]`` whole (positions per token: varlen needs no ``cu_seqlens``).
  Positions are int32 (``max_position = 2**31 - 1``), converted to float32 by the kernel.
- Modes: ``NORMAL`` (0) rotates ``(2j, 2j+1)`` (``adjacent``), ``NEOX`` (2) ``(j, j + n_dims/2)``
  (``half``); the first ``n_dims`` channels rotate (``partial``), the others are copied.
  ``MROPE`` (8, chunked ``sections = [s_t, s_h, s_w, 0]``) and ``IMROPE`` (40, Qwen3-VL's
  interleaved sections) take four position rows per token ``[t, h, w, e]`` and rotate ``half``
  pairs only; the fourth row is 0, as llama.cpp fills it for text tokens (``llm_graph_input_pos``).
  ``VISION`` (24) is Qwen-VL's 2-D RoPE: ``n_dims = D/2``, sections ``[D/4] * 4`` and rows
  ``[h, w, h, w]`` as llama.cpp's clip builds them; every channel rotates, ``(j, j + D/2)``.
- Frequencies: ``theta_scale = powf(freq_base, -2.0f/n_dims)`` and ``theta_i = p * theta_scale^i``
  by repeated float32 multiplication, divided by ``freq_factors[i]`` (the ``c`` tensor) and by
  ``1/freq_scale``; the cache is ``cosf/sinf(theta) * mscale`` in float32, the rotation in float32,
  the output rounded to the input dtype (``angle_dtype = table_dtype = "float32"``).
- Scaling: ``default`` and ``ntk`` by ``freq_base`` (the NTK base ``theta * alpha^(d/(d-2))``, what a
  GGUF stores as ``rope.freq_base``); ``linear`` by ``freq_scale = 1/factor``; ``yarn`` by
  ``freq_scale = 1/factor``, ``ext_factor = 1``, ``n_ctx_orig = L0``, ``beta_fast``/``beta_slow``, and
  ``attn_factor = s / (1 + 0.1 ln(1/freq_scale))`` (ggml multiplies its own YaRN magnitude
  ``1 + 0.1 ln(1/freq_scale)`` in); ``llama3`` and ``proportional`` by ``freq_factors = w_default /
  w_scaled`` (computed by roperef, stored in float32 as llama.cpp's converter stores ``rope_freqs``;
  a zero frequency is an infinite factor), ``longrope`` by the config's ``long_factor`` or
  ``short_factor`` as ``freq_factors`` (llama.cpp's ``rope_factors_long/short``) and
  ``attn_factor = s``. ``dynamic`` (a length-dependent base) is not an operator parameter.
- Not expressible (NOT_SUPPORTED with the reason): bfloat16 (the CPU op asserts F32/F16), float64,
  ``adjacent_in_half_out``, a rotary window at the end (``window_last``), an exponent denominator
  other than the rotary width (``odd_freq_dim``), Pixtral's 2-D RoPE (its interleaved h/w
  frequencies are not one op), GLM-4V's adjacent mRoPE (ggml's mRoPE modes rotate ``half`` pairs),
  VISION with a partial window or ``D % 4 != 0``; no ``inv_freq``/``cos_sin``/``apply`` stage.

Known discrepancies (``conformance/backends/xfail/ggml.txt``, evidence in docs/backends-ggml.md):
YaRN always floors/ceils its correction range (no ``truncate = false``: gpt-oss); IMROPE gives the
last pairs the fourth position row (sector ``i % 3 == 1`` past ``3 s_h``, ``== 2`` past ``3 s_w``),
where Qwen3-VL uses the t row; and ``theta_scale^i`` as a running float32 product makes the angle's
relative error grow linearly with the pair index (up to ~``n/2 * u32``), past the float32-angle bound
on the highest pairs at large positions.

A C assertion in ggml aborts the process: every argument is checked here before the call, and
``roperef check --backend ggml --isolate`` runs it in worker processes. The library it wraps is
imported lazily, inside the methods that use it: it is optional, and importing this adapter needs none.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef.frequencies import inv_freq
from roperef.reference import rows_for
from roperef.spec import RopeSpec, Scaling

from ..cases.case import GoldenCase
from .base import BaseBackend, Capabilities
from .torch_util import missing

__all__ = ["GgmlBackend", "GgmlCall", "ggml_call", "run_graph", "ggml_rows", "MODES", "INT32_MAX"]

INT32_MAX = 2**31 - 1
#: ggml's rope modes (ggml.h GGML_ROPE_TYPE_*)
MODES = {"normal": 0, "neox": 2, "mrope": 8, "vision": 24, "imrope": 40}

_CAPS = Capabilities(
    stages=frozenset({"forward", "backward"}),
    pairings=frozenset({"half", "adjacent"}),
    dtypes=frozenset({"float32", "float16"}),
    scaling_types=frozenset({"default", "linear", "ntk", "yarn", "llama3", "longrope", "proportional"}),
    features=frozenset({"partial", "varlen", "mrope_chunked", "mrope_interleaved", "vision_qwen_vl",
                        "negative_positions", "per_batch_positions", "sparse_positions"}),
    angle_dtype="float32",
    table_dtype="float32",
    notes="ggml_rope_ext / ggml_rope_multi (+ _back) on CPU via ggml-python; float32 theta_scale^i, cos/sin and "
          "rotation in float32; YaRN by ext_factor, llama3/longrope/proportional by freq_factors",
    max_position=INT32_MAX,
)


@dataclass(frozen=True)
class GgmlCall:
    """The operator arguments for one spec (everything but the tensors)."""

    mode: int
    n_dims: int
    sections: tuple[int, int, int, int] | None
    n_ctx_orig: int
    freq_base: float
    freq_scale: float
    ext_factor: float
    attn_factor: float
    beta_fast: float
    beta_slow: float
    freq_factors: np.ndarray | None  # float32 [n_dims/2] (VISION: [D/2]), or None


def ggml_rows(spec: RopeSpec, positions: np.ndarray) -> np.ndarray:
    """Positions as ggml's rows per token: ``[R, *grid]`` (R = 1 plain, 4 for the multi modes)."""
    pos = np.asarray(positions, dtype=np.int64)
    if spec.vision is not None:  # [1, N, 2] (h, w) -> rows [h, w, h, w] over [1, N]
        h, w = pos[..., 0], pos[..., 1]
        return np.stack([h, w, h, w])
    if spec.mrope_section is not None:  # [3, B, T] (t, h, w) -> [t, h, w, 0]
        return np.concatenate([pos, np.zeros_like(pos[:1])])
    return pos[None]


def _mode(spec: RopeSpec) -> int:
    if spec.vision is not None:
        return MODES["vision"]
    if spec.mrope_section is not None:
        return MODES["imrope"] if spec.mrope_layout == "interleaved" else MODES["mrope"]
    return MODES["neox"] if spec.pairing == "half" else MODES["normal"]


def _factors(spec: RopeSpec, seq_len: int, n: int) -> np.ndarray:
    """``w_default / w_scaled`` per pair (inf where the scaled frequency is 0), float32 like a GGUF's rope_freqs."""
    base, _ = inv_freq(replace(spec, scaling=Scaling()), seq_len)
    scaled, _ = inv_freq(spec, seq_len)
    with np.errstate(divide="ignore"):
        ratio = np.where(scaled == 0.0, np.inf, base / np.where(scaled == 0.0, 1.0, scaled))
    return np.ascontiguousarray(ratio[:n], dtype=np.float32)


def ggml_call(spec: RopeSpec, seq_len: int) -> GgmlCall:
    """The ggml arguments that express ``spec`` at ``seq_len`` (``max(position) + 1``)."""
    sc, d = spec.scaling, spec.resolved_rotary_dim
    mode = _mode(spec)
    n_dims = spec.head_dim // 2 if spec.vision is not None else d
    sections: tuple[int, int, int, int] | None = None
    if spec.vision is not None:
        q = spec.head_dim // 4
        sections = (q, q, q, q)
    elif spec.mrope_section is not None:
        t, h, w = (int(v) for v in spec.mrope_section)
        sections = (t, h, w, 0)
    _, s = inv_freq(spec, seq_len)
    call = GgmlCall(mode, n_dims, sections, 0, float(spec.theta), 1.0, 0.0, float(s), 0.0, 0.0, None)
    kind = sc.type
    if kind == "linear":
        call = replace(call, freq_scale=1.0 / sc.given("factor"))
    elif kind == "ntk":
        call = replace(call, freq_base=float(spec.theta) * sc.given("alpha") ** (spec.resolved_freq_dim / (spec.resolved_freq_dim - 2)))
    elif kind == "yarn":
        freq_scale = float(np.float32(1.0 / sc.given("factor")))
        magnitude = 1.0 + 0.1 * math.log(1.0 / freq_scale)  # what ggml multiplies into attn_factor itself
        call = replace(call, freq_scale=freq_scale, ext_factor=1.0, n_ctx_orig=sc.given_int("original_max_position_embeddings"),
                       beta_fast=32.0 if sc.beta_fast is None else float(sc.beta_fast),
                       beta_slow=1.0 if sc.beta_slow is None else float(sc.beta_slow), attn_factor=float(s) / magnitude)
    elif kind == "longrope":
        l0 = sc.given_int("original_max_position_embeddings")
        ext = sc.given_factors("long_factor" if seq_len > l0 else "short_factor")
        call = replace(call, freq_factors=np.ascontiguousarray(np.asarray(ext, dtype=np.float64)[: n_dims // 2], dtype=np.float32))
    elif kind in ("llama3", "proportional"):
        call = replace(call, freq_factors=_factors(spec, seq_len, spec.n_pairs))
    return call


def run_graph(x: np.ndarray, rows: np.ndarray, call: GgmlCall, backward: bool) -> np.ndarray:
    """One ggml graph: ``x [T, H, D]`` (float32/float16), ``rows [R, T]`` int positions -> ``y`` like ``x``."""
    import ggml
    from ggml import utils

    x = np.ascontiguousarray(x)
    pos = np.ascontiguousarray(rows.reshape(-1), dtype=np.int32)  # row-major [R, T]: ggml's pos[i2 + ne2 * r]
    ff = call.freq_factors
    size = 2 * x.nbytes + pos.nbytes + (ff.nbytes if ff is not None else 0)
    mem = size + 16 * ggml.ggml_tensor_overhead() + ggml.ggml_graph_overhead() + 4 * (x.shape[-1] + 64) + (1 << 20)
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=mem, mem_buffer=None))
    if ctx is None:
        raise MemoryError(f"ggml_init could not allocate {mem} bytes")
    try:
        a = utils.from_numpy(x, ctx)
        b = utils.from_numpy(pos, ctx)
        c = utils.from_numpy(ff, ctx) if ff is not None else None
        args = (call.mode, call.n_ctx_orig, call.freq_base, call.freq_scale, call.ext_factor, call.attn_factor,
                call.beta_fast, call.beta_slow)
        if call.sections is not None:
            sections = (ctypes.c_int * 4)(*call.sections)
            fn = ggml.ggml_rope_multi_back if backward else ggml.ggml_rope_multi
            y = fn(ctx, a, b, c, call.n_dims, sections, *args)
        else:
            fn = ggml.ggml_rope_ext_back if backward else ggml.ggml_rope_ext
            y = fn(ctx, a, b, c, call.n_dims, *args)
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        status = ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        if status != 0:
            raise RuntimeError(f"ggml_graph_compute_with_ctx returned status {status}")
        return np.array(utils.to_numpy(y)).reshape(x.shape).copy()
    finally:
        ggml.ggml_free(ctx)


@dataclass
class GgmlBackend(BaseBackend):
    """ggml's CPU rope operator, forward and backward (see the module docstring)."""

    name: str = "ggml"
    capabilities: Capabilities = field(default_factory=lambda: _CAPS)
    libraries: tuple[str, ...] = ("ggml-python",)

    def library_reason(self) -> str | None:
        return missing("ggml")

    def case_reason(self, case: GoldenCase) -> str | None:
        spec = case.spec
        if spec.mrope_section is not None and spec.pairing != "half":
            return "ggml's MROPE/IMROPE modes rotate half pairs (NEOX) only: no adjacent mRoPE (GLM-4V)"
        if spec.vision is not None and (spec.resolved_rotary_dim != spec.head_dim or spec.head_dim % 4):
            return "ggml's VISION mode rotates the whole head in four sections of D/4 pairs (needs rotary_dim = head_dim, D % 4 = 0)"
        pos = case.positions
        if pos is not None and pos.size and int(pos.min()) < -INT32_MAX - 1:
            return "ggml's positions are int32"
        return None

    def _stage(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, backward: bool) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype not in (np.float32, np.float16):
            raise TypeError(f"ggml's CPU rope takes float32 or float16, not {x.dtype}")
        rows = ggml_rows(spec, positions)
        every = rows_for(spec, positions)
        seq_len = max(int(every.max()) + 1, 1) if every.size else 1
        call = ggml_call(spec, seq_len)
        self._check(call, spec, x)
        if x.ndim == 3:  # packed [N, H, D], positions per token
            return run_graph(x, rows.reshape(rows.shape[0], -1), call, backward)
        out = np.empty_like(x)
        grid = rows.reshape(rows.shape[0], x.shape[0], x.shape[1])  # [R, B, T]
        for b in range(x.shape[0]):
            out[b] = run_graph(x[b], grid[:, b], call, backward)
        return out

    @staticmethod
    def _check(call: GgmlCall, spec: RopeSpec, x: np.ndarray) -> None:
        """ggml's own GGML_ASSERTs on these arguments abort the process: refuse them here instead."""
        d = x.shape[-1]
        if call.n_dims % 2 or not 0 < call.n_dims <= d:
            raise ValueError(f"n_dims={call.n_dims}: must be even and in (0, {d}]")
        if call.sections is not None:
            if not any(call.sections[:3]) or sum(call.sections) > d:
                raise ValueError(f"sections={call.sections}: need a non-zero section and a sum <= {d}")
            if call.mode == MODES["vision"] and call.n_dims != d // 2:
                raise ValueError(f"VISION needs n_dims = head_dim / 2 (got {call.n_dims}, head_dim {d})")
        if call.freq_factors is not None and call.freq_factors.size < call.n_dims // 2:
            raise ValueError(f"freq_factors has {call.freq_factors.size} values, ggml needs {call.n_dims // 2}")

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._stage(x, positions, spec, backward=False)

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return self._stage(grad, positions, spec, backward=True)
