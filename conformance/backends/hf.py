"""``hf``: Hugging Face transformers' rotary embeddings, judged through each model family's own code.

For every case the adapter picks the HF model family whose maths matches the spec
(:func:`route`), builds that family's config in memory (no download), instantiates its
rotary-embedding module and calls its apply function (:mod:`.hf_families`):

==========================================  =================================
spec                                        HF family
==========================================  =================================
2-D vision ``qwen_vl`` / ``pixtral``        Qwen2-VL vision / Pixtral
mRoPE chunked / interleaved                 Qwen2-VL / Qwen3-VL text
``adjacent_in_half_out`` (window last)      DeepSeek V3 (``rope_interleave``)
``half``, window last                       DeepSeek V3 (``rope_interleave=False``)
``adjacent``, whole head                    Cohere
``adjacent``, partial (window first)        GLM
``half`` + ``proportional``                 Gemma 4 (full-attention layer)
``half`` + ``longrope``                     Phi-3
``half``, partial (window first)            GPT-NeoX
``half`` + ``linear``                       Gemma 3 (full-attention layer)
``half``, anything else                     Llama
==========================================  =================================

``hf-gptj`` forces GPT-J (adjacent, ``rotary_dim``, theta fixed at 10000).

Stages: ``inv_freq`` (``ROPE_INIT_FUNCTIONS[type]`` or the family's default/axial
function), ``cos_sin`` (the rotary module, converted to ``[..., n]``), ``apply`` (the
family's apply function on canonical tables re-laid-out), ``forward`` (module + apply),
``backward`` (torch autograd through ``forward``); and each of apply, forward and backward with q
and k in one call (``apply_qk``, ``forward_qk``, ``backward_qk``: the family's
``apply_rotary_pos_emb(q, k, cos, sin)``, k with fewer heads (GQA, MQA) or, in DeepSeek V3, the
rope part alone). x (q, k) reaches transformers as a tensor on the judge's own memory
(``torch.from_numpy``: strides kept), so the declared layouts (qkv views, bhtd transposes, Fortran
order, an offset base) are what transformers reads. Stateful dynamic NTK / longrope: a
fresh module per call, so HF's update rule sees ``seq_len = max(position) + 1`` from the
initial state, which is the reference's stateless rule.

Precision (read from transformers 5.24): inv_freq and angles in float32; tables cast to
the input dtype (a float64 input gets float32-accurate tables cast up).

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import SCALING_TYPES, RopeSpec

from ..cases.case import GoldenCase, case_features
from ..vocabulary import FEATURES, LAYOUTS
from .base import BaseBackend, Capabilities
from .hf_families import FAMILIES, Family
from .torch_util import max_cache_rows, missing, positions_to_torch, to_numpy, to_torch, view_to_torch, vjp

__all__ = ["HFBackend", "HFGPTJBackend", "route"]

_HF_SCALING = frozenset(SCALING_TYPES) - {"ntk"}  # transformers has no fixed-NTK (alpha) rope_type


def _odd_freq_ok(spec: RopeSpec) -> bool:
    """HF derives the width from ``d = int(D*rho)`` as ``2*ceil(d/2)``; other (d, r) pairs are not expressible."""
    return (spec.resolved_freq_dim + 1) // 2 == spec.n_pairs


def route(spec: RopeSpec, forced: str | None = None) -> Family | str:
    """The HF family that implements ``spec``, or the reason none does."""
    D, r, start, d = spec.head_dim, spec.resolved_rotary_dim, spec.rotary_start, spec.resolved_freq_dim
    sc = spec.scaling.type
    full = r == D and start == 0 and d == r
    if forced == "gptj":
        if spec.pairing != "adjacent" or start != 0 or d != r:
            return "GPT-J rotates adjacent pairs of the first rotary_dim channels with d = rotary_dim"
        if spec.theta != 10000.0 or sc != "default" or spec.mrope_section or spec.vision:
            return "GPT-J has theta fixed at 10000 and no scaling"
        return FAMILIES["gptj"]
    if spec.vision is not None:
        return FAMILIES["qwen2_vl_vision" if spec.vision == "qwen_vl" else "pixtral"]
    if spec.mrope_section is not None:
        if not full or spec.pairing != "half":
            return "HF mRoPE (Qwen2-VL/Qwen3-VL) rotates the whole head with half pairing"
        if sc != "default":
            return f"HF mRoPE families are exercised with default scaling only (got {sc})"
        return FAMILIES["qwen2_vl" if spec.mrope_layout == "chunked" else "qwen3_vl"]
    if start > 0:
        if spec.pairing == "adjacent" or start + r != D or d != r:
            return "HF's only window-last form is DeepSeek V3 (rope channels last, half or adjacent-in/half-out)"
    if not _odd_freq_ok(spec):
        return f"HF cannot express freq_dim={d} with rotary_dim={r} (width is 2*ceil(d/2))"
    if sc == "proportional":
        if spec.pairing != "half" or not full:
            return "HF applies proportional RoPE only in Gemma 4 (half pairing, whole head)"
        return FAMILIES["gemma4"]
    if spec.pairing == "adjacent_in_half_out" and r < D and start + r != D:
        return "HF's adjacent-in/half-out form is DeepSeek V3, which rotates the last qk_rope_head_dim channels (window last)"
    if spec.pairing == "adjacent_in_half_out" or start > 0:
        return FAMILIES["deepseek_v3"] if d == r else "DeepSeek V3 uses d = qk_rope_head_dim"
    if spec.pairing == "adjacent":
        return FAMILIES["cohere" if full else "glm"]
    if sc == "longrope":
        return FAMILIES["phi3"]
    if not full:
        return FAMILIES["gpt_neox"]
    return FAMILIES["gemma3" if sc == "linear" else "llama"]


def _capabilities(features: frozenset[str], scaling: frozenset[str], notes: str,
                  qk_shapes: frozenset[str] = frozenset({"gqa", "mqa", "head_dims"})) -> Capabilities:
    return Capabilities(
        stages=frozenset({"inv_freq", "cos_sin", "apply", "forward", "backward"}),
        scaling_types=scaling,
        features=features,
        angle_dtype="float32",
        table_dtype="input",
        applies_attention_factor=True,
        notes=notes,
        layouts=frozenset(LAYOUTS),
        call_forms=frozenset({"qk"}),
        qk_shapes=qk_shapes,
    )


@dataclass
class HFBackend(BaseBackend):
    """transformers' rotary modules and apply functions, family chosen per spec (see module docstring)."""

    name: str = "hf"
    forced_family: str | None = None
    capabilities: Capabilities = field(
        default_factory=lambda: _capabilities(
            frozenset(FEATURES),
            _HF_SCALING,
            "transformers 5.24: inv_freq and angles float32, cos/sin cast to the input dtype "
            "(float64 inputs get float32-accurate tables); Cohere and Qwen2-VL vision rotate in float32. "
            "No fixed-NTK rope_type.",
        )
    )

    # ---- supports ---------------------------------------------------------------------------
    def library_reason(self) -> str | None:
        return missing("torch", "transformers")

    def case_reason(self, case: GoldenCase) -> str | None:
        fam = route(case.spec, self.forced_family)
        if isinstance(fam, str):
            return fam
        if fam.key == "gptj":
            if case.stage == "inv_freq":
                return "GPT-J exposes no inv_freq function (create_sinusoidal_positions builds the table)"
            pos = case.positions
            rows = max_cache_rows()
            if pos is not None and pos.size and (pos.min() < 0 or pos.max() >= rows):
                return f"GPT-J indexes a table of max_position_embeddings rows: positions must be in [0, {rows})"
        if fam.vision and "varlen" in case_features(case):
            return "HF vision rotary takes (h, w) per token, no cu_seqlens"
        if case.form is not None and case.form.k_spec is not None and fam.key != "deepseek_v3":
            return "HF rotates q and k of different head dims only in DeepSeek V3 (the rope part last, k_pe alone)"
        return None

    def _family(self, spec: RopeSpec) -> Family:
        fam = route(spec, self.forced_family)
        if isinstance(fam, str):
            raise ValueError(f"hf: {fam}")
        return fam

    # ---- stages -----------------------------------------------------------------------------
    def inv_freq(self, spec: RopeSpec, seq_len: int) -> tuple[np.ndarray, float]:
        fam = self._family(spec)
        inv, s = fam.inv_freq(fam.config(spec), int(seq_len))
        return to_numpy(inv), float(s)

    def position_ids(self, fam: Family, spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...]) -> Any:
        """HF-shaped position ids for a token grid ``grid``: ``[B, T]`` (or ``[3, B, T]``; ``[N, 2]`` vision)."""
        pos = np.asarray(positions, dtype=np.int64)
        if fam.vision:
            return positions_to_torch(np.broadcast_to(pos, (*grid, 2)).reshape(-1, 2))
        bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
        if spec.mrope_section is not None:
            return positions_to_torch(np.broadcast_to(pos, (3, *grid)).reshape(3, *bt))
        return positions_to_torch(np.broadcast_to(pos, grid).reshape(bt))

    def _max_positions(self, fam: Family, spec: RopeSpec, positions: np.ndarray) -> int | None:
        if fam.key == "gptj":  # the table must hold every position
            return int(np.max(positions)) + 1 if np.size(positions) else 1
        return None

    def cos_sin(self, spec: RopeSpec, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        fam = self._family(spec)
        pos = np.asarray(positions, dtype=np.int64)
        grid = pos.shape[1:] if spec.mrope_section is not None else pos.shape[:-1] if fam.vision else pos.shape
        module = fam.rotary_module(fam.config(spec, self._max_positions(fam, spec, pos)))
        dummy = torch.zeros(1, dtype=torch.float32)
        cos, sin = fam.tables(module, dummy, self.position_ids(fam, spec, pos, tuple(grid)))
        n = spec.n_pairs
        shape = (*grid, n)
        return to_numpy(fam.to_pairs(cos, n)).reshape(shape), to_numpy(fam.to_pairs(sin, n)).reshape(shape)

    def _rotate(self, fam: Family, spec: RopeSpec, x: Any, cos: Any, sin: Any) -> Any:
        """x ``[*P, H, D]`` torch, tables family-layout ``[*P, R]``: flatten to the family's shapes and apply."""
        grid, (H, D) = tuple(x.shape[:-2]), tuple(x.shape[-2:])
        R = cos.shape[-1]
        if fam.vision:
            y = fam.apply(x.reshape(-1, H, D), cos.reshape(-1, R), sin.reshape(-1, R), spec)
        else:
            bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
            y = fam.apply(x.reshape(*bt, H, D), cos.reshape(*bt, R), sin.reshape(*bt, R), spec)
        return y.reshape(*grid, H, D)

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        fam = self._family(spec)
        xt = view_to_torch(x)  # the judge's memory as it is (strided layouts reach transformers)
        grid = tuple(xt.shape[:-2])
        n = spec.n_pairs
        c = to_torch(np.broadcast_to(cos, (*grid, n)))
        s = to_torch(np.broadcast_to(sin, (*grid, n)))
        return to_numpy(self._rotate(fam, spec, xt, fam.from_pairs(c), fam.from_pairs(s)))

    def _forward_fn(self, spec: RopeSpec, positions: np.ndarray, shape: tuple[int, ...], dtype: str) -> Any:
        fam = self._family(spec)
        grid = shape[:-2]
        pos = np.asarray(positions, dtype=np.int64)
        module = fam.rotary_module(fam.config(spec, self._max_positions(fam, spec, pos)))
        pid = self.position_ids(fam, spec, pos, grid)

        def fn(xt: Any) -> Any:
            cos, sin = fam.tables(module, xt, pid)
            R = cos.shape[-1]
            return self._rotate(fam, spec, xt, cos.reshape(*grid, R), sin.reshape(*grid, R))

        return fn

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        import torch

        fn = self._forward_fn(spec, positions, x.shape, x.dtype.name)
        with torch.no_grad():
            return to_numpy(fn(view_to_torch(x)))

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None) -> np.ndarray:
        return vjp(self._forward_fn(spec, positions, grad.shape, grad.dtype.name), grad)

    # ---- q and k in one call (the family's apply_rotary_pos_emb(q, k, cos, sin)) ---------------
    def _rotate_qk(self, fam: Family, spec: RopeSpec, q: Any, k: Any, cos: Any, sin: Any,
                   k_spec: RopeSpec | None) -> tuple[Any, Any]:
        """q ``[*P, Hq, Dq]``, k ``[*P, Hk, Dk]`` torch, tables family-layout ``[*P, R]``."""
        grid, R = tuple(q.shape[:-2]), cos.shape[-1]
        lead = (-1,) if fam.vision else (grid if len(grid) == 2 else (1, int(np.prod(grid))))
        yq, yk = fam.apply_qk(q.reshape(*lead, *q.shape[-2:]), k.reshape(*lead, *k.shape[-2:]), cos.reshape(*lead, R),
                              sin.reshape(*lead, R), spec, k_spec)
        return yq.reshape(q.shape), yk.reshape(k.shape)

    def apply_qk(self, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec,
                 k_spec: RopeSpec | None = None) -> tuple[np.ndarray, np.ndarray]:
        import torch

        fam = self._family(spec)
        grid, n = q.shape[:-2], spec.n_pairs
        c = fam.from_pairs(to_torch(np.broadcast_to(cos, (*grid, n))))
        s = fam.from_pairs(to_torch(np.broadcast_to(sin, (*grid, n))))
        with torch.no_grad():
            yq, yk = self._rotate_qk(fam, spec, view_to_torch(q), view_to_torch(k), c, s, k_spec)
        return to_numpy(yq), to_numpy(yk)

    def _forward_qk_fn(self, spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...], k_spec: RopeSpec | None) -> Any:
        fam = self._family(spec)
        pos = np.asarray(positions, dtype=np.int64)
        module = fam.rotary_module(fam.config(spec, self._max_positions(fam, spec, pos)))
        pid = self.position_ids(fam, spec, pos, grid)

        def fn(qt: Any, kt: Any) -> tuple[Any, Any]:
            cos, sin = fam.tables(module, qt, pid)
            R = cos.shape[-1]
            return self._rotate_qk(fam, spec, qt, kt, cos.reshape(*grid, R), sin.reshape(*grid, R), k_spec)

        return fn

    def forward_qk(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: RopeSpec, cu_seqlens: Any = None,
                   k_spec: RopeSpec | None = None) -> tuple[np.ndarray, np.ndarray]:
        import torch

        fn = self._forward_qk_fn(spec, positions, tuple(q.shape[:-2]), k_spec)
        with torch.no_grad():
            yq, yk = fn(view_to_torch(q), view_to_torch(k))
        return to_numpy(yq), to_numpy(yk)

    def backward_qk(self, grad_q: np.ndarray, grad_k: np.ndarray, positions: np.ndarray, spec: RopeSpec,
                    cu_seqlens: Any = None, k_spec: RopeSpec | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The VJP of :meth:`forward_qk` by torch autograd (RoPE is linear: the primal point is the gradient)."""
        import torch

        fn = self._forward_qk_fn(spec, positions, tuple(grad_q.shape[:-2]), k_spec)
        gq, gk = to_torch(grad_q), to_torch(grad_k)
        q, k = gq.clone().requires_grad_(True), gk.clone().requires_grad_(True)
        yq, yk = fn(q, k)
        dq, dk = torch.autograd.grad((yq, yk), (q, k), grad_outputs=(gq, gk))
        return to_numpy(dq), to_numpy(dk)


@dataclass
class HFGPTJBackend(HFBackend):
    """``hf-gptj``: GPT-J's sinusoid table and ``rotate_every_two`` (adjacent pairs, theta 10000)."""

    name: str = "hf-gptj"
    forced_family: str | None = "gptj"
    capabilities: Capabilities = field(
        default_factory=lambda: _capabilities(
            frozenset(FEATURES) - {"negative_positions", "window_last", "mrope_chunked", "mrope_interleaved",
                                   "vision_qwen_vl", "vision_pixtral"},
            frozenset({"default"}),
            "GPT-J: float32 table of max_position_embeddings rows (inv_freq and angles float32), cast to the "
            "input dtype; theta fixed at 10000.",
            frozenset({"gqa", "mqa"}),
        )
    )
