"""Bad input to the tensor API: a ValueError/TypeError naming the argument, the value and the rule.

Every message must start with the argument name (``positions.shape=...``,
``cu_seqlens[0]=...``), so it can never be a raw NumPy error; and the exception
must not be chained to a NumPy error (no traceback from inside NumPy).
"""

from __future__ import annotations

import numpy as np
import pytest

from roperef import RopeSpec, Scaling
from roperef.frequencies import inv_freq
from roperef.reference import apply, backward, cos_sin, forward

PLAIN = RopeSpec(head_dim=8)
MROPE = RopeSpec(head_dim=8, mrope_section=(2, 1, 1))
VISION = RopeSpec(head_dim=8, vision="qwen_vl")
DYNAMIC = RopeSpec(head_dim=8, scaling=Scaling("dynamic", factor=2.0, max_position_embeddings=16))

X = np.zeros((2, 3, 1, 8))  # bshd
XP = np.zeros((5, 1, 8))  # packed thd
POS = np.arange(6).reshape(2, 3)


def check(exc: type[Exception], prefix: str, *fragments: str):
    """Context manager: raises ``exc`` whose message starts with ``prefix`` and contains ``fragments``."""

    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()

        def __exit__(self, *args):
            suppressed = self.ctx.__exit__(*args)
            err = self.info.value
            msg = str(err)
            assert type(err) is exc, (type(err), msg)
            assert msg.startswith(prefix), msg
            name_value, _, rule = msg.partition(": ")
            assert "=" in name_value and rule, msg  # "{name}={value}: {rule}"
            for f in fragments:
                assert f in msg, (f, msg)
            ctx = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
            assert ctx is None, f"chained to {type(ctx).__name__}: {ctx}"
            return suppressed

    return _Check()


# (callable, exception, message prefix, fragments)
CASES = {
    # positions: dtype
    "positions float": (lambda: forward(X, POS.astype(np.float64), PLAIN), TypeError, "positions.dtype='float64'",
                        ("integer",)),
    "positions float32 list": (lambda: forward(X, [[0.0, 1.5, 2.0]] * 2, PLAIN), TypeError, "positions.dtype=",
                               ("integer",)),
    "positions bool": (lambda: forward(X, POS > 2, PLAIN), TypeError, "positions.dtype='bool'", ("integer",)),
    "positions str": (lambda: forward(X, [["a", "b", "c"]] * 2, PLAIN), TypeError, "positions.dtype=",
                      ("integer",)),
    "positions object (> int64)": (lambda: forward(X, [[2**70, 0, 1]] * 2, PLAIN), TypeError, "positions.dtype=",
                                   ("integer",)),
    "positions None": (lambda: forward(X, None, PLAIN), ValueError, "positions=None", ("required",)),
    # positions: shape
    "positions wrong length": (lambda: forward(X, np.arange(4), PLAIN), ValueError, "positions.shape=(4,)",
                               ("x.shape[:-2]=(2, 3)",)),
    "positions wrong batch": (lambda: forward(X, np.zeros((3, 3), np.int64), PLAIN), ValueError,
                              "positions.shape=(3, 3)", ("(2, 3)",)),
    "positions too many dims": (lambda: forward(X, np.zeros((4, 2, 3), np.int64), PLAIN), ValueError,
                                "positions.shape=(4, 2, 3)", ("broadcastable",)),
    "positions packed wrong length": (lambda: forward(XP, np.arange(4), PLAIN), ValueError, "positions.shape=(4,)",
                                      ("(5,)",)),
    # positions: range
    "positions 2^31": (lambda: forward(X, POS + 2**31 - 5, PLAIN), ValueError, "positions=2147483648",
                       ("[-2^31, 2^31)",)),
    "positions -2^31-1": (lambda: forward(X, POS - 2**31 - 1, PLAIN), ValueError, "positions=-2147483649",
                          ("[-2^31, 2^31)",)),
    "positions uint64 huge": (lambda: forward(X, np.full((2, 3), 2**63, np.uint64), PLAIN), ValueError,
                              "positions=9223372036854775808", ("[-2^31, 2^31)",)),
    "cos_sin positions 2^31": (lambda: cos_sin(PLAIN, [2**31]), ValueError, "positions=2147483648", ("2^31",)),
    "cos_sin positions float": (lambda: cos_sin(PLAIN, [1.0]), TypeError, "positions.dtype='float64'",
                                ("integer",)),
    # x
    "x last dim": (lambda: forward(np.zeros((2, 3, 1, 6)), POS, PLAIN), ValueError, "x.shape[-1]=6",
                   ("head_dim=8",)),
    "x int": (lambda: forward(np.zeros((2, 3, 1, 8), np.int64), POS, PLAIN), TypeError, "x.dtype='int64'",
              ("floating",)),
    "x int32": (lambda: forward(np.zeros((2, 3, 1, 8), np.int32), POS, PLAIN), TypeError, "x.dtype='int32'",
                ("floating",)),
    "x bool": (lambda: forward(np.zeros((2, 3, 1, 8), bool), POS, PLAIN), TypeError, "x.dtype='bool'",
               ("floating",)),
    "x complex": (lambda: forward(np.zeros((2, 3, 1, 8), complex), POS, PLAIN), TypeError, "x.dtype='complex128'",
                  ("floating",)),
    "x 1-D": (lambda: forward(np.zeros(8), [0], PLAIN), ValueError, "x.shape=(8,)", ("heads, head_dim",)),
    "grad last dim": (lambda: backward(np.zeros((2, 3, 1, 4)), POS, PLAIN), ValueError, "grad.shape[-1]=4",
                      ("head_dim=8",)),
    "grad int": (lambda: backward(np.zeros((2, 3, 1, 8), np.int8), POS, PLAIN), TypeError, "grad.dtype='int8'",
                 ("floating",)),
    # cu_seqlens
    "cu not increasing": (lambda: forward(XP, None, PLAIN, cu_seqlens=[0, 3, 3, 5]), ValueError,
                          "cu_seqlens=[0, 3, 3, 5]", ("strictly increasing",)),
    "cu decreasing": (lambda: forward(XP, None, PLAIN, cu_seqlens=[0, 4, 2, 5]), ValueError, "cu_seqlens=",
                      ("strictly increasing",)),
    "cu short end": (lambda: forward(XP, None, PLAIN, cu_seqlens=[0, 2, 4]), ValueError, "cu_seqlens[-1]=4",
                     ("token count 5",)),
    "cu long end": (lambda: forward(XP, None, PLAIN, cu_seqlens=[0, 2, 6]), ValueError, "cu_seqlens[-1]=6",
                    ("token count 5",)),
    "cu start": (lambda: forward(XP, None, PLAIN, cu_seqlens=[1, 3, 5]), ValueError, "cu_seqlens[0]=1",
                 ("must be 0",)),
    "cu float": (lambda: forward(XP, None, PLAIN, cu_seqlens=[0.0, 5.0]), TypeError, "cu_seqlens.dtype='float64'",
                 ("integer",)),
    "cu 2-D": (lambda: forward(XP, None, PLAIN, cu_seqlens=[[0, 5]]), ValueError, "cu_seqlens.shape=(1, 2)",
               ("1-D",)),
    "cu single": (lambda: forward(XP, None, PLAIN, cu_seqlens=[5]), ValueError, "cu_seqlens.shape=(1,)",
                  ("at least 2",)),
    "cu with bshd x": (lambda: forward(X, None, PLAIN, cu_seqlens=[0, 6]), ValueError, "x.shape=(2, 3, 1, 8)",
                       ("packed",)),
    "cu backward": (lambda: backward(XP, None, PLAIN, cu_seqlens=[0, 3, 2, 5]), ValueError, "cu_seqlens=",
                    ("strictly increasing",)),
    "cu mrope without positions": (lambda: forward(XP, None, MROPE, cu_seqlens=[0, 5]), ValueError, "positions=None",
                                   ("explicitly",)),
    # mRoPE / vision position forms
    "mrope 2 rows": (lambda: forward(X, np.zeros((2, 2, 3), np.int64), MROPE), ValueError,
                     "positions.shape=(2, 2, 3)", ("[3, *x.shape[:-2]]",)),
    "mrope plain positions": (lambda: forward(X, POS, MROPE), ValueError, "positions.shape=(2, 3)", ("rows t, h, w",)),
    "mrope wrong grid": (lambda: forward(X, np.zeros((3, 2, 4), np.int64), MROPE), ValueError,
                         "positions.shape=(3, 2, 4)", ("(2, 3)",)),
    "mrope scalar": (lambda: forward(X, np.int64(3), MROPE), ValueError, "positions.shape=()", ("rows t, h, w",)),
    "mrope cos_sin 2 rows": (lambda: cos_sin(MROPE, np.zeros((2, 5), np.int64)), ValueError,
                             "positions.shape=(2, 5)", ("[3, ...]",)),
    "vision 3 columns": (lambda: forward(X, np.zeros((2, 3, 3), np.int64), VISION), ValueError,
                         "positions.shape=(2, 3, 3)", ("columns h, w",)),
    "vision plain positions": (lambda: forward(X, POS, VISION), ValueError, "positions.shape=(2, 3)",
                               ("columns h, w",)),
    "vision rows first": (lambda: forward(X, np.zeros((2, 2, 3), np.int64), VISION), ValueError,
                          "positions.shape=(2, 2, 3)", ("columns h, w",)),
    "vision cos_sin": (lambda: cos_sin(VISION, np.zeros((5, 3), np.int64)), ValueError, "positions.shape=(5, 3)",
                       ("[..., 2]",)),
    # apply tables
    "apply cos last dim": (lambda: apply(X, np.ones((2, 3, 3)), np.ones((2, 3, 3)), PLAIN), ValueError,
                           "cos.shape=(2, 3, 3)", ("n = rotary_dim/2 = 4",)),
    "apply sin shape": (lambda: apply(X, np.ones((2, 3, 4)), np.ones((3, 4)), PLAIN), ValueError, "sin.shape=(3, 4)",
                        ("cos.shape=(2, 3, 4)",)),
    "apply cos grid": (lambda: apply(X, np.ones((4, 4)), np.ones((4, 4)), PLAIN), ValueError, "cos.shape=(4, 4)",
                       ("x.shape[:-2]=(2, 3)",)),
    "apply cos too many dims": (lambda: apply(X, np.ones((5, 2, 3, 4)), np.ones((5, 2, 3, 4)), PLAIN), ValueError,
                                "cos.shape=(5, 2, 3, 4)", ("broadcast",)),
    "apply cos broadcasts past x": (lambda: apply(np.zeros((1, 3, 1, 8)), np.ones((2, 1, 4)), np.ones((2, 1, 4)),
                                                  PLAIN), ValueError, "cos.shape=(2, 1, 4)", ("x.shape[:-2]=(1, 3)",)),
    "apply cos scalar": (lambda: apply(X, np.float64(1.0), np.float64(0.0), PLAIN), ValueError, "cos.shape=()",
                         ("rotary_dim/2",)),
    "apply cos int": (lambda: apply(X, np.ones((2, 3, 4), np.int64), np.ones((2, 3, 4)), PLAIN), TypeError,
                      "cos.dtype='int64'", ("floating",)),
    "apply sin int": (lambda: apply(X, np.ones((2, 3, 4)), np.ones((2, 3, 4), np.int64), PLAIN), TypeError,
                      "sin.dtype='int64'", ("floating",)),
    "apply x last dim": (lambda: apply(np.zeros((2, 3, 1, 6)), np.ones((2, 3, 4)), np.ones((2, 3, 4)), PLAIN),
                         ValueError, "x.shape=(2, 3, 1, 6)", ("head_dim=8",)),
    "apply x int": (lambda: apply(np.zeros((2, 3, 1, 8), np.int64), np.ones((2, 3, 4)), np.ones((2, 3, 4)), PLAIN),
                    TypeError, "x.dtype='int64'", ("floating",)),
    # spec, seq_len, out_dtype
    "spec dict": (lambda: forward(X, POS, {"head_dim": 8}), TypeError, "spec=", ("RopeSpec",)),
    "cos_sin spec": (lambda: cos_sin("llama", [0]), TypeError, "spec='llama'", ("RopeSpec",)),
    "apply spec": (lambda: apply(X, np.ones((2, 3, 4)), np.ones((2, 3, 4)), None), TypeError, "spec=None",
                   ("RopeSpec",)),
    "inv_freq spec": (lambda: inv_freq(8), TypeError, "spec=8", ("RopeSpec",)),
    "seq_len 0": (lambda: forward(X, POS, DYNAMIC, seq_len=0), ValueError, "seq_len=0", ("positive integer",)),
    "seq_len float": (lambda: forward(X, POS, DYNAMIC, seq_len=16.0), ValueError, "seq_len=16.0",
                      ("positive integer",)),
    "seq_len bool": (lambda: forward(X, POS, DYNAMIC, seq_len=True), ValueError, "seq_len=True",
                     ("positive integer",)),
    "inv_freq seq_len": (lambda: inv_freq(DYNAMIC, -3), ValueError, "seq_len=-3", ("positive integer",)),
    "cos_sin seq_len": (lambda: cos_sin(DYNAMIC, [0, 1], seq_len=0), ValueError, "seq_len=0", ("positive integer",)),
    "out_dtype int": (lambda: forward(X, POS, PLAIN, out_dtype=np.int32), ValueError, "out_dtype='int32'",
                      ("float32, float64",)),
    "out_dtype junk": (lambda: forward(X, POS, PLAIN, out_dtype="banana"), TypeError, "out_dtype='banana'",
                       ("float32, float64",)),
    "apply out_dtype": (lambda: apply(X, np.ones((2, 3, 4)), np.ones((2, 3, 4)), PLAIN, out_dtype=np.float16),
                        ValueError, "out_dtype='float16'", ("float32, float64",)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input(name):
    call, exc, prefix, fragments = CASES[name]
    with check(exc, prefix, *fragments):
        call()


def test_good_forms_accepted():
    """The forms the bad cases are variations of do work (so the checks above are not vacuous)."""
    assert forward(X, POS, PLAIN).shape == X.shape
    assert forward(X, np.arange(3), PLAIN).shape == X.shape  # [T] shared by all rows
    assert forward(XP, None, PLAIN, cu_seqlens=[0, 3, 5]).shape == XP.shape
    assert forward(XP, np.arange(5), PLAIN, cu_seqlens=np.array([0, 3, 5], np.int32)).shape == XP.shape
    assert forward(X, np.zeros((3, 2, 3), np.int64), MROPE).shape == X.shape
    assert forward(X, np.zeros((3, 1, 3), np.int64), MROPE).shape == X.shape
    assert forward(X, np.zeros((2, 3, 2), np.int64), VISION).shape == X.shape
    assert forward(X, POS + 2**31 - 6, PLAIN).shape == X.shape  # max 2^31 - 1 is in range
    assert forward(X, POS - 2**31, PLAIN).shape == X.shape  # min -2^31 is in range
    assert apply(X, np.ones((3, 4)), np.zeros((3, 4)), PLAIN).shape == X.shape
    assert forward(X, POS, DYNAMIC, seq_len=np.int64(20)).shape == X.shape
    assert forward(X.astype(np.float32), POS, PLAIN, out_dtype="float32").dtype == np.float32


def test_packed_varlen_positions_restart():
    """cu_seqlens without positions: each sequence restarts at 0 (checked against explicit positions)."""
    x = np.random.default_rng(0).standard_normal((5, 2, 8))
    y = forward(x, None, PLAIN, cu_seqlens=[0, 3, 5])
    np.testing.assert_array_equal(y, forward(x, np.array([0, 1, 2, 0, 1]), PLAIN))
