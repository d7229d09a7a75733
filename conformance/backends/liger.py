"""``liger``: Liger-Kernel's Triton RoPE (``liger_kernel.ops.rope.LigerRopeFunction``), forward and backward.

Liger replaces HF's ``apply_rotary_pos_emb`` in patched models: the tables still come from
the model's rotary module, the rotation runs in the Triton kernel. The adapter does the
same: ``forward``/``backward`` take cos/sin from the transformers family module that
:func:`conformance.backends.hf.route` picks for the spec (Llama, GPT-NeoX for partial,
Phi-3, Gemma 3/4: half pairing, window first) and call
``LigerRopeFunction.apply(q, k, cos, sin, None, 1, rotary_dim)`` with ``q = k`` as
``[B, H, T, D]``; the kernel's own backward (rotation by ``-sin``) is reached through
torch autograd. ``apply_qk``/``forward_qk``/``backward_qk`` hand the kernel a real q and k in
one launch, k with fewer heads than q (GQA, MQA) where the case says so (the kernel takes
``n_q_head`` and ``n_kv_head``; one head dim for both). The kernel rotates contiguous q/k in
their own memory; the adapter passes copies, so the judge's arrays are never touched. ``apply`` feeds the given canonical tables re-laid-out as
``cat(c, c)``. The kernel loads ``x`` converted to the table dtype (the input dtype in
HF), so angle float32, tables in the input dtype.

CPU: the kernel runs under the Triton interpreter. ``TRITON_INTERPRET=1`` must be in the
environment before ``triton`` is imported; the adapter sets it when no CUDA device is
present and triton is not imported yet, and otherwise reports NOT_SUPPORTED with that
reason (run the check with ``--isolate`` so the worker process sets it first). The interpreter
runs one program per token row at ~15 ms each, so on CPU cases of more than
:data:`INTERPRETED_MAX_ROWS` token rows are NOT_SUPPORTED (with that reason); on a GPU they run.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.spec import SCALING_TYPES, RopeSpec

from ..cases.case import GoldenCase
from ..vocabulary import FEATURES
from .base import BaseBackend, Capabilities
from .hf import HFBackend, route
from .torch_util import TorchFunctionStages, missing, to_numpy, to_torch

__all__ = ["LigerBackend", "ensure_triton_backend", "interpreted", "INTERPRETED_MAX_ROWS"]

_FAMILIES = ("llama", "gpt_neox", "phi3", "gemma3", "gemma4")
#: the most token rows (batch rows x tokens) a case may have under the Triton interpreter
INTERPRETED_MAX_ROWS = 64


def token_rows(case: GoldenCase) -> int:
    """Token rows of a case's tensor (batch rows x tokens, or packed tokens): the kernel's programs."""
    x = case.arrays.get("x", case.arrays.get("grad"))
    return int(np.prod(np.shape(x)[:-2], dtype=np.int64)) if x is not None else 0


def ensure_triton_backend() -> str | None:
    """Make Triton runnable here: a CUDA device, or the interpreter. Returns a reason when it cannot."""
    import torch

    if torch.cuda.is_available():
        return None
    if os.environ.get("TRITON_INTERPRET") == "1":
        return None
    if "triton" in sys.modules:
        return "no CUDA device and triton was imported without TRITON_INTERPRET=1 (set it, or use --isolate)"
    os.environ["TRITON_INTERPRET"] = "1"
    return None


def interpreted() -> bool:
    """Whether Triton kernels run under the CPU interpreter here."""
    return os.environ.get("TRITON_INTERPRET") == "1"


@dataclass
class LigerBackend(TorchFunctionStages, BaseBackend):
    name: str = "liger"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"apply", "forward", "backward"}),
            pairings=frozenset({"half"}),
            scaling_types=frozenset(SCALING_TYPES) - {"ntk"},
            features=frozenset(FEATURES)
            - {"window_last", "mrope_chunked", "mrope_interleaved", "vision_qwen_vl", "vision_pixtral"},
            angle_dtype="float32",
            table_dtype="input",
            notes="Triton kernel (interpreter on CPU); tables from the HF rotary module, cast to the input dtype.",
            call_forms=frozenset({"qk"}),
            qk_shapes=frozenset({"gqa", "mqa"}),
        )
    )

    def library_reason(self) -> str | None:
        return missing("torch", "triton", "liger_kernel") or ensure_triton_backend()

    def case_reason(self, case: GoldenCase) -> str | None:
        if case.dtype == "bfloat16" and interpreted():
            return "Triton interpreter (CPU): bfloat16 arithmetic is wrong in triton 3.9 (docs/backends-torch.md)"
        if interpreted() and token_rows(case) > INTERPRETED_MAX_ROWS:
            return (f"Triton interpreter (CPU): more than {INTERPRETED_MAX_ROWS} token rows (one interpreted program "
                    "per row, ~15 ms each); these cases run on a GPU")
        if case.stage != "apply":
            reason = missing("transformers")
            if reason:
                return reason
            fam = route(case.spec)
            if isinstance(fam, str) or fam.key not in _FAMILIES:
                return "tables come from HF Llama/GPT-NeoX/Phi-3/Gemma rotary modules; none matches this spec"
        return None

    # ---- kernel call ------------------------------------------------------------------------
    @staticmethod
    def _rotate(xt: Any, cos: Any, sin: Any, spec: RopeSpec) -> Any:
        """xt ``[*P, H, D]``; cos/sin ``[*P, r]`` (cat layout): run the kernel on ``[B, H, T, D]``."""
        from liger_kernel.ops.rope import LigerRopeFunction

        shape, r = xt.shape, cos.shape[-1]
        grid = tuple(shape[:-2])
        bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
        q = xt.reshape(*bt, *shape[-2:]).transpose(1, 2)
        k = q.detach().clone()  # the kernel rotates q and k in one launch; only q is returned
        y, _ = LigerRopeFunction.apply(q, k, cos.reshape(*bt, r), sin.reshape(*bt, r), None, 1, spec.resolved_rotary_dim)
        return y.transpose(1, 2).reshape(shape)

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        import torch

        ensure_triton_backend()
        grid = x.shape[:-2]
        c = to_torch(np.broadcast_to(cos, (*grid, spec.n_pairs)))
        s = to_torch(np.broadcast_to(sin, (*grid, spec.n_pairs)))
        with torch.no_grad():
            return to_numpy(self._rotate(to_torch(x), torch.cat((c, c), -1), torch.cat((s, s), -1), spec))

    def _forward_fn(self, spec: RopeSpec, positions: np.ndarray, shape: tuple[int, ...]) -> Any:
        ensure_triton_backend()
        fam = route(spec)
        assert not isinstance(fam, str)
        grid = tuple(shape[:-2])
        hf = HFBackend()
        module = fam.rotary_module(fam.config(spec))
        pid = hf.position_ids(fam, spec, np.asarray(positions, dtype=np.int64), grid)

        def fn(xt: Any) -> Any:
            cos, sin = fam.tables(module, xt, pid)
            R = cos.shape[-1]
            return self._rotate(xt, cos.reshape(*grid, R), sin.reshape(*grid, R), spec)

        return fn

    # ---- q and k in one launch (the kernel's own form; k may have fewer heads: GQA, MQA) --------
    @staticmethod
    def _rotate_qk(qt: Any, kt: Any, cos: Any, sin: Any, spec: RopeSpec) -> tuple[Any, Any]:
        """q ``[*P, Hq, D]``, k ``[*P, Hk, D]``; cos/sin ``[*P, r]`` (cat layout): one kernel launch."""
        from liger_kernel.ops.rope import LigerRopeFunction

        grid, r = tuple(qt.shape[:-2]), cos.shape[-1]
        bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
        q = qt.reshape(*bt, *qt.shape[-2:]).transpose(1, 2)
        k = kt.reshape(*bt, *kt.shape[-2:]).transpose(1, 2)
        yq, yk = LigerRopeFunction.apply(q, k, cos.reshape(*bt, r), sin.reshape(*bt, r), None, 1, spec.resolved_rotary_dim)
        return yq.transpose(1, 2).reshape(qt.shape), yk.transpose(1, 2).reshape(kt.shape)

    def apply_qk(self, q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> tuple[np.ndarray, np.ndarray]:
        import torch

        ensure_triton_backend()
        grid = q.shape[:-2]
        c = to_torch(np.broadcast_to(cos, (*grid, spec.n_pairs)))
        s = to_torch(np.broadcast_to(sin, (*grid, spec.n_pairs)))
        with torch.no_grad():
            yq, yk = self._rotate_qk(to_torch(q), to_torch(k), torch.cat((c, c), -1), torch.cat((s, s), -1), spec)
        return to_numpy(yq), to_numpy(yk)

    def _forward_qk_fn(self, spec: RopeSpec, positions: np.ndarray, grid: tuple[int, ...]) -> Any:
        ensure_triton_backend()
        fam = route(spec)
        assert not isinstance(fam, str)
        module = fam.rotary_module(fam.config(spec))
        pid = HFBackend().position_ids(fam, spec, np.asarray(positions, dtype=np.int64), grid)

        def fn(qt: Any, kt: Any) -> tuple[Any, Any]:
            cos, sin = fam.tables(module, qt, pid)
            R = cos.shape[-1]
            return self._rotate_qk(qt, kt, cos.reshape(*grid, R), sin.reshape(*grid, R), spec)

        return fn

    def forward_qk(self, q: np.ndarray, k: np.ndarray, positions: np.ndarray, spec: RopeSpec,
                   cu_seqlens: Any = None) -> tuple[np.ndarray, np.ndarray]:
        import torch

        fn = self._forward_qk_fn(spec, positions, tuple(q.shape[:-2]))
        with torch.no_grad():
            yq, yk = fn(to_torch(q), to_torch(k))
        return to_numpy(yq), to_numpy(yk)

    def backward_qk(self, grad_q: np.ndarray, grad_k: np.ndarray, positions: np.ndarray, spec: RopeSpec,
                    cu_seqlens: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's own backward for q and k (rotation by ``-sin``), reached through torch autograd."""
        import torch

        fn = self._forward_qk_fn(spec, positions, tuple(grad_q.shape[:-2]))
        gq, gk = to_torch(grad_q), to_torch(grad_k)
        q, k = gq.clone().requires_grad_(True), gk.clone().requires_grad_(True)
        yq, yk = fn(q, k)
        dq, dk = torch.autograd.grad((yq, yk), (q, k), grad_outputs=(gq, gk))
        return to_numpy(dq), to_numpy(dk)

