"""Explore mode, part 1: random cases drawn within a backend's declared interface.

A :class:`Draw` is one random case before its expected values exist: the stage, a spec
(:func:`conformance.explore.specs.draw_spec`), the dtype, the position ids (and
``cu_seqlens`` for packed sequences), the input tensor (``x`` or ``grad``, float64 holding
values exactly representable in the dtype) or, for the ``inv_freq`` stage, the sequence
length. :func:`draw_case` makes one from a NumPy generator, using only what the backend
declares (:class:`~conformance.explore.specs.Interface`):

- positions (docs/spec.md section 6: odd positions, not round ones): contiguous rows from
  an offset near 0, 256, 2048, 4096, 65536, 2^20, 2^24 or 2^31 - T, or log-uniform
  below 2^31; per-row offsets, decode (T = 1, B > 1), sparse and negative positions and
  packed sequences only when declared; for longrope and dynamic NTK, the last position
  often sits just below or on the scaling switch (seq_len = L0, L0 + 1, M, 2M);
- shapes from the shape space of the generated cases (:mod:`conformance.generated.shapes`):
  batch rows 1, 3, 5; tokens per row 2^k +- 1 up to 1025 and 4097 (one packed sequence that long);
  1 to 9 heads; tokens, then heads, cut so that the tensor stays within :data:`MAX_ELEMENTS`;
  sometimes (when ``zero_size`` is declared) an empty batch, token or head axis;
- inputs: unit normal (sometimes scaled by 1e-3 or 1e3, sometimes with exact zeros),
  rounded to the case dtype.

:func:`build_case` turns a draw into a :class:`~conformance.cases.case.GoldenCase` whose expected
values come from :mod:`roperef.fast` (``inv_freq`` from :func:`roperef.frequencies.inv_freq`,
the function ``roperef.fast`` itself uses). The same generator state gives the same draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roperef import fast
from roperef.errors import bad
from roperef.frequencies import inv_freq as ref_inv_freq
from roperef.positions import POSITION_MAX, POSITION_MIN, grid_2d, mrope_ids
from roperef.spec import RopeSpec

from ..calls.declared import undeclared
from ..cases.case import GoldenCase, case_family, numpy_dtype, shape_tag
from ..cases.materialize import reference_arrays
from ..generated.shapes import BATCH_ROWS, HEAD_COUNTS, TOKENS
from .specs import Interface, draw_spec, log_uniform, odd, pick, scaling_switches

__all__ = ["Draw", "draw_case", "build_case", "declared_reason", "case_id"]

#: relative weight of each stage in a draw (forward-like stages carry most bugs)
STAGE_WEIGHTS = {"forward": 4.0, "backward": 2.0, "cos_sin": 2.0, "apply": 1.0, "inv_freq": 1.0}
#: offsets a contiguous row starts near (the issue's position regimes); jittered to odd values
OFFSET_ANCHORS = (0, 256, 2048, 4096, 65536, 2**20, 2**24)
#: the largest drawn tensor, in elements (tokens, then heads, are cut to stay within it)
MAX_ELEMENTS = 1 << 16
#: how often a draw of a plain, unpacked case is made empty (no batch row, token or head), when declared
ZERO_SIZE_CHANCE = 0.03


@dataclass(frozen=True)
class Draw:
    """One random case before its expected values (see the module docstring).

    ``positions``: plain ``[B, T]`` (or ``[N]`` packed), mRoPE ``[3, B, T]``, vision ``[B, T, 2]``;
    ``tensor``: ``[B, T, H, D]`` or packed ``[N, H, D]`` (forward, backward, apply), else None.
    """

    seed: int
    stage: str
    spec: RopeSpec
    dtype: str
    regime: str
    positions: np.ndarray | None = None
    tensor: np.ndarray | None = None
    cu_seqlens: np.ndarray | None = None
    seq_len: int | None = None

    @property
    def grid(self) -> tuple[int, ...]:
        """The token grid: ``(B, T)`` or ``(N,)`` (packed); ``()`` for inv_freq."""
        if self.tensor is not None:
            return tuple(self.tensor.shape[:-2])
        if self.positions is None:
            return ()
        if self.spec.mrope_section is not None:
            return tuple(self.positions.shape[1:])
        return tuple(self.positions.shape[:-1] if self.spec.vision is not None else self.positions.shape)

    def with_(self, **changes: Any) -> Draw:
        return replace(self, **changes)

    def given(self, name: str) -> np.ndarray:
        """The array ``name`` (``positions``, ``tensor`` or ``cu_seqlens``), which this draw's stage has.

        Every stage but inv_freq draws ``positions``; forward, backward and apply a ``tensor``; packed
        draws ``cu_seqlens``. This accessor gives the array its non-optional type and names the field
        if a caller asks for one the draw lacks.
        """
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"draw {self.stage} seed={self.seed}: has no {name}")
        return np.asarray(value)


# ----------------------------------------------------------------------------- small draws


def _offset(rng: np.random.Generator, tokens: int, negative: bool, switch: Sequence[int] = ()) -> int:
    """Where a contiguous row of ``tokens`` positions starts (its last position stays < 2^31)."""
    top = POSITION_MAX - tokens + 1
    if negative and rng.random() < 0.2:
        return -int(log_uniform(rng, 1, 2**31 - 1))
    roll = rng.random()
    if switch and roll < 0.35:  # last position + 1 on or just past a scaling switch
        return max(0, min(top, int(pick(rng, switch)) - tokens + int(rng.integers(0, 2))))
    if roll < 0.45:
        return 0
    if roll < 0.6:
        return top - 2 * int(rng.integers(0, 3))  # ends at 2^31 - 1 - 2k
    if roll < 0.85:
        anchor = int(pick(rng, OFFSET_ANCHORS))
        return max(0, min(top, odd(anchor + int(rng.integers(-tokens - 8, 9)))))
    return min(top, odd(int(log_uniform(rng, 1, 2**31 - 1))))


# ----------------------------------------------------------------------------- specs


# ----------------------------------------------------------------------------- positions


def _sparse_row(rng: np.random.Generator, tokens: int, negative: bool) -> np.ndarray:
    span = int(rng.choice((4 * tokens, 4096, 2**20, 2**31 - 1)))
    lo = _offset(rng, min(span, 2**31 - 1), negative)
    values = np.unique(lo + rng.integers(0, span, size=tokens * 2))
    values = values[(values >= POSITION_MIN) & (values <= POSITION_MAX)][:tokens]
    while values.size < tokens:  # (rare) collisions: pad with distinct values below the lowest
        values = np.unique(np.concatenate([values, [int(values.min()) - 3 if values.size else 1]]))
    values = values.astype(np.int64)
    return values if rng.random() < 0.5 else rng.permutation(values)


def _plain_positions(rng: np.random.Generator, spec: RopeSpec, iface: Interface, stage: str,
                     batch: int, tokens: int) -> tuple[str, np.ndarray, np.ndarray | None]:
    f = iface.features
    negative = "negative_positions" in f
    regimes, weights = ["contiguous"], [3.0]
    if "per_batch_positions" in f:
        regimes += ["row-offsets", "decode"]
        weights += [2.0, 1.0]
    if "sparse_positions" in f:
        regimes.append("sparse")
        weights.append(1.0)
    if "varlen" in f and stage in ("forward", "backward"):
        regimes.append("varlen")
        weights.append(1.0)
    regime = pick(rng, regimes, weights)
    switch = scaling_switches(spec)
    if regime == "contiguous":
        p0 = _offset(rng, tokens, negative, switch)
        return regime, np.broadcast_to(p0 + np.arange(tokens, dtype=np.int64), (batch, tokens)).copy(), None
    if regime == "row-offsets":
        batch = max(batch, 2)
        starts = [_offset(rng, tokens, negative, switch) for _ in range(batch)]
        return regime, (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(tokens, dtype=np.int64)), None
    if regime == "decode":
        batch = max(batch, 2)
        return regime, np.asarray([[_offset(rng, 1, negative, switch)] for _ in range(batch)], dtype=np.int64), None
    if regime == "sparse":
        tokens = max(tokens, 2)
        rows = [_sparse_row(rng, tokens, negative)]
        rows += [_sparse_row(rng, tokens, negative) if "per_batch_positions" in f else rows[0] for _ in range(batch - 1)]
        return regime, np.stack(rows), None
    lengths = rng.integers(1, 17, size=int(rng.integers(1, 7)))
    lengths[int(rng.integers(lengths.size))] = tokens  # one sequence of the shape space's length
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    pos = np.concatenate([_offset(rng, int(n), negative, switch) + np.arange(n, dtype=np.int64) for n in lengths])
    return regime, pos.astype(np.int64), cu


def _mrope_positions(rng: np.random.Generator, iface: Interface, batch: int) -> tuple[str, np.ndarray]:
    grid = (int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    segments: list[Any] = [int(rng.integers(1, 6)), grid, int(rng.integers(1, 6))]
    ids = mrope_ids(segments)  # [3, T]
    per_row = "per_batch_positions" in iface.features
    first = _offset(rng, int(ids.max()) + 1, False)
    offsets = [first] + [_offset(rng, int(ids.max()) + 1, False) if per_row else first for _ in range(batch - 1)]
    return "text-image", np.stack([ids + off for off in offsets], axis=1).astype(np.int64)


def _vision_positions(rng: np.random.Generator) -> tuple[str, np.ndarray]:
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    big = rng.random() < 0.4
    shift = np.array([odd(int(rng.integers(0, 2**20))) if big else 0, odd(int(rng.integers(0, 2**20))) if big else 0])
    extra = rng.integers(0, 4200, size=(int(rng.integers(0, 4)), 2))
    pos = np.concatenate([grid_2d(h, w) + shift, extra]).astype(np.int64)
    return ("long-grid" if big else "grid"), pos[None]


# ----------------------------------------------------------------------------- cases


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def _tensor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    x = rng.standard_normal(shape) * float(pick(rng, (1.0, 1.0, 1.0, 1e-3, 1e3)))
    if rng.random() < 0.2:
        x[rng.random(shape) < 0.1] = 0.0
    return _round(x, dtype)


def draw_case(rng: np.random.Generator, iface: Interface, seed: int) -> Draw:
    """One random case within ``iface`` (a valid spec; positions in [-2^31, 2^31))."""
    why = iface.empty_reason()
    if why:
        bad("interface", iface.stages, why)
    stage = pick(rng, iface.stages, [STAGE_WEIGHTS[s] for s in iface.stages])
    spec = draw_spec(rng, iface)
    dtype = pick(rng, iface.dtypes)
    if stage == "inv_freq":
        switch = scaling_switches(spec)
        if switch and rng.random() < 0.7:
            seq_len = max(1, int(pick(rng, switch)) + int(rng.integers(-1, 2)))
        else:
            seq_len = int(log_uniform(rng, 1, 2**31))
        return Draw(seed, stage, spec, dtype, f"seq{seq_len}", seq_len=seq_len)
    batch, tokens = _grid(rng, spec)
    cu = None
    if spec.mrope_section is not None:
        tokens = 0
        regime, pos = _mrope_positions(rng, iface, batch)
        grid: tuple[int, ...] = pos.shape[1:]
    elif spec.vision is not None:
        regime, pos = _vision_positions(rng)
        grid = pos.shape[:-1]
    else:
        regime, pos, cu = _plain_positions(rng, spec, iface, stage, batch, tokens)
        grid = pos.shape
    if stage != "cos_sin" and spec.n_axes == 1:
        pos, cu = _fit(pos, cu, spec.head_dim)
        grid = pos.shape
    budget = max(1, MAX_ELEMENTS // (max(int(np.prod(grid)), 1) * spec.head_dim))
    heads = min(int(pick(rng, HEAD_COUNTS)), budget)
    if "zero_size" in iface.features and cu is None and spec.n_axes == 1 and rng.random() < ZERO_SIZE_CHANCE:
        axis = pick(rng, ("batch", "tokens") if stage == "cos_sin" else ("batch", "tokens", "heads"))
        regime = f"empty-{axis}"
        if axis == "heads":
            heads = 0
        else:
            pos = pos[:0] if axis == "batch" else pos[:, :0]
            grid = pos.shape
    if stage == "cos_sin":
        return Draw(seed, stage, spec, dtype, regime, positions=pos)
    x = _tensor(rng, (*grid, heads, spec.head_dim), dtype)
    return Draw(seed, stage, spec, dtype, regime, positions=pos, tensor=x, cu_seqlens=cu)


def _fit(pos: np.ndarray, cu: np.ndarray | None, head_dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Plain positions cut so that one head of the tensor holds at most :data:`MAX_ELEMENTS`: the tokens
    of every row (``[B, T]``), or the last packed sequences (the first one cut when alone too long)."""
    room = max(1, MAX_ELEMENTS // head_dim)
    if cu is None:
        rows = max(pos.shape[0], 1)
        return (pos if pos.size <= room else np.ascontiguousarray(pos[:, : max(1, room // rows)])), None
    if pos.size <= room:
        return pos, cu
    keep = int(np.searchsorted(cu, room, side="right")) - 1  # whole sequences that fit
    if keep < 1:
        return np.ascontiguousarray(pos[:room]), np.array([0, room], dtype=np.int64)
    return np.ascontiguousarray(pos[: cu[keep]]), np.ascontiguousarray(cu[: keep + 1])


def _grid(rng: np.random.Generator, spec: RopeSpec) -> tuple[int, int]:
    """Batch rows and tokens per row from the shape space (:mod:`conformance.generated.shapes`), the
    tokens cut to the largest value of the space that keeps one head within :data:`MAX_ELEMENTS`."""
    batch, tokens = int(pick(rng, BATCH_ROWS)), int(pick(rng, TOKENS))
    room = max(1, MAX_ELEMENTS // (batch * spec.head_dim))
    if tokens > room:
        tokens = max([t for t in TOKENS if t <= room] or [1])
    return batch, tokens


def _flags(draw: Draw, attention: float) -> tuple[str, ...]:
    spec, out = draw.spec, set()
    if draw.positions is not None and draw.positions.size:
        pos = draw.positions
        if ((pos >= 1) & (pos % 2 == 1)).any():
            out.add("odd-position")
        if int(np.abs(pos).max()) >= 2**20:
            out.add("long-position")
        if int(pos.min()) < 0:
            out.add("negative-offset")
        if int(pos.min()) != 0 or draw.regime in ("row-offsets", "decode", "varlen"):
            out.add("offset")
    if draw.cu_seqlens is not None:
        out.add("varlen")
    if draw.regime == "decode" and len(draw.grid) == 2 and draw.grid[0] > 1:
        out.add("decode-b>1-t1")
    if spec.rotary_start > 0:
        out.add("window-last")
    elif spec.resolved_rotary_dim < spec.head_dim:
        out.add("partial")
    if spec.resolved_freq_dim % 2:
        out.add("odd-width")
    if spec.pairing == "adjacent_in_half_out":
        out.add("pairing-order")
    if spec.mrope_section is not None:
        out.add(f"mrope-{spec.mrope_layout}")
    if spec.vision is not None:
        out.add("vision-2d")
    if attention != 1.0:
        out.add("attention-factor")
    return tuple(sorted(out))


def case_id(draw: Draw, suffix: str = "") -> str:
    """``family/explore-<scaling>/pairing/dtype/shape/<regime>-seed<S>[suffix]`` (a valid golden id)."""
    spec = draw.spec
    if draw.stage == "inv_freq":
        shape: tuple[int, ...] = ()
    elif draw.stage == "cos_sin":
        shape = draw.grid if len(draw.grid) == 2 else (1, *draw.grid)
    else:
        shape = tuple(draw.given("tensor").shape)
    tag = shape_tag(shape, draw.stage, spec.head_dim)
    variant = f"explore-{spec.scaling.type}" + (f"-mrope-{spec.mrope_layout}" if spec.mrope_section else "") + (
        f"-vision-{spec.vision}" if spec.vision else "")
    return f"{case_family(draw.stage, spec)}/{variant}/{spec.pairing}/{draw.dtype}/{tag}/{draw.regime}-seed{draw.seed}{suffix}"


def build_case(draw: Draw, suffix: str = "", *, expected: bool = True) -> GoldenCase:
    """The :class:`GoldenCase` of ``draw``: inputs as drawn, expected values by :mod:`roperef.fast`
    (``expected=False``: zeros in their place, a cheap probe for ``supports()`` and the interface check)."""
    engine: Any = fast if expected else _Zeros()
    spec = draw.spec
    a: dict[str, np.ndarray] = {}
    if draw.stage == "inv_freq":
        freqs, s = ref_inv_freq(spec, draw.seq_len)
        a.update(seq_len=np.asarray(draw.seq_len, dtype=np.int64), inv_freq=np.asarray(freqs, dtype=np.float64),
                 attention_factor=np.asarray(s, dtype=np.float64))
    elif draw.stage == "cos_sin":
        pos = draw.given("positions")
        a["positions"] = pos
        a["cos"], a["sin"] = engine.cos_sin(spec, pos)
    elif draw.stage == "apply":
        pos, x = draw.given("positions"), draw.given("tensor")
        cos, sin = engine.cos_sin(spec, pos)
        cos, sin = _round(cos, draw.dtype), _round(sin, draw.dtype)
        a.update(x=x, cos=cos, sin=sin, y=engine.apply(x, cos, sin, spec), table_positions=pos)
    else:
        pos, x = draw.given("positions"), draw.given("tensor")
        key, out = ("x", "y") if draw.stage == "forward" else ("grad", "grad_x")
        a.update({key: x, "positions": pos})
        if draw.cu_seqlens is not None:
            a["cu_seqlens"] = draw.cu_seqlens
        a[out] = getattr(engine, draw.stage)(x, pos, spec, cu_seqlens=draw.cu_seqlens)
    if draw.stage != "inv_freq":  # what the expected values were computed with (golden schema 2)
        a.update(reference_arrays(spec, draw.given("positions")))
    s = float(ref_inv_freq(spec, draw.seq_len if draw.stage == "inv_freq" else _seq_len(draw))[1])
    return GoldenCase(id=case_id(draw, suffix), family=case_family(draw.stage, spec), stage=draw.stage, spec=spec,
                      dtype=draw.dtype, tier="smoke", flags=_flags(draw, s), arrays=a)


class _Zeros:
    """Stands in for :mod:`roperef.fast` in a probe: outputs of the right shape, all zero."""

    @staticmethod
    def cos_sin(spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return fast.cos_sin(spec, positions)  # apply's tables are inputs: always real

    @staticmethod
    def apply(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        return np.zeros(x.shape)

    @staticmethod
    def forward(x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(x.shape)

    backward = forward


def _seq_len(draw: Draw) -> int:
    pos = draw.positions
    return max(int(pos.max()) + 1, 1) if pos is not None and pos.size else 1


def declared_reason(iface: Interface, case: GoldenCase) -> str | None:
    """Why ``case`` falls outside ``iface`` (None when inside): the draw is then retried."""
    return undeclared(iface, case)
