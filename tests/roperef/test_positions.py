"""Position-id helpers: contiguous (offsets may be negative), packed varlen, Qwen2-VL mRoPE ids, 2-D grids.

Expected arrays are written out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roperef.positions import check_cu_seqlens, check_positions, contiguous, grid_2d, mrope_ids, varlen


def same(got: np.ndarray, want: list) -> None:
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array(want, dtype=np.int64))
    assert got.shape == np.array(want).shape


# ---------------------------------------------------------------------------------------------
# contiguous
# ---------------------------------------------------------------------------------------------


def test_contiguous_scalar_and_per_row_offsets():
    same(contiguous(2, 4), [[0, 1, 2, 3], [0, 1, 2, 3]])
    same(contiguous(1, 3, offsets=7), [[7, 8, 9]])
    same(contiguous(3, 3, offsets=[-3, 0, 5]), [[-3, -2, -1], [0, 1, 2], [5, 6, 7]])
    same(contiguous(2, 2, offsets=np.array([-(2**31), 2**31 - 2], dtype=np.int32)),
         [[-(2**31), -(2**31) + 1], [2**31 - 2, 2**31 - 1]])


@given(st.integers(1, 4), st.integers(1, 6), st.lists(st.integers(-(2**31), 2**31 - 7), min_size=4, max_size=4))
def test_contiguous_property(batch, seq, offs):
    off = np.array(offs[:batch])
    pos = contiguous(batch, seq, off)
    assert pos.shape == (batch, seq) and pos.dtype == np.int64
    for b in range(batch):
        assert pos[b].tolist() == list(range(offs[b], offs[b] + seq))


@pytest.mark.parametrize(
    "call, exc, prefix",
    [
        (lambda: contiguous(0, 4), ValueError, "batch, seq_len=(0, 4)"),
        (lambda: contiguous(2, 0), ValueError, "batch, seq_len=(2, 0)"),
        (lambda: contiguous(2, 4, offsets=[1, 2, 3]), ValueError, "offsets.shape=(3,)"),
        (lambda: contiguous(2, 4, offsets=[1.5, 2.0]), TypeError, "offsets.dtype='float64'"),
        (lambda: contiguous(1, 4, offsets=2**31 - 3), ValueError, "positions=2147483648"),
        (lambda: contiguous(1, 4, offsets=-(2**31) - 1), ValueError, "offsets=-2147483649"),
    ],
)
def test_contiguous_bad(call, exc, prefix):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(prefix), str(info.value)


# ---------------------------------------------------------------------------------------------
# varlen
# ---------------------------------------------------------------------------------------------


def test_varlen_restarts_per_sequence():
    same(varlen([0, 3, 5, 9]), [0, 1, 2, 0, 1, 0, 1, 2, 3])
    same(varlen(np.array([0, 1], dtype=np.int32)), [0])
    same(varlen([0, 4]), [0, 1, 2, 3])


def test_varlen_offsets():
    same(varlen([0, 3, 5, 9], offsets=[10, -2, 2**31 - 4]), [10, 11, 12, -2, -1, 2**31 - 4, 2**31 - 3, 2**31 - 2,
                                                             2**31 - 1])
    same(varlen([0, 2, 3], offsets=-1), [-1, 0, -1])


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.data())
def test_varlen_property(lengths, data):
    cu = np.concatenate([[0], np.cumsum(lengths)])
    offs = data.draw(st.lists(st.integers(-1000, 1000), min_size=len(lengths), max_size=len(lengths)))
    pos = varlen(cu, offsets=offs)
    want = [o + t for o, n in zip(offs, lengths) for t in range(n)]
    assert pos.tolist() == want


@pytest.mark.parametrize(
    "call, exc, prefix",
    [
        (lambda: varlen([0, 3, 3, 5]), ValueError, "cu_seqlens=[0, 3, 3, 5]"),
        (lambda: varlen([1, 3]), ValueError, "cu_seqlens[0]=1"),
        (lambda: varlen([0, 4, 2]), ValueError, "cu_seqlens=[0, 4, 2]"),
        (lambda: varlen([0.0, 2.0]), TypeError, "cu_seqlens.dtype='float64'"),
        (lambda: varlen(["a", "b"]), TypeError, "cu_seqlens.dtype="),
        (lambda: varlen(np.array([], np.int64)), ValueError, "cu_seqlens.shape=(0,)"),
        (lambda: varlen([]), TypeError, "cu_seqlens.dtype='float64'"),
        (lambda: varlen([[0, 2]]), ValueError, "cu_seqlens.shape=(1, 2)"),
        (lambda: varlen([0, 2, 4], offsets=[1, 2, 3]), ValueError, "offsets.shape=(3,)"),
        (lambda: varlen([0, 2], offsets=[2**31 - 1]), ValueError, "positions=2147483648"),
        (lambda: varlen([0, 2], offsets=[0.5]), TypeError, "offsets.dtype='float64'"),
        (lambda: check_cu_seqlens([0, 2, 4], 5), ValueError, "cu_seqlens[-1]=4"),
    ],
)
def test_varlen_bad(call, exc, prefix):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(prefix), str(info.value)


# ---------------------------------------------------------------------------------------------
# mRoPE ids (Qwen2-VL get_rope_index)
# ---------------------------------------------------------------------------------------------


def test_mrope_text_image_text_by_hand():
    """3 text tokens, an image grid (t=1, h=2, w=3) after spatial merge, 2 text tokens.

    Qwen2-VL get_rope_index: text run st..st+L-1 on all rows; the image block is
    [t_idx, h_idx, w_idx] + (text_len + st) in (t, h, w) raster order; the next text
    starts at max(previous ids) + 1.
    """
    ids = mrope_ids([3, (1, 2, 3), 2])
    same(
        ids,
        [
            [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7],  # t
            [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7],  # h
            [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7],  # w
        ],
    )


def test_mrope_video_and_t_stride():
    """A video grid (t=2, h=2, w=2) after 1 text token; Qwen2.5-VL scales the t index by a stride."""
    same(
        mrope_ids([1, (2, 2, 2), 1]),
        [
            [0, 1, 1, 1, 1, 2, 2, 2, 2, 3],
            [0, 1, 1, 2, 2, 1, 1, 2, 2, 3],
            [0, 1, 2, 1, 2, 1, 2, 1, 2, 3],
        ],
    )
    same(
        mrope_ids([(2, 1, 2), 2], t_stride=25),
        [
            [0, 0, 25, 25, 26, 27],
            [0, 0, 0, 0, 26, 27],
            [0, 1, 0, 1, 26, 27],
        ],
    )


def test_mrope_text_only_rows_equal():
    ids = mrope_ids([4, 2])
    same(ids, [[0, 1, 2, 3, 4, 5]] * 3)


@pytest.mark.parametrize(
    "segments, prefix",
    [
        ([0], "segments[0]=0"),
        ([3, (1, 0, 2)], "segments[1]=(1, 0, 2)"),
        ([3, (1, 2)], "segments[1]=(1, 2)"),
        ([], "segments=[]"),
        ([3.0], "segments[0]=3.0"),
        (["abc"], "segments[0]='abc'"),
        ([(1, 2.5, 2)], "segments[0]=(1, 2.5, 2)"),
    ],
)
def test_mrope_bad(segments, prefix):
    with pytest.raises(ValueError) as info:
        mrope_ids(segments)
    assert str(info.value).startswith(prefix), str(info.value)


# ---------------------------------------------------------------------------------------------
# 2-D grids, check_positions
# ---------------------------------------------------------------------------------------------


def test_grid_2d():
    same(grid_2d(2, 3), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]])
    same(grid_2d(1, 1), [[0, 0]])
    with pytest.raises(ValueError) as info:
        grid_2d(0, 3)
    assert str(info.value).startswith("height, width=(0, 3)")


def test_check_positions_range_ends_and_dtypes():
    same(check_positions(np.array([-(2**31), 2**31 - 1])), [-(2**31), 2**31 - 1])
    same(check_positions(np.array([1, 2], dtype=np.uint8)), [1, 2])
    with pytest.raises(ValueError, match=r"^positions=2147483648: "):
        check_positions([0, 2**31])
    with pytest.raises(TypeError, match=r"^positions\.dtype='float32': "):
        check_positions(np.zeros(2, np.float32))
