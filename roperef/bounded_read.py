"""Read at most ``limit`` bytes of an open binary file, in bounded chunks.

``fh.read(n)`` allocates an ``n``-byte buffer before it reads anything: with ``n`` the 4 GiB
array limit, a 3 KiB golden file needs 4 GiB of address space (``MemoryError`` under
``ulimit -v 4194304``, as HPC schedulers and CI runners set) and, under ``python -X dev``,
the debug allocator fills those 4 GiB with a pattern byte first (minutes: the run seems to
hang). :func:`read_at_most` reads pieces of at most :data:`CHUNK` bytes instead, so the
memory a read needs is the file's own size plus one chunk, whatever the limit.

The caller tells a file that is too long by ``len(result) > limit``: at most ``limit + 1``
bytes are read, one more than the limit, so that "exactly at the limit" and "past it"
differ. This module is a leaf: it imports nothing from roperef or conformance.
"""

from __future__ import annotations

from typing import BinaryIO

__all__ = ["CHUNK", "read_at_most"]

#: the largest single read (1 MiB): the buffer a read allocates, whatever the limit
CHUNK = 2**20


def read_at_most(fh: BinaryIO, limit: int, *, chunk: int = CHUNK) -> bytes:
    """The bytes of ``fh`` from its position to the end of file, or its first ``limit + 1`` bytes
    when it holds more than ``limit`` (the caller refuses those); read in pieces of at most
    ``chunk`` bytes. ``limit`` and ``chunk`` must be integers, ``limit >= 0`` and ``chunk >= 1``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit={limit!r}: must be an integer >= 0 (the most bytes the caller accepts)")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk={chunk!r}: must be an integer >= 1 (the largest single read)")
    parts: list[bytes] = []
    total = 0
    while total <= limit:
        piece = fh.read(min(chunk, limit + 1 - total))
        if not piece:
            break
        parts.append(piece)
        total += len(piece)
    return parts[0] if len(parts) == 1 else b"".join(parts)
