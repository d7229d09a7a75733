"""Explore mode, part 2: shrink a failing draw to a minimal failing case.

Greedy, like Hypothesis' shrinker: the candidates below are tried in order; the first one
that still fails *the same way* (:func:`same_failure`) becomes the current case and the
search starts again from the top; it stops when no candidate fails any more or the call
budget is spent. Every candidate is strictly smaller than its parent in one of these
(well-founded) measures, so the search ends:

1. fewer batch rows: the row of the worst element alone, rows 0 and that row, either half, all
   but the last (one fewer: a tile or launch boundary is found exactly);
2. fewer tokens: the worst token alone, the three tokens around it, either half, all but the
   last (packed sequences: the worst sequence alone, either half of the sequences, all but the
   last, every sequence cut to its first token or its first half, then the tokens of a single
   sequence);
3. fewer heads: the worst head alone, either half, all but the last;
4. simpler positions: all zero; shifted so that the smallest one is 0 or 1 (parity kept);
   shifted towards 0 by half, a quarter, ... of the smallest magnitude (even shifts, so odd
   positions stay odd); for ``inv_freq``, ``seq_len`` 1 or halved;
5. a simpler spec (plain RoPE only): no scaling, each optional scaling parameter dropped,
   the whole head rotated, the exponent denominator = the rotary width, ``half`` pairing,
   theta = 10000, head dim 2, half the head dim or one pair fewer (a prefix of the channels).

The result is the smallest shape the greedy search reaches: a bug at a boundary (a head tile of 4,
64 tokens for a prefill path, 16 pairs) shrinks to the first count past it.

Slices keep the values of the failing inputs (they are not drawn again); expected values
are recomputed for every candidate. Candidates outside the backend's declared interface
are skipped without calling it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from functools import partial
from typing import Any

import numpy as np

from roperef.spec import RopeSpec, Scaling

from .draw import Draw

__all__ = ["candidates", "same_failure", "shrink", "ShrinkOutcome"]


# ----------------------------------------------------------------------------- slicing


def _take(draw: Draw, axis: int, idx: Sequence[int]) -> Draw:
    """Keep entries ``idx`` of grid axis ``axis`` (0 = batch rows, 1 = tokens) of a bshd draw."""
    keep = np.asarray(idx, dtype=np.int64)
    pos = draw.given("positions")
    pos_axis = axis + 1 if draw.spec.mrope_section is not None else axis
    tensor = None if draw.tensor is None else np.ascontiguousarray(draw.tensor.take(keep, axis=axis))
    return draw.with_(positions=np.ascontiguousarray(pos.take(keep, axis=pos_axis)), tensor=tensor)


def _take_sequences(draw: Draw, seqs: Sequence[int], keep: Sequence[int] | np.ndarray | None = None) -> Draw:
    """Packed sequences ``seqs`` (each cut to its first ``keep[k]`` tokens when given)."""
    cu = draw.given("cu_seqlens")
    parts = [np.arange(cu[k], cu[k + 1] if keep is None else cu[k] + keep[k]) for k in seqs]
    tokens = np.concatenate(parts)
    lengths = [len(p) for p in parts]
    new_cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return draw.with_(positions=draw.given("positions")[tokens].copy(), tensor=np.ascontiguousarray(draw.given("tensor")[tokens]),
                      cu_seqlens=new_cu)


def _take_tokens_packed(draw: Draw, lo: int, hi: int) -> Draw:
    """One packed sequence: keep its tokens ``[lo, hi)``."""
    return draw.with_(positions=draw.given("positions")[lo:hi].copy(), tensor=np.ascontiguousarray(draw.given("tensor")[lo:hi]),
                      cu_seqlens=np.array([0, hi - lo], dtype=np.int64))


def _halves(n: int) -> list[list[int]]:
    return [list(range(n // 2)), list(range(n // 2, n))] if n > 1 else []


def _subsets(n: int, worst: int) -> list[list[int]]:
    """Index subsets of ``range(n)`` to try, smallest first (each strictly smaller than n)."""
    worst = min(max(int(worst), 0), n - 1)
    out = [[worst]]
    window = list(range(max(0, worst - 1), min(n, worst + 2)))
    if 1 < len(window) < n:
        out.append(window)
    if worst != 0 and n > 2:
        out.append([0, worst])
    out += _halves(n)
    out.append(list(range(n - 1)))  # one fewer: the smallest count that still fails, past a boundary
    seen, unique = set(), []
    for s in out:
        if 0 < len(s) < n and tuple(s) not in seen:
            seen.add(tuple(s))
            unique.append(s)
    return unique


def _worst_index(worst: Mapping[str, Any] | None, key: str, fallback_axis: int | None = None) -> int:
    if not worst:
        return 0
    value = worst.get(key)
    if isinstance(value, int):
        return value
    index = worst.get("index")
    if fallback_axis is not None and isinstance(index, list) and len(index) > fallback_axis:
        return int(index[fallback_axis])
    return 0


# ----------------------------------------------------------------------------- candidates


def _fewer_rows_tokens_heads(draw: Draw, worst: Mapping[str, Any] | None) -> Iterator[Draw]:
    if (draw.tensor is not None and draw.tensor.size == 0) or (draw.positions is not None and draw.positions.size == 0):
        return  # an empty case has no element to drop
    grid = draw.grid
    if draw.cu_seqlens is not None:
        cu = draw.cu_seqlens
        n_seq = len(cu) - 1
        for seqs in _subsets(n_seq, _worst_index(worst, "batch")):
            yield _take_sequences(draw, seqs)
        lengths = np.diff(cu)
        if n_seq > 1 and lengths.max() > 1:
            for keep in (np.ones_like(lengths), (lengths + 1) // 2):
                if (keep < lengths).any():
                    yield _take_sequences(draw, range(n_seq), keep)
        if n_seq == 1 and cu[-1] > 1:
            n = int(cu[-1])
            for sub in _subsets(n, _worst_index(worst, "token", 0)):
                yield _take_tokens_packed(draw, sub[0], sub[-1] + 1)
    elif len(grid) == 2:
        for rows in _subsets(grid[0], _worst_index(worst, "batch", 0)):
            yield _take(draw, 0, rows)
        for toks in _subsets(grid[1], _worst_index(worst, "token", 1)):
            yield _take(draw, 1, toks)
    if draw.tensor is not None and draw.tensor.shape[-2] > 1:
        for heads in _subsets(draw.tensor.shape[-2], _worst_index(worst, "head")):
            yield draw.with_(tensor=np.ascontiguousarray(draw.tensor[..., heads, :]))


def _shifted(draw: Draw, delta: int) -> Draw:
    return draw.with_(positions=(draw.given("positions") + np.int64(delta)).astype(np.int64))


def _simpler_positions(draw: Draw) -> Iterator[Draw]:
    if draw.stage == "inv_freq":
        seq = int(draw.seq_len or 1)
        for new in (1, seq // 2):
            if 1 <= new < seq:
                yield draw.with_(seq_len=new, regime=f"seq{new}")
        return
    pos = draw.positions
    if pos is None or not pos.size:
        return
    if pos.any():
        yield draw.with_(positions=np.zeros_like(pos))
    lo, hi = int(pos.min()), int(pos.max())
    if lo > 1:
        yield _shifted(draw, -(lo - lo % 2))
        step = lo // 2
        while step >= 2:
            yield _shifted(draw, -(step - step % 2))
            step //= 2
    elif hi < -1:
        yield _shifted(draw, -hi + (-hi) % 2)
        step = -hi // 2
        while step >= 2:
            yield _shifted(draw, step - step % 2)
            step //= 2


def _without_parameter(spec: RopeSpec, name: str) -> RopeSpec:
    """``spec`` with scaling parameter ``name`` unset (its documented default applies)."""
    return spec.replace(scaling=Scaling(**{**spec.scaling.to_dict(), name: None}))


def _spec_variants(spec: RopeSpec, pairings: Sequence[str], scaling_types: Sequence[str]) -> Iterator[RopeSpec]:
    sc = spec.scaling
    makers: list[Callable[[], RopeSpec]] = []
    if sc.type != "default" and "default" in scaling_types:
        makers.append(lambda: spec.replace(scaling=Scaling()))
    for f in fields(Scaling):
        if f.name != "type" and getattr(sc, f.name) is not None:
            makers.append(partial(_without_parameter, spec, f.name))
    if spec.rotary_dim != spec.head_dim and sc.type != "longrope":
        makers.append(lambda: spec.replace(rotary_dim=spec.head_dim, rotary_start=0, freq_dim=None))
    if spec.freq_dim != spec.rotary_dim:
        makers.append(lambda: spec.replace(freq_dim=spec.rotary_dim))
    if spec.pairing != "half" and "half" in pairings:
        makers.append(lambda: spec.replace(pairing="half"))
    if spec.theta != 10000.0:
        makers.append(lambda: spec.replace(theta=10000.0))
    for make in makers:
        try:
            yield make()
        except (ValueError, TypeError):
            pass  # not a valid spec (a required parameter dropped, a window that no longer fits)


def _smaller_head(draw: Draw) -> Iterator[Draw]:
    """Head dim 2 (one pair), then about half the head dim (even), keeping a prefix of the channels
    (and of longrope's per-pair factor lists)."""
    spec = draw.spec
    if spec.rotary_dim != spec.head_dim:
        return
    for head in sorted({2, (spec.head_dim // 2) & ~1, spec.head_dim - 2}):
        if not 2 <= head < spec.head_dim:
            continue
        sc = spec.scaling
        try:
            if sc.type == "longrope":
                n = head // 2
                short, long = sc.given_factors("short_factor")[:n], sc.given_factors("long_factor")[:n]
                sc = Scaling(**{**sc.to_dict(), "short_factor": short, "long_factor": long})
            small = spec.replace(head_dim=head, rotary_dim=None, freq_dim=None, scaling=sc)
        except (ValueError, TypeError):
            continue
        tensor = None if draw.tensor is None else np.ascontiguousarray(draw.tensor[..., :head])
        yield draw.with_(spec=small, tensor=tensor)


def candidates(draw: Draw, worst: Mapping[str, Any] | None, pairings: Sequence[str] = ("half",),
               scaling_types: Sequence[str] = ("default",)) -> Iterator[Draw]:
    """The smaller draws to try, in order (see the module docstring)."""
    yield from _fewer_rows_tokens_heads(draw, worst)
    yield from _simpler_positions(draw)
    if draw.spec.mrope_section is None and draw.spec.vision is None:
        for spec in _spec_variants(draw.spec, pairings, scaling_types):
            yield draw.with_(spec=spec)
        yield from _smaller_head(draw)


# ----------------------------------------------------------------------------- the search


def _error_kind(message: str) -> str:
    """``forward raised ValueError: ...`` -> ``forward raised ValueError``."""
    return message.split(":", 1)[0]


def same_failure(first: Any, other: Any) -> bool:
    """``other`` fails like ``first``: same status (FAIL or ERROR); on FAIL the same diagnosed bug when
    the first one was named; on ERROR the same exception type."""
    if other.status != first.status:
        return False
    if first.status == "ERROR":
        return _error_kind(other.message) == _error_kind(first.message)
    match = (first.diagnosis or {}).get("match")
    return match is None or (other.diagnosis or {}).get("match") == match


class ShrinkOutcome:
    """The minimal failing draw found, its judged case and result, and what it cost."""

    def __init__(self, draw: Draw, case: Any, result: Any, steps: int, calls: int, exhausted: bool) -> None:
        self.draw, self.case, self.result = draw, case, result
        self.steps, self.calls, self.exhausted = steps, calls, exhausted


def shrink(draw: Draw, case: Any, result: Any, judge: Callable[[Draw], tuple[Any, Any] | None],
           pairings: Sequence[str], scaling_types: Sequence[str], max_calls: int = 200) -> ShrinkOutcome:
    """Shrink a failing ``draw`` (judged as ``case`` -> ``result``).

    ``judge(draw)`` builds and runs a candidate and returns ``(case, result)``, or ``None`` when
    the candidate is outside the declared interface (no backend call, not counted).
    """
    steps = calls = 0
    improved = True
    while improved and calls < max_calls:
        improved = False
        worst = result.metrics.worst if result.metrics else None
        for cand in candidates(draw, worst, pairings, scaling_types):
            if calls >= max_calls:
                break
            try:
                judged = judge(cand)
            except (ValueError, TypeError):
                continue  # the reference rejects this candidate (e.g. a spec that is no longer valid)
            if judged is None:
                continue
            calls += 1
            if same_failure(result, judged[1]):
                draw, (case, result) = cand, judged
                steps += 1
                improved = True
                break
    return ShrinkOutcome(draw, case, result, steps, calls, exhausted=calls >= max_calls)
