"""Check what an ``.npy`` header (alone, or as a member of an ``.npz``) declares before NumPy allocates it.

``np.load`` trusts the header: a 100-byte file declaring shape ``(2**37,)`` float64 makes it
allocate 1 TiB (``MemoryError``) before it finds the data missing. Here the header is read
first and the declared size ``prod(shape) * itemsize`` must equal the bytes that follow it:
the file's size for an ``.npy``, the member's uncompressed size (from the zip directory) for an
``.npz`` member. Object dtypes (pickles) are refused, and no file or member may exceed
:data:`MAX_ARRAY_BYTES`.

Every problem raises :class:`ArrayFileError` (a ``ValueError``) naming the file, the member and
the problem; callers wrap it in their own error type.
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
from typing import IO

import numpy as np

__all__ = ["ArrayFileError", "MAX_ARRAY_BYTES", "check_npy_stream", "check_npy_file", "check_npz_archive"]

#: the largest array (or archive member) accepted, in bytes: 4 GiB (the full golden tier is 179 MB)
MAX_ARRAY_BYTES = 4 * 2**30


class ArrayFileError(ValueError):
    """An ``.npy``/``.npz`` file whose header is malformed or declares more data than it holds."""


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def check_npy_stream(fp: IO[bytes], available: int, where: str) -> tuple[np.dtype, tuple[int, ...]]:
    """Read the ``.npy`` header at the start of ``fp`` whose whole body is ``available`` bytes.

    Returns the declared ``(dtype, shape)`` when the data after the header is exactly
    ``prod(shape) * itemsize`` bytes; :class:`ArrayFileError` otherwise.
    """
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, _fortran, dtype = fmt.read_array_header_1_0(fp)
        elif version in ((2, 0), (3, 0)):
            shape, _fortran, dtype = fmt.read_array_header_2_0(fp)
        else:
            raise ArrayFileError(f"{where}: .npy format version {version} is not supported")
    except ArrayFileError:
        raise
    except (ValueError, EOFError, OSError, SyntaxError, TypeError) as exc:
        raise ArrayFileError(f"{where}: not a readable .npy header ({exc})") from None
    if dtype.hasobject:
        raise ArrayFileError(f"{where} cannot be loaded without unpickling (dtype {dtype} holds Python objects; "
                             "object arrays are never loaded)")
    if any((not isinstance(n, int)) or n < 0 for n in shape):
        raise ArrayFileError(f"{where}: shape {shape} is not a tuple of non-negative integers")
    declared = math.prod(shape) * dtype.itemsize
    body = available - fp.tell()
    if declared > MAX_ARRAY_BYTES:
        raise ArrayFileError(f"{where}: the header declares shape {shape} of {dtype} = {_human(declared)}, "
                             f"more than the limit of {_human(MAX_ARRAY_BYTES)}")
    if declared != body:
        raise ArrayFileError(f"{where}: the header declares shape {shape} of {dtype} = {declared} bytes, "
                             f"but {max(body, 0)} bytes of data follow it (truncated or forged header)")
    return dtype, tuple(shape)


def check_npy_file(path: str | os.PathLike[str]) -> tuple[np.dtype, tuple[int, ...]]:
    """Check an ``.npy`` file (a regular file, header consistent with its size) before ``np.load``."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ArrayFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ArrayFileError(f"{path}: not a regular file (a FIFO, device or directory is never opened)")
    try:
        with open(path, "rb") as fp:
            return check_npy_stream(fp, st.st_size, str(path))
    except OSError as exc:
        raise ArrayFileError(f"{path}: cannot read ({exc.strerror or exc})") from None


def check_npz_archive(zf: zipfile.ZipFile, where: str) -> None:
    """Check every member of an open ``.npz`` archive: size within the limit, header consistent with it."""
    for info in zf.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        member = f"{where}: array {name!r}"
        if info.file_size > MAX_ARRAY_BYTES:
            raise ArrayFileError(f"{member}: {_human(info.file_size)} uncompressed, more than the limit of "
                                 f"{_human(MAX_ARRAY_BYTES)}")
        if not info.filename.endswith(".npy"):
            continue
        try:
            with zf.open(info) as fp:
                check_npy_stream(fp, info.file_size, member)
        except ArrayFileError:
            raise
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise ArrayFileError(f"{member}: cannot be read ({type(exc).__name__}: {exc})") from None
