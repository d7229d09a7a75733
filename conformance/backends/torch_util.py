"""NumPy <-> torch conversion for the torch-based adapters (torch imported lazily, inside functions).

bfloat16 crosses the boundary through ``ml_dtypes``: a NumPy bfloat16 array is viewed as
uint16, handed to torch as int16 and viewed back as ``torch.bfloat16`` (bit-exact, no
rounding); the way back is the same in reverse. Every ``to_torch`` call copies (a C-contiguous
copy), so an adapter can never modify the judge's input arrays.

Adapters that declare memory layouts or in-place calls (``Capabilities.layouts``,
``call_forms``) hand the library the judge's own memory instead: :func:`view_to_torch` (CPU: a
tensor sharing the array's memory, strides and offset) and :func:`device_view` (a GPU copy of the
whole buffer the array views, with the view's strides and offset inside it, copied back after the
call so that what the library wrote, inside or outside the view, reaches the judge).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

__all__ = [
    "missing",
    "torch_dtype",
    "to_torch",
    "to_numpy",
    "positions_to_torch",
    "vjp",
    "max_cache_rows",
    "view_to_torch",
    "device_view",
    "device_views",
]

#: Default largest position table a cache-lookup adapter builds (rows = max position + 1).
DEFAULT_MAX_CACHE_ROWS = (1 << 20) + (1 << 12)


def max_cache_rows() -> int:
    """Rows a table-lookup adapter may build: env ``ROPEREF_MAX_CACHE_ROWS`` or 2^20 + 4096.

    Engines such as torchtune, litgpt and GPT-J precompute one row per position, so a case at
    position ~2^20 costs a ~2^20-row table (seconds of CPU); CI may lower the limit for time."""
    raw = os.environ.get("ROPEREF_MAX_CACHE_ROWS")
    if raw is None:
        return DEFAULT_MAX_CACHE_ROWS
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"ROPEREF_MAX_CACHE_ROWS={raw!r}: must be a positive integer") from None
    if value < 1:
        raise ValueError(f"ROPEREF_MAX_CACHE_ROWS={raw!r}: must be a positive integer")
    return value

_TORCH_NAMES = {"float64": "float64", "float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


def missing(*modules: str) -> str | None:
    """``"<module> not installed"`` for the first top-level module that cannot be found, else None.

    Uses ``importlib.util.find_spec`` so nothing is imported (cheap enough for ``supports``).
    """
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{name} not installed"
    return None


def torch_dtype(name: str) -> Any:
    """The torch dtype of a case dtype name (``float64``, ``float32``, ``float16``, ``bfloat16``)."""
    import torch

    return getattr(torch, _TORCH_NAMES[name])


def to_torch(arr: np.ndarray, device: str = "cpu") -> Any:
    """A fresh torch tensor holding exactly ``arr`` (float16/32/64, ml_dtypes bfloat16, or integers)."""
    import torch

    a = np.asarray(arr)
    if a.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(a).view(np.uint16).astype(np.int16, copy=True)
        return torch.from_numpy(bits).view(torch.bfloat16).clone().to(device)
    return torch.from_numpy(np.array(a, copy=True)).to(device)


def to_numpy(t: Any) -> np.ndarray:
    """A NumPy copy of tensor ``t`` (bfloat16 -> ml_dtypes.bfloat16, bit-exact)."""
    import torch

    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(np.uint16).view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def view_to_torch(arr: np.ndarray) -> Any:
    """A CPU tensor on ``arr``'s own memory (no copy; strides and offset kept; bfloat16 bit-exact)."""
    import torch

    if arr.dtype.name == "bfloat16":
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


def _root(arr: np.ndarray) -> np.ndarray:
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root


def device_view(arr: np.ndarray, device: str) -> tuple[Any, Any]:
    """``(view, copy_back)`` for one array: see :func:`device_views`."""
    (view,), back = device_views([arr], device)
    return view, back


def device_views(arrays: list[np.ndarray], device: str) -> tuple[list[Any], Any]:
    """``(views, copy_back)``: each array as a tensor on ``device`` inside one device copy of the
    contiguous buffer it views (arrays viewing the same buffer share one copy: q and k of a fused qkv
    buffer), with the same element strides and offset; ``copy_back()`` copies every device buffer
    back into its host buffer, so what the library wrote, inside or outside the views, reaches the
    judge. An array without such a buffer (one that owns its memory, or views non-contiguous
    memory) is its own buffer."""
    import torch

    roots: list[tuple[np.ndarray, Any]] = []  # (host flat buffer, device copy)
    views: list[Any] = []
    for arr in arrays:
        root = _root(arr)
        if root.flags.c_contiguous:
            flat = root.reshape(-1)
        elif root.flags.f_contiguous:
            flat = root.T.reshape(-1)
        else:
            flat = None
        if flat is None or arr.dtype != root.dtype:
            flat = np.ascontiguousarray(arr).reshape(-1) if arr.flags.c_contiguous else None
        if flat is None:  # a view into non-contiguous memory: copy the array alone (and back into it)
            t = to_torch(arr, device)
            views.append(t)
            roots.append((arr, t))
            continue
        start = flat.__array_interface__["data"][0]
        found = next((dev for host, dev in roots if host is not arr and host.__array_interface__["data"][0] == start
                      and host.size == flat.size and host.dtype == flat.dtype), None)
        if found is None:
            found = to_torch(flat, device)
            roots.append((flat, found))
        item = arr.itemsize
        offset = (arr.__array_interface__["data"][0] - start) // item
        views.append(torch.as_strided(found, arr.shape, tuple(st // item for st in arr.strides), offset))

    def back() -> None:
        for host, dev in roots:
            host[...] = to_numpy(dev).reshape(host.shape)

    return views, back


def positions_to_torch(positions: np.ndarray, device: str = "cpu") -> Any:
    """int64 positions as a torch.long tensor (a copy)."""
    return to_torch(np.asarray(positions, dtype=np.int64), device)


def vjp(fn: Any, grad: np.ndarray, device: str = "cpu") -> np.ndarray:
    """``d/dx <fn(x), grad>`` for a function linear in ``x``, via torch autograd.

    RoPE is linear in ``x``, so the primal point does not matter; ``x`` is a copy of
    ``grad`` (same dtype and shape) so the backward runs in the case dtype, as the library
    would in training.
    """
    import torch

    g = to_torch(grad, device)
    x = g.clone().requires_grad_(True)
    y = fn(x)
    (gx,) = torch.autograd.grad(y, x, grad_outputs=g)
    return to_numpy(gx)


def cache_rows_reason(positions: np.ndarray | None) -> str | None:
    """The NOT_SUPPORTED reason of a table-lookup adapter for these positions, or None."""
    rows = max_cache_rows()
    if positions is not None and positions.size and int(positions.max()) >= rows:
        return f"cache lookup: positions >= {rows} need a larger table than ROPEREF_MAX_CACHE_ROWS allows"
    return None


class TorchFunctionStages:
    """``forward``/``backward`` stages for an adapter whose ``_forward_fn(spec, positions, shape)``
    returns a torch function of ``x`` (linear in ``x``): forward without autograd, backward as its VJP."""

    def _forward_fn(self, spec: Any, positions: np.ndarray, shape: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def forward(self, x: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> np.ndarray:
        import torch

        with torch.no_grad():
            return to_numpy(self._forward_fn(spec, positions, x.shape)(to_torch(x)))

    def backward(self, grad: np.ndarray, positions: np.ndarray, spec: Any, cu_seqlens: Any = None) -> np.ndarray:
        return vjp(self._forward_fn(spec, positions, grad.shape), grad)
