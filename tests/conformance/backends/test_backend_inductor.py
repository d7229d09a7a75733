"""The inductor adapter: transformers' apply compiled by torch.compile (CPU, dynamic shapes).

One family (llama's rotate_half), float32: the first compile takes ~25 s on a 2-core machine, the
other shapes reuse the dynamic kernel. The smoke tier runs in scripts/check_backends.py."""

from __future__ import annotations

import numpy as np
import pytest

from _adapter_checks import assert_close, make_case, require
from roperef.spec import RopeSpec


@pytest.fixture(scope="module")
def backend():
    require("torch")
    require("transformers")
    from conformance.backends.inductor import InductorBackend

    return InductorBackend()


def test_compiled_forward_matches_reference_on_two_shapes_with_one_graph(backend):
    import torch

    torch._dynamo.reset()
    spec = RopeSpec(64)
    case = make_case(spec, "float32")
    assert backend.supports(case) is True
    assert_close(backend, case, "float32")
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert graphs >= 1  # compiled, not eager
    longer = make_case(spec, "float32", positions=np.arange(66).reshape(2, 33) * 3 + 7)
    assert_close(backend, longer, "float32")
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs  # dynamic: no recompile for a new T
    assert len(backend._compiled) == 1


def test_declares_no_backward_and_no_strided_layouts(backend):
    caps = backend.capabilities
    assert caps.stages == frozenset({"apply", "forward"}) and not caps.layouts and not caps.call_forms
    assert backend.supports(make_case(RopeSpec(64), "float32", stage="backward")) == "stage backward not implemented"
    assert "torch.compile(inductor" in caps.notes
