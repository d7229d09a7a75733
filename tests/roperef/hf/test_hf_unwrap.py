"""conformance.hf.unwrap reads through partials, decorators and module wrappers (kernels' hub wrapper) to
the function that runs; the probe then finds the pairing of a wrapped apply function, and a cross-check
that could not compare something says so in its verdict line."""

from __future__ import annotations

import functools
import os
import types

import pytest

from conformance.hf.crosscheck import CrossCheck, Item
from conformance.hf.unwrap import unwrap_callable

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")


def apply_rotary_pos_emb_demo(q, k, cos, sin, unsqueeze_dim=1):
    """rotate_half RoPE, the transformers Llama form (the probe must find ``half``)."""
    import torch

    def rot(x):
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)

    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rot(q) * sin, k * cos + rot(k) * sin


def _module_wrapper(func):
    """The shape of kernels' ``_create_func_module``: an nn.Module whose forward is (*args, **kwargs)."""
    from torch import nn

    class Func(nn.Module):
        def forward(self, *args, **kwargs):
            return func(*args, **kwargs)

    return Func()


def test_unwrap_plain_partial_decorated_and_module():
    assert unwrap_callable(apply_rotary_pos_emb_demo).function is apply_rotary_pos_emb_demo
    part = unwrap_callable(functools.partial(apply_rotary_pos_emb_demo, unsqueeze_dim=1))
    assert part.function is apply_rotary_pos_emb_demo and "functools.partial" in part.how[0]

    @functools.wraps(apply_rotary_pos_emb_demo)
    def decorated(*args, **kwargs):
        return apply_rotary_pos_emb_demo(*args, **kwargs)

    assert unwrap_callable(decorated).function is apply_rotary_pos_emb_demo
    wrapped = unwrap_callable(_module_wrapper(apply_rotary_pos_emb_demo))
    assert wrapped.function is apply_rotary_pos_emb_demo and "Func.forward" in wrapped.how[0]


def test_unwrap_says_why_it_cannot():
    class Opaque:
        def __call__(self, *args):
            return args

    found = unwrap_callable(Opaque())
    assert found.function is None and "does not close over one plain function" in found.how[-1]


def test_apply_functions_reads_a_module_wrapped_apply_function():
    """A modeling module whose apply function is a kernels-style nn.Module is still listed and probed."""
    from conformance.hf.truth import apply_functions

    mod = types.ModuleType("fake_modeling")
    demo = types.FunctionType(apply_rotary_pos_emb_demo.__code__, apply_rotary_pos_emb_demo.__globals__,
                              "apply_rotary_pos_emb")
    demo.__module__ = "fake_modeling"
    mod.apply_rotary_pos_emb = _module_wrapper(demo)
    assert apply_functions([mod]) == {"apply_rotary_pos_emb": demo}


def test_verdict_line_names_what_was_not_compared():
    items = (Item("text", "inv_freq", "AGREE", "a", "a"),
             Item("text", "pairing", "SKIP", "half, start 0", "not probed", "signature (*args, **kwargs)"))
    check = CrossCheck("llama", items)
    assert check.verdict == "AGREE"
    assert check.verdict_line == "AGREE on inv_freq; text pairing not compared: signature (*args, **kwargs)"
    full = CrossCheck("llama", items[:1])
    assert full.verdict_line == "AGREE"
