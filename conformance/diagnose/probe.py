"""Probing: call the backend again with designed inputs, once per failing group, to measure what a
case's own data cannot show.

A *failing group* is the set of failing cases that share stage, spec, dtype and input shape
(:func:`group_key`); the first FAIL of a group is probed, the others reuse its result. Every probe
is the failing case with other inputs (same spec, dtype, shape and positions: nothing the backend
has not accepted already), sent through the same guarded call the runner uses (the call thread, or
the ``--isolate`` worker process). At most :data:`MAX_PROBE_CALLS` calls per group:

============  ======  ===============================================================================
probe         calls   what it shows
============  ======  ===============================================================================
``repeat``    1       the case itself again: an output that changes between identical calls (state)
``isolate``   1       x doubled on (row 0, even tokens, head 0), zero elsewhere: a zeroed (token, head)
                      with a non-zero output depends on other heads / tokens / rows; a kept one must
                      give twice its first output (linearity)
``heads``     1       every head given head 0's input: heads must give identical outputs
``unit``      1-2     one unit vector per (token, head), cycling over the channels: the channels each
                      input reaches (the channel map, whatever the pairing)
============  ======  ===============================================================================

``inv_freq`` and ``cos_sin`` cases get ``repeat`` only. A probe that raises costs its call and is
reported; a time-out stops probing for the rest of the run. File-protocol backends (``--outputs``)
cannot be called again: they get the data-only diagnosis (:mod:`.operator`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef import reference
from roperef.layout import pair_map

from ..calls.results import is_outputs
from ..calls.stage_call import TIMED_OUT, Interrupted, StageError
from ..cases.case import GoldenCase
from ..vocabulary import STAGE_OUTPUTS
from .describe_maps import pair_map_findings
from .findings import Finding, ranges
from .samples import channel_candidates, pair_samples

__all__ = ["MAX_PROBE_CALLS", "ProbeResult", "ProbeBook", "group_key", "run_probes"]

Arr = np.ndarray
#: the most extra backend calls one failing group may cost
MAX_PROBE_CALLS = 5
Caller = Callable[[GoldenCase], tuple[Any, list[str]]]


@dataclass
class ProbeResult:
    """What probing one failing group found."""

    group: str
    calls: int = 0
    probes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    first_case: str = ""

    def to_dict(self, reused: bool = False) -> dict[str, Any]:
        return {"group": self.group, "calls": self.calls, "probes": list(self.probes), "errors": list(self.errors),
                "first_case": self.first_case, "reused": reused, "findings": [f.to_dict() for f in self.findings]}


def group_key(case: GoldenCase) -> str:
    """Stage, spec, dtype and input shape of a case (the failing group it belongs to)."""
    a = case.arrays
    shape = next((list(np.shape(a[k])) for k in ("x", "grad", "positions", "seq_len") if k in a), [])
    return json.dumps([case.stage, case.spec.to_dict(), case.dtype, shape, "cu_seqlens" in a], sort_keys=True, default=str)


def _outputs(case: GoldenCase, raw: Any) -> dict[str, Arr]:
    """A probe call's outputs as float64 arrays: what the caller hands back (the stage's outputs already
    turned into arrays where the backend ran, :func:`conformance.calls.stage_call.call_stage`; a call
    form's single part ``[(label, outputs)]``) or, from a caller of the judge's own making, the raw result."""
    names = STAGE_OUTPUTS[case.stage]
    if type(raw) is list and len(raw) == 1 and type(raw[0]) is tuple and len(raw[0]) == 2:
        raw = raw[0][1]
    if is_outputs(case.stage, raw):
        raw = tuple(raw[n] for n in names) if len(names) > 1 else raw[names[0]]
    values = (raw,) if len(names) == 1 else tuple(raw) if isinstance(raw, (tuple, list)) and len(raw) == len(names) else None
    if values is None:
        raise StageError(f"returned {type(raw).__name__}, not the {case.stage} outputs")
    out = {n: np.asarray(v, dtype=np.float64) for n, v in zip(names, values)}
    for n, v in out.items():
        if v.shape != np.shape(case.arrays[n]):
            raise StageError(f"output {n} has shape {v.shape}, expected {np.shape(case.arrays[n])}")
    return out


def _with_input(case: GoldenCase, tag: str, x: Arr) -> GoldenCase:
    """The case with input x (or grad) replaced and its expected output recomputed by the reference."""
    name, out = ("grad", "grad_x") if case.stage == "backward" else ("x", "y")
    arrays = dict(case.arrays)
    arrays[name] = x
    spec = case.spec
    if case.stage == "apply":
        arrays[out] = reference.apply(x, arrays["cos"], arrays["sin"], spec)
    else:
        fn = reference.forward if case.stage == "forward" else reference.backward
        arrays[out] = fn(x, arrays["positions"], spec, cu_seqlens=arrays.get("cu_seqlens"))
    return replace(case, id=f"{case.id}#probe-{tag}", arrays=arrays)


def _slots(case: GoldenCase) -> tuple[Arr, Arr, Arr, int]:
    """Row, index in row and head of every (token, head) slot of a tensor case, flattened; and D."""
    name = "grad" if case.stage == "backward" else "x"
    x = np.asarray(case.arrays[name])
    grid, H, D = x.shape[:-2], x.shape[-2], x.shape[-1]
    n = int(np.prod(grid)) if grid else 1
    if len(grid) >= 2:
        row, idx = np.arange(n) // grid[-1], np.arange(n) % grid[-1]
    elif "cu_seqlens" in case.arrays:
        cu = np.asarray(case.arrays["cu_seqlens"], dtype=np.int64)
        row = np.searchsorted(cu, np.arange(n), side="right") - 1
        idx = np.arange(n) - cu[row]
    else:
        row, idx = np.zeros(n, dtype=np.int64), np.arange(n)
    return np.repeat(row, H), np.repeat(idx, H), np.tile(np.arange(H), n), D


class _Session:
    def __init__(self, case: GoldenCase, outputs: Mapping[str, Arr], bound: Mapping[str, Arr], call: Caller, budget: int,
                 floor: float, u_out: float) -> None:
        self.case, self.outputs, self.bound, self.call, self.budget = case, outputs, bound, call, budget
        self.floor, self.u_out = floor, u_out
        self.result = ProbeResult(group=group_label(case), first_case=case.id)
        self.timed_out = False

    def run(self, tag: str, probe: GoldenCase) -> dict[str, Arr] | None:
        if self.result.calls >= self.budget or self.timed_out:
            return None
        self.result.calls += 1
        self.result.probes.append(tag)
        try:
            raw, _modified = self.call(probe)
            return _outputs(probe, raw)
        except Interrupted:
            raise
        except StageError as exc:
            self.result.errors.append(f"{tag}: {exc}")
            self.timed_out = str(exc).startswith(TIMED_OUT)
        except Exception as exc:  # the probe's outputs could not be read; the diagnosis goes on
            self.result.errors.append(f"{tag}: {type(exc).__name__}: {exc}")
        return None


def _repeat(ss: _Session) -> None:
    case = ss.case
    got = ss.run("repeat", replace(case, id=f"{case.id}#probe-repeat"))
    if got is None:
        return
    worst, where = 0.0, ""
    for name, first in ss.outputs.items():
        a, b = np.asarray(first, dtype=np.float64), got[name]
        with np.errstate(all="ignore"):
            d = np.abs(a - b) / np.asarray(ss.bound[name], dtype=np.float64)
        d = np.where(np.isnan(d) & (np.isnan(a) == np.isnan(b)), 0.0, d)
        if d.size and float(np.nanmax(d)) > worst:
            worst, where = float(np.nanmax(d)), name
    if worst > 1.0:
        ss.result.findings.append(Finding("state", f"the output changes between identical calls (the second call differs by up to "
                                          f"{worst:.3g}x the bound in {where}): the backend keeps state between calls",
                                          "changes", {}, {"difference_over_bound": worst}, {"difference_over_bound": 0.0}, probe=True))


def _tensor(case: GoldenCase) -> tuple[str, str, Arr]:
    name, out = ("grad", "grad_x") if case.stage == "backward" else ("x", "y")
    return name, out, np.asarray(case.arrays[name], dtype=np.float64)


def _isolate(ss: _Session) -> None:
    case = ss.case
    name, out, x = _tensor(case)
    row, idx, head, D = _slots(case)
    keep = (row == 0) & (idx % 2 == 0) & (head == 0)
    if keep.all() or not keep.any():
        return
    xf = x.reshape(-1, D)
    xp = np.where(keep[:, None], 2.0 * xf, 0.0).reshape(x.shape)
    got = ss.run("isolate", _with_input(case, "isolate", xp))
    if got is None:
        return
    y = got[out].reshape(-1, D)
    leak = np.abs(y) > 8.0 * ss.floor + 0.0
    zero = ~keep
    kinds = (("head", (row == 0) & (idx % 2 == 0) & (head != 0), "other heads of the same token"),
             ("token", (row == 0) & (idx % 2 == 1), "other tokens of the same row"),
             ("row", row != 0, "other rows (or packed sequences)"))
    for axis, sel, words in kinds:
        hit = sel & zero & leak.any(axis=1)
        if hit.any():
            ss.result.findings.append(Finding("dependence", f"a (token, head) whose input is zero gets a non-zero output when only "
                                              f"{words} have inputs: the output depends on {words}", axis,
                                              {"slots": [int(k) for k in np.nonzero(hit)[0][:32]]},
                                              {"nonzero_outputs": int(hit.sum())}, {"nonzero_outputs": 0}, probe=True))
    first = np.asarray(ss.outputs[out], dtype=np.float64).reshape(-1, D)
    b = np.asarray(ss.bound[out], dtype=np.float64).reshape(-1, D)
    with np.errstate(all="ignore"):
        off = np.abs(y[keep] - 2.0 * first[keep]) / (2.0 * b[keep])
    off = np.where(np.isfinite(off), off, 0.0)
    if off.size and float(off.max()) > 1.0:
        ss.result.findings.append(Finding("linearity", f"doubling the input of a (token, head) while zeroing the others does not "
                                          f"double its output (off by up to {float(off.max()):.3g}x the bound): the output is not "
                                          "linear in x, or it depends on the zeroed inputs", "not-linear", {},
                                          {"worst_over_bound": float(off.max())}, {"worst_over_bound": 0.0}, probe=True))


def _heads(ss: _Session) -> None:
    case = ss.case
    name, out, x = _tensor(case)
    H = x.shape[-2]
    if H < 2:
        return
    xp = np.broadcast_to(x[..., :1, :], x.shape).copy()
    got = ss.run("heads", _with_input(case, "heads", xp))
    if got is None:
        return
    y = got[out]
    b = np.asarray(ss.bound[out], dtype=np.float64)
    differ = []
    same_as_input = []
    for h in range(1, H):
        d = np.abs(y[..., h, :] - y[..., 0, :]) > 2.0 * np.maximum(b[..., h, :], b[..., 0, :])
        if d.any():
            differ.append(h)
            if np.array_equal(y[..., h, :], xp[..., h, :]):
                same_as_input.append(h)
    if differ and same_as_input == differ and not np.array_equal(y[..., 0, :], xp[..., 0, :]):
        # head 0 rotates its input, every differing head hands it back unchanged: those heads are not rotated
        ss.result.findings.append(Finding("head", f"heads {ranges(differ)} are not rotated: given head 0's input they return it "
                                          "unchanged while head 0 rotates it", "zero", {"heads": differ},
                                          {"unrotated_heads": same_as_input}, {"unrotated_heads": []}, probe=True))
    elif differ:
        extra = f" (heads {ranges(same_as_input)} return their input unrotated)" if same_as_input else ""
        ss.result.findings.append(Finding("head", f"heads given identical inputs give different outputs: heads {ranges(differ)} differ "
                                          f"from head 0{extra}", "head-dependent", {"heads": differ},
                                          {"unrotated_heads": same_as_input}, {"differing_heads": []}, probe=True))


def _unit(ss: _Session) -> None:
    case = ss.case
    name, out, x = _tensor(case)
    row, idx, head, D = _slots(case)
    S = row.size
    calls = min(1 if S >= 2 * D else 2, ss.budget - ss.result.calls)
    spec = case.spec
    pm = pair_map(spec) if case.stage != "backward" else pair_map(spec).transposed()
    partner = {c: {c} for c in range(D)}
    for a, b, oa, ob in zip(pm.in_a, pm.in_b, pm.out_a, pm.out_b):
        partner[int(a)] = {int(oa), int(ob)}
        partner[int(b)] = {int(oa), int(ob)}
    seen: dict[int, set[int]] = {}
    extra: dict[int, set[int]] = {}
    thr = max(8.0 * ss.u_out, 1e-9)
    for shift in range(calls):
        ch = (np.arange(S) + shift) % D
        xp = np.zeros((S, D))
        xp[np.arange(S), ch] = 1.0
        got = ss.run(f"unit{shift}", _with_input(case, f"unit{shift}", xp.reshape(x.shape)))
        if got is None:
            return
        y = got[out].reshape(S, D)
        for k in range(S):
            c = int(ch[k])
            reach = set(np.nonzero(np.abs(y[k]) > thr)[0].tolist())
            seen.setdefault(c, set()).update(reach)
            wrong = reach - partner[c]
            if wrong:
                extra.setdefault(c, set()).update(wrong)
    if not extra:
        return
    names = []
    for label, cand in channel_candidates(spec)[1:]:
        m = cand if case.stage != "backward" else cand.transposed()
        edges = {c: {c} for c in range(D)}
        for a, b, oa, ob in zip(m.in_a, m.in_b, m.out_a, m.out_b):
            edges[int(a)] = {int(oa), int(ob)}
            edges[int(b)] = {int(oa), int(ob)}
        if all(v <= edges[c] for c, v in seen.items()):
            names.append(label)
    cs = sorted(extra)
    examples = "; ".join(f"channel {c} -> {sorted(seen[c])} (spec: {sorted(partner[c])})" for c in cs[:4])
    words = f"unit-vector probe: {len(cs)} input channel(s) reach output channels the spec's pair map does not ({examples})"
    if names:
        words += f"; the measured channel map is that of pairs {names[0]}"
    ss.result.findings.append(Finding("channel", words, "unit-probe", {"channels": cs},
                                      {"reach": {str(c): sorted(seen[c]) for c in cs[:16]}},
                                      {"reach": {str(c): sorted(partner[c]) for c in cs[:16]}}, probe=True))


def _pairs(ss: _Session) -> None:
    """One head: the 2x2 map of every (token, pair) from two calls, every pair's first input channel set to 1, then its
    second (the spec's pair map), read as two heads of samples for :func:`.describe_maps.pair_map_findings`."""
    case = ss.case
    name, out, x = _tensor(case)
    if x.shape[-2] != 1 or ss.budget - ss.result.calls < 2:
        return
    spec = case.spec
    pm = pair_map(spec) if case.stage != "backward" else pair_map(spec).transposed()
    D = x.shape[-1]
    flat = x.reshape(-1, D)
    ys = []
    for tag, chans in (("pairs-a", pm.in_a), ("pairs-b", pm.in_b)):
        xp = np.zeros_like(flat)
        xp[:, chans] = 1.0
        got = ss.run(tag, _with_input(case, tag, xp.reshape(x.shape)))
        if got is None:
            return
        ys.append(np.asarray(got[out], dtype=np.float64).reshape(-1, D))
    sm = pair_samples(case, ss.outputs, {out: np.asarray(case.arrays[out], dtype=np.float64)}, ss.bound, np.zeros(spec.n_pairs), 1.0)
    if sm is None:
        return
    N, n = sm.n_tokens, sm.n_pairs
    zin = np.stack([np.ones((N, n), dtype=complex), np.full((N, n), 1j)], axis=1)
    zout = np.stack([y[:, pm.out_a] + 1j * y[:, pm.out_b] for y in ys], axis=1)
    with np.errstate(all="ignore"):
        unit_tol = np.nanmax(np.where(sm.weight > 0, sm.tol / np.sqrt(np.where(sm.weight > 0, sm.weight, 1.0)), np.nan), axis=1)
    tol = np.repeat(np.where(np.isfinite(unit_tol), unit_tol, np.inf)[:, None, :], 2, axis=1)
    ok = np.isfinite(zout)
    two = replace(sm, zin=zin, zout=np.where(ok, zout, 0.0), tol=tol, weight=np.where(ok, 1.0, 0.0), label="pair probe")
    bad = np.any(np.abs(two.zout - two.q[:, None, :] * two.zin) > tol, axis=(0, 1))
    found = pair_map_findings(two, bad, 4.0)
    ss.result.findings += [replace(f, words=f"pair probe (each pair given (1, 0), then (0, 1)): {f.words}", probe=True)
                           for f in found if f.pattern != "mixed"]


def run_probes(case: GoldenCase, outputs: Mapping[str, Arr], bound: Mapping[str, Arr], call: Caller, *, floor: float, u_out: float,
               budget: int = MAX_PROBE_CALLS) -> ProbeResult:
    """Probe the backend on ``case`` (its first FAIL of a group) within ``budget`` calls."""
    ss = _Session(case, outputs, bound, call, budget, floor, u_out)
    _repeat(ss)
    if case.stage in ("apply", "forward", "backward") and not ss.timed_out:
        one_head = np.shape(case.arrays["grad" if case.stage == "backward" else "x"])[-2] == 1
        # one head: its 2x2 maps (2 calls) before the channel map, which then gets the call left (a full cycle when S >= D)
        for step in ((_isolate, _pairs, _unit) if one_head else (_isolate, _heads, _unit)):
            if ss.timed_out:
                break
            step(ss)
    if ss.timed_out:
        ss.result.errors.append("probing stopped: a probe call timed out")
    return ss.result


def group_label(case: GoldenCase) -> str:
    a = case.arrays
    shape = next((tuple(np.shape(a[k])) for k in ("x", "grad", "positions") if k in a), ())
    return f"{case.stage}, {case.spec.pairing} pairing, {case.spec.scaling.type} scaling, {case.dtype}, shape {shape}"


class ProbeBook:
    """The probe results of one run, per failing group (thread-safe: parallel jobs share it).

    ``enabled`` False: nothing is probed (``--no-probe``). After a probe call times out, probing stops
    for the rest of the run."""

    def __init__(self, enabled: bool = True, budget: int = MAX_PROBE_CALLS) -> None:
        self.enabled, self.budget = enabled, budget
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._done: dict[str, ProbeResult] = {}
        self.stopped: str | None = None

    def calls(self) -> int:
        """Extra backend calls made so far."""
        return sum(r.calls for r in self._done.values())

    def groups(self) -> int:
        return len(self._done)

    def probe(self, case: GoldenCase, outputs: Mapping[str, Arr], bound: Mapping[str, Arr], call: Caller, *, floor: float,
              u_out: float) -> tuple[ProbeResult, bool] | None:
        """``(result, reused)`` for the case's group (probing it now if it is the group's first FAIL), or None."""
        if not self.enabled or self.stopped:
            return None
        key = group_key(case)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._done:
                return self._done[key], True
            result = run_probes(case, outputs, bound, call, floor=floor, u_out=u_out, budget=self.budget)
            self._done[key] = result
            if any(e.startswith("probing stopped") for e in result.errors):
                self.stopped = "a probe call timed out"
            return result, False
