"""Shared guard for GPU-only adapters: a reason string when CUDA or the library is missing."""

from __future__ import annotations

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
