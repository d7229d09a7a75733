"""Short backend names -> ``"module:attr"`` of the adapter (imported only when selected).

A plain table, not registration by import side effect: resolving a name imports just
that adapter; an unknown name is an error listing these.
"""

from __future__ import annotations

__all__ = ["BUILTIN_BACKENDS"]

BUILTIN_BACKENDS: dict[str, str] = {
    "numpy": "conformance.backends.numpy_backend:NumpyBackend",
    "numba": "conformance.backends.numba_backend:NumbaBackend",
}
