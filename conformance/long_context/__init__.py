"""Long context: forward and backward at real sequence lengths, chunk by chunk (:mod:`.stream`), judged by
a fused Numba pass (:mod:`.kernel`)."""
