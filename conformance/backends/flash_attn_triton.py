"""``flash-attn-triton``: flash-attention's Triton rotary kernel (``flash_attn/ops/triton/rotary.py``).

``apply_rotary(x, cos, sin, seqlen_offsets, cu_seqlens, max_seqlen, interleaved)``: tables
``cos, sin [seqlen_ro, rotary_dim/2]`` indexed by row ``s + seqlen_offsets[b]``; ``interleaved``
selects adjacent pairs (GPT-J) instead of half (NeoX); channels past ``rotary_dim`` are
copied. The kernel loads ``x`` and the tables and computes in float32, storing in ``x``'s dtype.

Adapted stage: ``apply`` (given per-token tables): ``x`` becomes one sequence
``[1, N, H, D]`` and the tables ``[N, n]``, so row ``t`` is token ``t``'s table.
``forward``/``backward`` need flash-attn's ``RotaryEmbedding`` module (``layers/rotary.py``),
which imports the package and thus its CUDA extension: that is the GPU adapter ``flash-attn``.

Getting the file without building CUDA: ``pip install flash-attn`` compiles CUDA
extensions (needs nvcc), so on a CPU machine the kernel file is read from the source
distribution instead: ``FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE pip download flash-attn==2.8.3.post2
--no-deps --no-binary :all: --no-build-isolation`` and unpack it; point
``ROPEREF_FLASH_ATTN_SRC`` at the unpacked directory (the one holding ``flash_attn/``). The
adapter loads that single file by path (it imports only torch and triton) and runs it under
the Triton interpreter (``TRITON_INTERPRET=1``, see :mod:`.liger`). An installed
``flash_attn`` package (GPU machines) is used directly.

Why it still does not run on CPU (flash-attn 2.8.3, torch 2.13): the Python wrapper
``apply_rotary`` launches the kernel inside ``with torch.cuda.device(x.device.index):``; a
CPU tensor has ``device.index = None`` and ``torch.cuda.device(None)`` raises
``TypeError: '<' not supported between instances of 'NoneType' and 'int'`` on a CPU-only
torch, before the interpreter is reached. Re-implementing the wrapper here would test our
copy, not flash-attn, so without a CUDA device the adapter reports NOT_SUPPORTED with that
reason; on a GPU machine it runs the real kernel.

The libraries it wraps are imported lazily, inside the methods that use them: they are optional,
and importing this adapter needs none of them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from roperef.spec import RopeSpec

from ..cases.case import GoldenCase
from ..vocabulary import FEATURES
from .base import BaseBackend, Capabilities
from .liger import ensure_triton_backend
from .torch_util import missing, to_numpy, to_torch

__all__ = ["FlashAttnTritonBackend", "kernel_module", "ENV_SRC"]

ENV_SRC = "ROPEREF_FLASH_ATTN_SRC"
_REL = Path("flash_attn") / "ops" / "triton" / "rotary.py"


def _source_file() -> Path | None:
    root = os.environ.get(ENV_SRC)
    if root and (Path(root) / _REL).is_file():
        return Path(root) / _REL
    return None


def kernel_module() -> ModuleType | str:
    """flash-attn's ``ops/triton/rotary.py`` as a module, or the reason it is unavailable."""
    if missing("flash_attn") is None:
        try:
            from flash_attn.ops.triton import rotary

            return rotary
        except Exception as exc:  # an installed flash_attn whose CUDA extension cannot load
            if _source_file() is None:
                return f"flash_attn installed but not importable here ({type(exc).__name__}: {exc})"
    path = _source_file()
    if path is None:
        return (
            f"flash-attn not installed (its wheel builds CUDA extensions); set {ENV_SRC} to an unpacked "
            "flash-attn sdist to run its Triton rotary kernel (docs/backends-torch.md)"
        )
    name = "_roperef_flash_attn_triton_rotary"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return f"{path}: Python cannot load it as a module"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class FlashAttnTritonBackend(BaseBackend):
    name: str = "flash-attn-triton"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            stages=frozenset({"apply"}),
            pairings=frozenset({"half", "adjacent"}),
            features=frozenset(FEATURES) - {"window_last", "mrope_chunked", "mrope_interleaved",
                                            "vision_qwen_vl", "vision_pixtral"},
            angle_dtype="float32",
            table_dtype="input",
            notes="Triton kernel with given tables (CUDA only: the wrapper needs a CUDA device); computes in float32.",
        )
    )

    def library_reason(self) -> str | None:
        return missing("torch", "triton")

    def case_reason(self, case: GoldenCase) -> str | None:
        if missing("flash_attn") and _source_file() is None:
            found = kernel_module()  # a reason (str) here: no flash_attn and no source file
            if isinstance(found, str):
                return found
        import torch

        if not torch.cuda.is_available():
            return ("needs a CUDA GPU: flash-attn's apply_rotary enters torch.cuda.device(x.device.index), "
                    "which raises for CPU tensors before the Triton interpreter runs")
        reason = ensure_triton_backend()
        if reason:
            return reason
        if case.spec.head_dim > 256:
            return "flash-attn's rotary kernel supports head_dim <= 256"
        return None

    def apply(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, spec: RopeSpec) -> np.ndarray:
        ensure_triton_backend()
        mod = kernel_module()
        if isinstance(mod, str):
            raise RuntimeError(mod)
        grid = x.shape[:-2]
        N = int(np.prod(grid))
        xt = to_torch(x).reshape(1, N, *x.shape[-2:])
        c = to_torch(np.broadcast_to(cos, (*grid, spec.n_pairs)).reshape(N, spec.n_pairs))
        s = to_torch(np.broadcast_to(sin, (*grid, spec.n_pairs)).reshape(N, spec.n_pairs))
        y = mod.apply_rotary(xt, c, s, interleaved=spec.pairing == "adjacent")
        return to_numpy(y.reshape(x.shape))
