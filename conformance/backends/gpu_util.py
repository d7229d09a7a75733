"""Shared guard for GPU-only adapters: a reason string when CUDA or the library is missing.

torch is imported lazily, inside :func:`gpu_reason`: an optional library,
loaded only when a GPU adapter asks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..vocabulary import FEATURES
from .torch_util import missing

__all__ = ["gpu_reason", "sequence_offsets", "CUDA_KERNEL_FEATURES"]


def gpu_reason(*modules: str) -> str | None:
    """``"<lib> not installed"`` / ``"needs a CUDA GPU"``, or None when the adapter can run here."""
    reason = missing("torch", *modules)
    if reason:
        return reason
    import torch

    if not torch.cuda.is_available():
        return "needs a CUDA GPU"
    return None


#: What the CUDA rotary kernels (flash-attn, TransformerEngine) take: contiguous positions from a
#: per-sequence start, the window at channel 0, one position row.
CUDA_KERNEL_FEATURES = frozenset(FEATURES) - {
    "window_last", "odd_freq_dim", "negative_positions", "sparse_positions",
    "mrope_chunked", "mrope_interleaved", "vision_qwen_vl", "vision_pixtral",
}


def sequence_offsets(positions: Any, shape: tuple[int, ...], cu_seqlens: Any) -> np.ndarray | None:
    """Per-sequence start offsets when every sequence's positions are ``p0 + arange(len)``; else None.

    Sequences are the rows of bshd ``positions`` (broadcast to ``shape[:2]``) or the packed
    slices ``cu_seqlens[i]:cu_seqlens[i+1]``; an empty sequence has offset 0. This is what the
    CUDA rotary kernels take (flash-attn ``seqlen_offsets``, TransformerEngine ``start_positions``).
    """
    pos = np.asarray(positions, dtype=np.int64)
    if cu_seqlens is not None:
        cu = np.asarray(cu_seqlens, dtype=np.int64)
        seqs = [pos[a:b] for a, b in zip(cu[:-1], cu[1:])]
    else:
        seqs = list(np.broadcast_to(pos, shape[:2]))
    offs = []
    for s in seqs:
        if s.size and not np.array_equal(s, s[0] + np.arange(s.size)):
            return None
        offs.append(int(s[0]) if s.size else 0)
    return np.asarray(offs, dtype=np.int64)
