"""What the exact (correctly rounded) frequencies cost: per spec, and inside golden generation / check.

Measured in one run, in this process:

1. every distinct (spec, seq_len) the smoke tier uses, computed cold (cache cleared):
   total and per-spec time of :func:`roperef.frequencies.inv_freq`;
2. materialising the whole smoke tier (what ``roperef golden generate`` does) with the
   frequency cache cleared first, and the part of it spent in the exact frequencies;
3. judging the checked-in goldens with the built-in ``numba`` backend (what ``roperef check``
   does), likewise.

The frequency share is measured by timing every call of the exact evaluation
(``roperef.frequencies.exact_values``, the cached function; a cache hit costs ~1 us).
Usage: ``python benchmarks/bench_frequencies.py``. A report, never an assertion.
"""

from __future__ import annotations

import time

from roperef import frequencies


class _Timed:
    """Wraps the cached exact evaluation and accumulates the time spent in cache misses."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.misses = 0
        self._inner = frequencies.exact_values

    def __call__(self, spec, length):
        before = self._inner.cache_info().misses
        t = time.perf_counter()
        out = self._inner(spec, length)
        if self._inner.cache_info().misses != before:
            self.seconds += time.perf_counter() - t
            self.misses += 1
        return out


def main() -> None:
    from conformance.cases.materialize import catalogue, materialize
    from conformance.golden.store import load_golden

    recipes = catalogue("smoke")
    keys = sorted({(r.spec, r.seq_len) for r in recipes}, key=repr)
    frequencies.exact_values.cache_clear()
    t = time.perf_counter()
    for spec, seq_len in keys:
        frequencies.inv_freq(spec, seq_len)
    cold = time.perf_counter() - t
    print(f"1. {len(keys)} distinct (spec, seq_len) of the smoke tier, cold: {cold * 1e3:.0f} ms "
          f"({cold / len(keys) * 1e3:.2f} ms each)")

    timed = _Timed()
    frequencies.exact_values = timed  # type: ignore[assignment]  # a timing wrapper with the same call signature
    try:
        for r in recipes[:3]:
            materialize(r)  # compile the Numba kernels outside the timed part
        timed._inner.cache_clear()
        timed.seconds = 0.0
        t = time.perf_counter()
        for r in recipes:
            materialize(r)
        total = time.perf_counter() - t
        print(f"2. materialise {len(recipes)} smoke cases: {total:.2f} s, of which exact frequencies "
              f"{timed.seconds:.2f} s ({timed.misses} evaluations, {100 * timed.seconds / total:.0f}%)")

        from conformance.backends.resolve import resolve_backend
        from conformance.judge.runner import RunOptions, run_cases

        golden = load_golden()
        backend = resolve_backend("numba")
        run_cases(backend, golden.cases[:3], RunOptions())
        timed._inner.cache_clear()
        timed.seconds = 0.0
        t = time.perf_counter()
        run_cases(backend, golden.cases, RunOptions())
        total = time.perf_counter() - t
        print(f"3. judge {len(golden.cases)} golden cases (numba backend): {total:.2f} s, of which exact "
              f"frequencies {timed.seconds:.2f} s ({timed.misses} evaluations, {100 * timed.seconds / total:.0f}%)")
    finally:
        frequencies.exact_values = timed._inner  # type: ignore[assignment]  # the original function restored


if __name__ == "__main__":
    main()
