"""What a case can expose: cheap facts about its positions, spec and precision.

The bug catalogue's exposure rules (:mod:`conformance.bugs.catalogue`) read these facts
instead of running every decoy on every case (that would cost seconds per run); the tests
check the rules against the decoys themselves (a rule that says "exposed" must mean that
the decoy's output differs from the correct one by more than the bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roperef.frequencies import inv_freq
from roperef.spec import RopeSpec

from ..cases.case import GoldenCase, is_empty
from ..error_model.tolerance import UNIT_ROUNDOFF, position_rows
from .rounding import round_to

__all__ = ["CaseFacts", "case_facts", "Precision"]


@dataclass(frozen=True)
class Precision:
    """Unit roundoffs the backend computes with (angles, tables) and returns (output)."""

    u_angle: float = UNIT_ROUNDOFF["float64"]
    u_table: float = UNIT_ROUNDOFF["float64"]
    u_out: float = UNIT_ROUNDOFF["float64"]

    @classmethod
    def of(cls, angle_dtype: str, table_dtype: str, case_dtype: str) -> Precision:
        table = case_dtype if table_dtype == "input" else table_dtype
        u_ang = UNIT_ROUNDOFF.get(angle_dtype, UNIT_ROUNDOFF["float64"])
        u_tab = max(UNIT_ROUNDOFF.get(table, UNIT_ROUNDOFF["float64"]), u_ang)
        return cls(u_ang, u_tab, UNIT_ROUNDOFF[case_dtype])


@dataclass(frozen=True)
class CaseFacts:
    """Facts about one case (positions are summarised over every row and token)."""

    stage: str
    spec: RopeSpec
    dtype: str
    precision: Precision
    has_positions: bool = False
    any_nonzero: bool = False
    min_abs_nonzero: float = 0.0  # smallest |p| > 0
    max_abs: int = 0
    min_abs: float = 0.0  # smallest |p|
    min_bf16_inexact: float = float("inf")  # smallest |p| that is not a bfloat16 number
    min_fp16_inexact: float = float("inf")  # smallest |p| that is not a float16 number (or overflows it)
    rows: int = 1  # batch rows, or packed sequences
    rows_differ: bool = False  # batch rows hold different positions
    rows_not_arange: bool = False  # some row is not 0, 1, ..., T-1
    packed: bool = False
    packed_offsets: bool = False  # some packed sequence does not start at 0
    packed_not_global: bool = False  # positions differ from arange(N)
    later_rows_rotate: bool = False  # a row/sequence after the first has a non-zero position
    row0_max_abs: float = 0.0  # largest |p| of batch row 0 (bshd)
    seq_len: int = 1
    attention_factor: float = 1.0
    w_min: float = 1.0  # smallest positive frequency
    multi_axis_differ: bool = False  # mRoPE rows t/h/w (or vision h/w) differ somewhere
    distinct_nonzero: int = 0  # distinct non-zero positions (table entries other than cos 1, sin 0: this x n pairs)

    @property
    def tensor(self) -> bool:
        return self.stage in ("apply", "forward", "backward")

    def tight(self, position: float) -> bool:
        """Whether a token at ``|position|`` has an angle bound well below a radian (so a bug that
        moves its angle by ~1 rad, or its table by one low-precision unit, is visible there)."""
        return self.precision.u_angle * abs(position) * 24.0 < 0.5


def _min_abs(values: np.ndarray) -> float:
    return float(np.abs(values).min()) if values.size else float("inf")


def _plain_rows(case: GoldenCase) -> np.ndarray | None:
    """Positions as ``[R, T]`` rows (batch rows, or one packed row), for the plain and mRoPE t row."""
    pos = case.arrays.get("positions")
    if pos is None:
        return None
    rows = position_rows(case.spec, pos)[0]
    return rows.reshape(1, rows.size) if rows.ndim <= 1 else rows.reshape(rows.shape[0], int(np.prod(rows.shape[1:])))


def case_facts(case: GoldenCase, precision: Precision | None = None) -> CaseFacts:
    """The :class:`CaseFacts` of ``case`` (precision: the backend's; float64 if not given)."""
    spec, a = case.spec, case.arrays
    prec = precision or Precision(u_out=UNIT_ROUNDOFF[case.dtype])
    seq = int(np.asarray(a["seq_len"])) if case.stage == "inv_freq" else 1
    s, w_min = 1.0, 1.0
    if case.stage in ("inv_freq", "cos_sin", "forward", "backward"):
        if case.stage != "inv_freq":
            allrows = position_rows(spec, a["positions"])
            seq = max(int(allrows.max()) + 1, 1) if allrows.size else 1
        w, s = inv_freq(spec, seq)
        w_min = float(w[w > 0].min()) if (w > 0).any() else 1.0
    base = CaseFacts(case.stage, spec, case.dtype, prec, seq_len=seq, attention_factor=s, w_min=w_min)
    if "positions" not in a or is_empty(case):  # an empty case has no element to expose anything
        return base
    allrows = position_rows(spec, a["positions"])
    flat = allrows.reshape(-1).astype(np.float64)
    nz = np.abs(flat[flat != 0])
    rows = _plain_rows(case)
    if rows is None:  # not reached: "positions" is in the arrays (checked above)
        return base
    packed = "cu_seqlens" in a
    n_rows, differ, not_arange, p_off, p_glob, later, row0 = 1, False, False, False, False, False, 0.0
    if packed:
        cu = np.asarray(a["cu_seqlens"], dtype=np.int64)
        pos = rows.reshape(-1)
        n_rows = len(cu) - 1
        starts = pos[cu[:-1]]
        p_off = bool((starts != 0).any())
        p_glob = not np.array_equal(pos, np.arange(pos.size))
        later = bool((pos[int(cu[1]):] != 0).any())
        differ = n_rows > 1
        not_arange = p_off
    elif rows is not None and position_rows(spec, a["positions"]).ndim >= 3:
        n_rows = rows.shape[0]
        differ = bool(n_rows > 1 and (rows != rows[:1]).any())
        not_arange = bool((rows != np.arange(rows.shape[1])).any())
        later = bool(n_rows > 1 and (rows[1:] != 0).any())
        row0 = float(np.abs(position_rows(spec, a["positions"])[:, 0]).max())
    multi = False
    if spec.n_axes > 1:
        multi = bool((allrows != allrows[:1]).any())
    return CaseFacts(
        case.stage, spec, case.dtype, prec, has_positions=True,
        any_nonzero=bool(nz.size), min_abs_nonzero=float(nz.min()) if nz.size else 0.0,
        max_abs=int(np.abs(flat).max()) if flat.size else 0,
        min_abs=float(np.abs(flat).min()) if flat.size else 0.0,
        min_bf16_inexact=_min_abs(flat[round_to("bfloat16", flat) != flat]),
        min_fp16_inexact=_min_abs(flat[round_to("float16", flat) != flat]),
        rows=n_rows, rows_differ=differ, rows_not_arange=not_arange, packed=packed,
        packed_offsets=p_off, packed_not_global=p_glob, later_rows_rotate=later,
        seq_len=seq, attention_factor=s, multi_axis_differ=multi, row0_max_abs=row0, w_min=w_min,
        distinct_nonzero=int(np.unique(nz).size),
    )
