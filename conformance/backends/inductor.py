"""``torch.compile`` (inductor, CPU) of transformers' apply functions: the ``hf`` adapter's code, compiled.

The ``hf`` adapter (:mod:`conformance.backends.hf`) routes each spec to a transformers family and
calls that family's ``apply_rotary_pos_emb`` (slicing the rotary window as the model does). Here
that apply is ``torch.compile(..., backend="inductor", dynamic=True, fullgraph=True)``: inductor
generates a C++/OpenMP kernel, with symbolic token/batch/head sizes so that one compiled kernel
serves every shape of a family and dtype (a few recompiles remain: dtypes, and the sizes 0 and 1
that dynamo specialises). One compiled function per (family, head dim, rotary window, pairing):
those are what the apply reads of the spec. The cos/sin tables come from transformers' rotary
module run eagerly (as ``hf``): what is judged is the compiled rotation, not a compiled table.

``fullgraph=True``: a graph break or a recompile past dynamo's limit raises, so a case is never
silently judged on eager code (it is an ERROR instead).

Declared as ``hf`` minus what the compiled path does not take: stages ``apply`` and ``forward``
(no backward: inductor's backward is a second compile per graph), contiguous memory only, no q+k
form. The libraries are imported lazily, inside the methods that use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from roperef.spec import RopeSpec

from .base import Capabilities
from .hf import HFBackend
from .hf_families import Family

__all__ = ["InductorBackend"]


def _caps(hf_caps: Capabilities) -> Capabilities:
    return replace(hf_caps, stages=frozenset({"apply", "forward"}), layouts=frozenset(), call_forms=frozenset(),
                   qk_shapes=frozenset(),
                   notes="torch.compile(inductor, CPU, dynamic=True, fullgraph=True) of transformers' "
                         "apply_rotary_pos_emb per family; cos/sin from transformers' rotary module, eager. "
                         + hf_caps.notes)


def _limits() -> Any:
    """Dynamo's recompile limits raised for this call only: every compiled function here shares the
    code object of ``rotate``, whose cache entries (one per family, window and dtype) count together."""
    import torch

    return torch._dynamo.config.patch(recompile_limit=4096, accumulated_recompile_limit=65536)


@dataclass
class InductorBackend(HFBackend):
    name: str = "inductor"
    capabilities: Capabilities = field(default=None)  # type: ignore[assignment]  # None: hf's, narrowed
    libraries = ("torch", "transformers")

    def __post_init__(self) -> None:
        if self.capabilities is None:
            self.capabilities = _caps(HFBackend().capabilities)
        self._compiled: dict[tuple[Any, ...], Any] = {}
        super().__post_init__()

    def _apply_fn(self, fam: Family, spec: RopeSpec) -> Any:
        key = (fam.key, spec.head_dim, spec.resolved_rotary_dim, spec.rotary_start, spec.pairing, spec.mrope_section)
        if key not in self._compiled:
            import torch

            fam.mod()  # import the modeling module here: an import inside the compiled region is traced

            def rotate(x: Any, cos: Any, sin: Any) -> Any:
                return fam.apply(x, cos, sin, spec)

            self._compiled[key] = torch.compile(rotate, backend="inductor", dynamic=True, fullgraph=True)
        return self._compiled[key]

    def _rotate(self, fam: Family, spec: RopeSpec, x: Any, cos: Any, sin: Any) -> Any:
        grid, (H, D) = tuple(x.shape[:-2]), tuple(x.shape[-2:])
        R = cos.shape[-1]
        fn = self._apply_fn(fam, spec)
        with _limits():
            return self._call(fn, fam, x, cos, sin, grid, H, D, R)

    @staticmethod
    def _call(fn: Any, fam: Family, x: Any, cos: Any, sin: Any, grid: tuple[int, ...], H: int, D: int, R: int) -> Any:
        if fam.vision:
            y = fn(x.reshape(-1, H, D).contiguous(), cos.reshape(-1, R).contiguous(), sin.reshape(-1, R).contiguous())
        else:
            bt = grid if len(grid) == 2 else (1, int(np.prod(grid)))
            y = fn(x.reshape(*bt, H, D).contiguous(), cos.reshape(*bt, R).contiguous(), sin.reshape(*bt, R).contiguous())
        return y.reshape(*grid, H, D)
