"""Shared guard for GPU-only adapters: a reason string when CUDA or the library is missing."""

from __future__ import annotations

from ..case import FEATURES
from .torch_util import missing

__all__ = ["gpu_reason"]


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
