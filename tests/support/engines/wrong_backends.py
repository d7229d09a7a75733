"""Deliberately wrong backends: one per bug class of docs/spec.md section 6 (for the meta-tests).

Each is a float32 engine (:class:`conformance.backends.emulated.Float32Emulation`) with one
bug built in by overriding a step; the bug is written here independently of the decoys in
:mod:`conformance.diagnose.likely_bug` (which the meta-tests check name it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from conformance.backends.emulated import Float32Emulation, emulation_rows, float32_inv_freq
from roperef.layout import pair_axes
from roperef.spec import RopeSpec, Scaling

F32 = np.float32


@dataclass
class Buggy(Float32Emulation):
    """``bug`` names the defect; see :data:`BUGS` for the list and the decoy that must name it."""

    bug: str = ""
    seen: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.name = f"buggy-{self.bug}"

    # --- the hooks
    def _spec(self, spec: RopeSpec) -> RopeSpec:
        b = self.bug
        if b == "pairing-swapped":
            return spec.replace(pairing="adjacent" if spec.pairing == "half" else "half") if spec.vision is None else spec
        if b == "scaling-dropped" and spec.scaling.type != "default" and spec.vision is None:
            return spec.replace(scaling=Scaling())
        if b == "window-wrong-end" and spec.rotary_dim < spec.head_dim:
            return spec.replace(rotary_start=spec.head_dim - spec.rotary_dim if spec.rotary_start == 0 else 0)
        if b == "denominator-head-dim" and spec.freq_dim != spec.head_dim and spec.vision is None:
            return spec.replace(freq_dim=spec.head_dim)
        if b == "mrope-layout" and spec.mrope_section is not None:
            return spec.replace(mrope_layout="interleaved" if spec.mrope_layout == "chunked" else "chunked")
        return spec

    def _freqs(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, np.float32]:
        b, sc = self.bug, spec.scaling
        if b == "longrope-boundary" and sc.type == "longrope" and seq_len == sc.original_max_position_embeddings:
            seq_len += 1  # uses the long factors at seq_len == L0 (>= instead of >)
        if b == "dynamic-stale" and sc.type == "dynamic":
            key = spec.replace(scaling=sc)  # the rotary module's state survives between calls
            seq_len = self.seen[key] = max(self.seen.get(key, 0), seq_len)
        w, s = float32_inv_freq(spec, seq_len)
        if b == "inv-freq-bf16":
            w = w.astype(ml_dtypes.bfloat16).astype(F32)
        if b == "scaling-twice" and sc.type != "default" and spec.vision is None:
            w0, _ = float32_inv_freq(spec.replace(scaling=Scaling()), seq_len)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(w0 > 0, w * (w / np.where(w0 > 0, w0, 1)), 0).astype(F32)
        if b == "attention-dropped":
            s = F32(1)
        if b == "attention-squared":
            s = F32(s * s)
        return w, s

    def _rows(self, spec: RopeSpec, rows: np.ndarray) -> np.ndarray:
        b = self.bug
        if b == "positions-bf16":
            return rows.astype(np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)
        if b == "positions-fp16":
            return rows.astype(np.float16).astype(np.float64)
        if b == "positions-ignored":
            return np.zeros_like(rows)
        if b == "mrope-row-swapped" and spec.mrope_section is not None:
            return rows[[0, 2, 1]]
        return rows

    # --- the engine, with hooks
    def _tables(self, spec: RopeSpec, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        seq_len = max(int(rows.max()) + 1, 1) if rows.size else 1
        w, s = self._freqs(spec, seq_len)
        with np.errstate(over="ignore", invalid="ignore"):  # fp16 positions overflow past 65504
            r = self._rows(spec, rows)
            p = np.moveaxis(r, 0, -1).astype(F32)[..., pair_axes(spec)]
            phi = (p * w).astype(F32).astype(np.float64)
            return (np.cos(phi).astype(F32) * s).astype(F32), (np.sin(phi).astype(F32) * s).astype(F32)

    def inv_freq(self, spec, seq_len):
        w, s = self._freqs(self._spec(spec), seq_len)
        return w, float(s)

    def cos_sin(self, spec, positions):
        return self._tables(self._spec(spec), emulation_rows(spec, positions))

    def apply(self, x, cos, sin, spec):
        return self._rotate(np.asarray(x), np.asarray(cos), np.asarray(sin), self._spec(spec), False)

    def _run(self, x, positions, spec, cu_seqlens, backward):
        x = np.asarray(x)
        bspec = self._spec(spec)
        cos, sin = self._tables(bspec, emulation_rows(spec, positions, x.shape[:-2]))
        y = self._rotate(x, cos, sin, bspec, backward)
        if self.bug == "only-row0":
            if cu_seqlens is not None:
                y[int(cu_seqlens[1]):] = x[int(cu_seqlens[1]):]
            elif x.ndim == 4:
                y[1:] = x[1:]
        return y

    def forward(self, x, positions, spec, cu_seqlens=None):
        return self._run(x, positions, spec, cu_seqlens, False)

    def backward(self, grad, positions, spec, cu_seqlens=None):
        return self._run(grad, positions, spec, cu_seqlens, True)


#: bug -> decoy names (fnmatch patterns) the diagnosis may give for it.
BUGS: dict[str, tuple[str, ...]] = {
    "positions-bf16": ("positions:bf16",),
    "positions-fp16": ("positions:fp16",),
    "inv-freq-bf16": ("inv_freq:bf16",),
    "pairing-swapped": ("pairing:other",),
    "positions-ignored": ("positions:zero",),
    "only-row0": ("batch:only-first",),
    "scaling-dropped": ("scaling:dropped",),
    "scaling-twice": ("scaling:twice",),
    "attention-dropped": ("attention:missing",),
    "attention-squared": ("attention:squared",),
    "window-wrong-end": ("window:wrong-end",),
    "denominator-head-dim": ("freq:denominator-head-dim",),
    "mrope-row-swapped": ("mrope:rows-permuted",),
    "mrope-layout": ("mrope:layout",),
    "longrope-boundary": ("longrope:boundary",),
    "dynamic-stale": ("dynamic:length",),
}
