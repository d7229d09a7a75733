"""Three LLVM operations that Numba has no spelling for, used by :mod:`roperef.fast.kernels`.

None of them changes a value; they change how memory is moved:

- :func:`stream16` copies 16 bytes (2 float64 or 4 float32) from ``src.flat[i]`` to
  ``dst.flat[j]`` with a *non-temporal* store (LLVM ``!nontemporal``; ``movntpd`` /
  ``movntps`` on x86-64, ``stnp`` on AArch64). A normal store first reads the
  destination line into cache (read-for-ownership), so streaming ``N`` bytes out costs
  ``2N`` bytes of memory traffic; a non-temporal store writes the line without
  reading it. **Requires** ``dst``'s address at ``j`` to be 16-byte aligned (the
  caller checks the base address and the stride; :func:`roperef.fast.streams`).
- :func:`prefetch` hints that the cache line holding ``arr.flat[i]`` will be read
  soon (``llvm.prefetch``, read, locality 2: L2 on x86-64). It never faults and is a
  no-op where the target has no prefetch instruction.
- :func:`store_fence` orders every earlier store, non-temporal ones included: an
  ``sfence`` on x86 (the fence the ISA prescribes for weakly ordered streaming
  stores) followed by a sequentially consistent LLVM fence (a locked instruction on
  x86-64, ``dmb ish`` on AArch64). Each parallel block ends with one, before the
  thread pool's own synchronisation publishes the block as done.

Numba's on-disk cache keys a kernel on its own source file only: after editing this
file, clear the cache of :mod:`roperef.fast.kernels` (Numba's ``*.nbi``/``*.nbc`` files in the
package's cache directory, or ``NUMBA_CACHE_DIR``) so that the kernels are recompiled with the new code.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["stream16", "prefetch", "store_fence"]

_I32 = ir.IntType(32)


def _element_pointer(context: Any, builder: Any, aryty: types.Array, ary: Any, flat_index: Any) -> Any:
    """Address of ``ary.flat[flat_index]`` of a C-contiguous array."""
    arr = context.make_array(aryty)(context, builder, ary)
    return builder.gep(arr.data, [flat_index])


@intrinsic
def stream16(typingctx: Any, src: Any, i: Any, dst: Any, j: Any) -> Any:
    """``dst.flat[j : j + 16 // itemsize] = src.flat[i : ...]`` with one 16-byte non-temporal store."""
    if not (isinstance(src, types.Array) and isinstance(dst, types.Array) and src.dtype == dst.dtype):
        return None
    if not (isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.void(src, i, dst, j)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        sty, _, dty, _ = signature.args
        s, si, d, dj = args
        elt = context.get_value_type(dty.dtype)
        size = context.get_abi_sizeof(elt)
        vec = ir.VectorType(elt, 16 // size)
        src_ptr = builder.bitcast(_element_pointer(context, builder, sty, s, si), vec.as_pointer())
        dst_ptr = builder.bitcast(_element_pointer(context, builder, dty, d, dj), vec.as_pointer())
        value = builder.load(src_ptr, align=size)
        store = builder.store(value, dst_ptr, align=16)
        store.set_metadata("nontemporal", builder.module.add_metadata([_I32(1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch(typingctx: Any, arr: Any, i: Any) -> Any:
    """Hint: the cache line of ``arr.flat[i]`` will be read soon (``llvm.prefetch``, read, locality 2, data)."""
    if not (isinstance(arr, types.Array) and isinstance(i, types.Integer)):
        return None
    sig = types.void(arr, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ptr = builder.bitcast(_element_pointer(context, builder, signature.args[0], args[0], args[1]), ir.IntType(8).as_pointer())
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, _I32(0), _I32(2), _I32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def store_fence(typingctx: Any) -> Any:
    """A sequentially consistent fence: every earlier store (non-temporal ones included) is visible after it."""
    sig = types.void()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if str(builder.module.triple).startswith(("x86_64", "i386", "i686")):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
            builder.call(fn, [])
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return sig, codegen
