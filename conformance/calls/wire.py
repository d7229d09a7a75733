"""The messages a worker process sends the judge: bytes the judge parses, never unpickles.

A backend runs inside its worker process and can do anything there, including writing its own
bytes to the pipe. Unpickling what the worker sends would run that code in the judge (a pickle
is a program), so worker replies use this format instead, read with the same limits as golden
files::

    b"RRW1" | header length (4 bytes, little-endian) | header (JSON, UTF-8) | array blobs

The header is ``{"seq": N, "kind": K, "payload": {...}, "arrays": [{"name", "dtype", "bits",
"offset", "length"}, ...]}``: the request it answers, what kind of reply, JSON values, and where
each array's ``.npy`` blob lies in the bytes that follow. Blobs are ``.npy`` format 1.0, written
and read without pickle; each header is checked against its blob before anything is allocated
(:mod:`conformance.cases.npy_limits`). A dtype ``.npy`` cannot name (bfloat16) travels as its
bits (``uint16``) with ``"bits": true`` and its name. Anything else is a :class:`WireError`:
the judge reports the case as an ERROR and kills the worker.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roperef.json_input import JSONInputError, JSONLimits, loads_limited

from ..cases.case import numpy_dtype
from ..cases.npy_limits import MAX_ARRAY_BYTES, ArrayFileError, check_npy_stream

__all__ = ["WireError", "Message", "encode", "decode", "MAX_MESSAGE_BYTES"]

MAGIC = b"RRW1"
#: the largest reply the judge reads (an array of up to 4 GiB and its header)
MAX_MESSAGE_BYTES = MAX_ARRAY_BYTES + 2**20
_MAX_HEADER_BYTES = 2**20
_LIMITS = JSONLimits(max_bytes=_MAX_HEADER_BYTES, max_depth=16)
#: dtypes that travel as bits: name -> the unsigned type of their width
_BITS = {"bfloat16": "<u2"}


class WireError(ValueError):
    """A worker's reply that does not parse (a malformed, forged or oversized message)."""


@dataclass
class Message:
    """One reply: the request number it answers, its kind, JSON payload and arrays."""

    seq: int
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def _blob(arr: np.ndarray) -> tuple[bytes, str, bool]:
    name = arr.dtype.name
    bits = name in _BITS
    body = np.array(arr.view(_BITS[name]) if bits else arr, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    if body.dtype.hasobject or body.dtype.kind == "V":
        raise WireError(f"an array of dtype {arr.dtype} cannot be sent to the judge (numbers only)")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, body, version=(1, 0), allow_pickle=False)
    return buf.getvalue(), name, bits


def encode(message: Message) -> bytes:
    """The bytes of ``message`` (payload: JSON values; arrays: plain NumPy arrays of numbers)."""
    blobs: list[bytes] = []
    index = []
    offset = 0
    for name, arr in message.arrays.items():
        data, dtype, bits = _blob(np.asarray(arr))
        index.append({"name": str(name), "dtype": dtype, "bits": bits, "offset": offset, "length": len(data)})
        blobs.append(data)
        offset += len(data)
    header = json.dumps({"seq": message.seq, "kind": message.kind, "payload": message.payload, "arrays": index},
                        ensure_ascii=True, allow_nan=True).encode("ascii")
    if len(header) > _MAX_HEADER_BYTES:
        raise WireError(f"the reply header is {len(header)} bytes, more than {_MAX_HEADER_BYTES}")
    return MAGIC + struct.pack("<I", len(header)) + header + b"".join(blobs)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WireError(f"{what}={value!r}: not a non-negative integer")
    return value


def _array(data: memoryview, entry: Any, where: str) -> tuple[str, np.ndarray]:
    if not isinstance(entry, Mapping):
        raise WireError(f"{where}: an array entry is not an object")
    name, dtype, bits = entry.get("name"), entry.get("dtype"), entry.get("bits")
    if not isinstance(name, str) or not isinstance(dtype, str) or not isinstance(bits, bool):
        raise WireError(f"{where}: an array entry lacks its name, dtype or bits")
    start, length = _int(entry.get("offset"), "offset"), _int(entry.get("length"), "length")
    if start + length > len(data):
        raise WireError(f"{where}: array {name!r} lies past the end of the message")
    blob = bytes(data[start:start + length])
    fp = io.BytesIO(blob)
    try:
        check_npy_stream(fp, length, f"{where}: array {name!r}")
        arr = np.load(io.BytesIO(blob), allow_pickle=False)
    except ArrayFileError as exc:
        raise WireError(str(exc)) from None
    except (ValueError, OSError, EOFError) as exc:
        raise WireError(f"{where}: array {name!r} does not load without pickle ({exc})") from None
    if bits:
        if dtype not in _BITS or arr.dtype != np.dtype(_BITS[dtype]):
            raise WireError(f"{where}: array {name!r}: bits of dtype {dtype!r} are not known to the judge")
        arr = arr.view(numpy_dtype(dtype))
    elif arr.dtype.name != dtype:
        raise WireError(f"{where}: array {name!r} is {arr.dtype.name}, the header says {dtype}")
    return name, arr


def decode(data: bytes, where: str = "the backend process's reply") -> Message:
    """Parse a reply; :class:`WireError` naming what is wrong with it."""
    view = memoryview(data)
    if len(data) < 8 or bytes(view[:4]) != MAGIC:
        raise WireError(f"{where}: not a roperef worker message (bad magic {bytes(view[:4])!r})")
    (size,) = struct.unpack("<I", view[4:8])
    if size > _MAX_HEADER_BYTES or 8 + size > len(data):
        raise WireError(f"{where}: header of {size} bytes does not fit the message of {len(data)} bytes")
    try:
        header = loads_limited(bytes(view[8:8 + size]).decode("utf-8"), source=where, limits=_LIMITS)
    except (JSONInputError, UnicodeDecodeError) as exc:
        raise WireError(f"{where}: header does not parse ({exc})") from None
    if not isinstance(header, dict) or set(header) != {"seq", "kind", "payload", "arrays"}:
        raise WireError(f"{where}: the header must be an object with seq, kind, payload, arrays")
    kind, payload, entries = header["kind"], header["payload"], header["arrays"]
    if not isinstance(kind, str) or not isinstance(payload, dict) or not isinstance(entries, list):
        raise WireError(f"{where}: kind, payload or arrays has the wrong type")
    body = view[8 + size:]
    arrays = dict(_array(body, e, where) for e in entries)
    return Message(_int(header["seq"], "seq"), kind, payload, arrays)
