"""Issue 31 item 3: a finding is stated only when it distinguishes.

Each engine below is one bug where main (before this change) stated a false sub-finding:

- ``ZeroedHeads`` (heads 2-3 of 4 output zeros): main said "head 3's output is a copy of head 2's";
  two zero outputs are not a copy. The per-head findings must still say the heads are wrong.
- ``OddTokenGain`` (pairs 0-7 of odd tokens scaled by 2, s = 1): main said "gain 1 = s^2 instead of
  s = 1 (s applied twice)": s^2 = s when s = 1, an empty claim, and 1 was the token's median, not the
  gain of the wrong pairs (2).
- ``CopiedHead`` (head 2's output is head 1's): the control; the copy claim is true and must stay.
"""

from __future__ import annotations

import numpy as np
from test_operator_diagnosis import _reshaped

from conformance.judge.runner import RunOptions, run_cases
from unlisted_bug_engines import UnlistedEngine, make_case


class ZeroedHeads(UnlistedEngine):
    """Heads 2 and up output zeros."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        y[..., 2:, :] = 0
        return y


class CopiedHead(UnlistedEngine):
    """Head 2's output is head 1's (a true copy)."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        y[..., 2, :] = y[..., 1, :]
        return y


class OddTokenGain(UnlistedEngine):
    """Odd tokens: pairs 0-7 (half layout: channels 0-7 and d/2 .. d/2+7) multiplied by 2."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        y = super().forward(x, positions, spec, cu_seqlens)
        h = y.shape[-1] // 2
        y[:, 1::2, :, 0:8] *= 2
        y[:, 1::2, :, h:h + 8] *= 2
        return y


def _fail(engine, case) -> dict:
    (r,) = run_cases(engine, [case], RunOptions()).results
    assert r.status == "FAIL" and r.diagnosis, (r.status, r.message)
    return r.diagnosis


def _four_heads():
    return _reshaped(make_case("forward", "default", "half", "float32", "near4096"), 16, 4)


def test_two_zeroed_heads_are_not_called_copies_of_each_other():
    d = _fail(ZeroedHeads(), _four_heads())
    words = [f["words"] for f in d["findings"]]
    assert not any("copy" in w for w in words), words
    assert "copy" not in d["summary"]
    said = {h for f in d["findings"] if f["axis"] == "head" for h in (f.get("where") or {}).get("heads", [])}
    assert {2, 3} <= said or "heads 2-3" in d["summary"], (words, d["summary"])


def test_a_true_copy_is_still_said():
    d = _fail(CopiedHead(), _four_heads())
    copies = [f for f in d["findings"] if f["pattern"] == "copied"]
    assert copies and copies[0]["measured"]["source_head"] == 1, [f["words"] for f in d["findings"]]


def test_a_gain_relation_equal_to_s_is_never_claimed_and_the_wrong_gain_is_measured():
    d = _fail(OddTokenGain(), make_case("forward", "default", "half", "float32", "near4096"))
    gains = [f for f in d["findings"] if f["axis"] == "gain"]
    assert gains, [f["words"] for f in d["findings"]]
    assert not any("twice" in f["words"] or "s^2" in f["words"] for f in gains), [f["words"] for f in gains]
    g = gains[0]["measured"]["gain"]
    assert np.allclose(g if isinstance(g, list) else [g], 2.0, rtol=1e-3), g


def test_doubled_positions_are_not_called_rounded_to_a_multiple_of_two():
    """eff = 2p is a multiple of 2 on every token, but no rounding moves p by p: main said "p rounded to a
    multiple of 2" (the data-only diagnosis, beside "angle doubled"); a true rounding to 16 is still said."""
    from conformance.diagnose.inverse import position_words

    p = np.arange(300.0, 316.0)
    words = position_words(p, p.copy())
    assert words and not any("rounded" in w for w in words), words
    rounded = np.round(p / 16.0) * 16.0
    assert any("rounded to a multiple of 16" in w for w in position_words(p, rounded - p))
