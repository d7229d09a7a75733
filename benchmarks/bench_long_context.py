"""Throughput and peak memory of the long-context check (``roperef check --long-context``).

Run by hand (``python benchmarks/bench_long_context.py``); ``--quick`` is a smoke mode with
small shapes that asserts nothing about time; ``--json F`` writes the rows.

Each row (length T x stage x dtype, H heads, head dim D, chunks of C tokens) runs
:func:`conformance.long_context.stream.judge_row` on the built-in Numba backend in its own
subprocess, which first warms the kernels up on a tiny plan and then reports:

- ``seconds``: the row, end to end (inputs, the backend, expected values by roperef.fast,
  the fused judging pass, the re-judge of the worst chunk);
- ``backend s``: the time inside the backend's forward/backward calls;
- ``GB out``: bytes of backend output judged (the Numba backend returns float64);
- ``judge GB/s``: GB out / (seconds - backend s): the judge's own throughput, and that as a
  fraction of the copy bandwidth: ``np.copyto`` between two float64 arrays of one chunk's
  output size, counted as bytes read + bytes written per second (as in bench_apply.py),
  best of 5, measured in this run before and after the rows (the better one is used);
  ``x 512M``: the same against a 512 MiB copy (out of every cache: bench_apply.py's reference);
- ``Mel/s``: elements judged per second, end to end;
- ``traced MiB``: the peak of traced allocations (``tracemalloc``: every NumPy array) during the
  row, and in units of one chunk's float64 output (``x chunk``); the sequence's own float64
  output would be ``T/C`` chunks;
- ``+RSS MiB``: ``ru_maxrss`` after the row minus after the warm-up, in the subprocess; ``RSS MiB``:
  the subprocess's peak resident set (Python, NumPy, Numba and its cache included). The copy
  bandwidths are measured in subprocesses too: a parent holding large arrays when it starts a
  row would hand its high-water mark down (Linux keeps ``maxrss`` across fork and exec).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass
class Row:
    length: int
    stage: str
    dtype: str
    heads: int
    head_dim: int
    chunk: int
    status: str
    budget: float | None
    seconds: float
    backend_seconds: float
    out_gb: float
    judge_gb_s: float
    frac_copy: float | None
    frac_copy_512: float | None
    mel_s: float
    traced_mib: float
    traced_chunks: float
    rss_delta_mib: float
    rss_mib: float


class TimedBackend:
    """Delegates to a backend and adds up the time spent in its forward/backward calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds, self.out_bytes = inner, 0.0, 0
        self.name, self.capabilities = inner.name, inner.capabilities

    def supports(self, case: Any) -> Any:
        return self.inner.supports(case)

    def _timed(self, stage: str, *args: Any) -> Any:
        t0 = time.perf_counter()
        out = getattr(self.inner, stage)(*args)
        self.seconds += time.perf_counter() - t0
        self.out_bytes += np.asarray(out).nbytes
        return out

    def forward(self, x: Any, positions: Any, spec: Any, cu_seqlens: Any = None) -> Any:
        return self._timed("forward", x, positions, spec)

    def backward(self, grad: Any, positions: Any, spec: Any, cu_seqlens: Any = None) -> Any:
        return self._timed("backward", grad, positions, spec)


def copy_bandwidth(nbytes: int, repeats: int = 5) -> float:
    """GB/s of ``np.copyto`` (read + write bytes) between two float64 arrays of ``nbytes``, best of ``repeats``."""
    n = max(nbytes // 8, 1)
    src = np.random.default_rng(0).standard_normal(n)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = min(_timed_copy(dst, src) for _ in range(repeats))
    return 2 * src.nbytes / best / 1e9


def _timed_copy(dst: np.ndarray, src: np.ndarray) -> float:
    t0 = time.perf_counter()
    np.copyto(dst, src)
    return time.perf_counter() - t0


def _plan(lengths: tuple[int, ...], chunk: int, heads: int, head_dim: int, dtypes: tuple[str, ...] = ("float32",),
          stages: tuple[str, ...] = ("forward",)) -> Any:
    from conformance.long_context.stream import LongContextPlan
    from roperef.spec import RopeSpec

    return LongContextPlan(lengths, RopeSpec(head_dim, theta=500000.0), chunk, heads, dtypes, stages)


def run_row(length: int, stage: str, dtype: str, chunk: int, heads: int, head_dim: int) -> dict[str, Any]:
    """One row in this process (called in the subprocess): warm up, then measure."""
    from conformance.backends.numba_backend import NumbaBackend
    from conformance.error_model.tolerance import get_profile
    from conformance.long_context.stream import judge_row, run_long_context

    backend = TimedBackend(NumbaBackend())
    run_long_context(backend, _plan((128,), 64, heads, head_dim, (dtype,), (stage,)))  # load every kernel
    backend.seconds, backend.out_bytes = 0.0, 0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    res = judge_row(backend, _plan((length,), chunk, heads, head_dim, (dtype,), (stage,)), length, stage, dtype,
                    get_profile("strict"))
    seconds = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"status": res.status, "budget": res.metrics.budget_used if res.metrics else None, "seconds": seconds,
            "backend_seconds": backend.seconds, "out_bytes": backend.out_bytes, "rss_kib": rss1, "rss_delta_kib": rss1 - rss0, "traced_bytes": traced,
            "message": res.message}


def _subprocess(*args: str) -> Any:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _subprocess_row(length: int, stage: str, dtype: str, chunk: int, heads: int, head_dim: int) -> dict[str, Any]:
    return _subprocess("--row", f"{length},{stage},{dtype}", "--chunk", str(chunk), "--heads", str(heads),
                       "--head-dim", str(head_dim))


def _copies(chunk_bytes: int) -> tuple[float, float]:
    """(chunk-sized copy GB/s, 512 MiB copy GB/s), measured in a subprocess."""
    got = _subprocess("--copy", str(chunk_bytes))
    return got["chunk"], got["512MiB"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small shapes (smoke mode)")
    ap.add_argument("--lengths", default="131072,1048576")
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--json", default=None, metavar="F")
    ap.add_argument("--row", default=None, help=argparse.SUPPRESS)  # internal: one row in this process
    ap.add_argument("--copy", type=int, default=None, help=argparse.SUPPRESS)  # internal: copy bandwidths
    args = ap.parse_args(argv)
    if args.copy:
        print(json.dumps({"chunk": copy_bandwidth(args.copy), "512MiB": copy_bandwidth(512 * 2**20, repeats=3)}))
        return 0
    if args.row:
        length, stage, dtype = args.row.split(",")
        print(json.dumps(run_row(int(length), stage, dtype, args.chunk, args.heads, args.head_dim)))
        return 0
    if args.quick:
        args.lengths, args.chunk, args.heads, args.head_dim = "8192,16384", 1024, 2, 32
    lengths = tuple(int(t) for t in args.lengths.split(","))
    chunk_bytes = args.chunk * args.heads * args.head_dim * 8
    load = os.getloadavg()
    print(f"bench_long_context: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"H={args.heads} D={args.head_dim} chunk={args.chunk} tokens ({chunk_bytes / 2**20:.1f} MiB of float64 output per chunk)")
    copy_before, big_before = _copies(chunk_bytes)
    rows: list[Row] = []
    head = (f"{'T':>8} {'stage':>8} {'dtype':>8} {'status':>6} {'budget':>8} {'seconds':>8} {'backend s':>9} {'GB out':>7} "
            f"{'judge GB/s':>10} {'x copy':>7} {'x 512M':>7} {'Mel/s':>7} {'traced MiB':>10} {'x chunk':>7} {'+RSS MiB':>8} {'RSS MiB':>7}")
    print(head)
    results = []
    for length in lengths:
        for stage in ("forward", "backward"):
            for dtype in ("bfloat16", "float32"):
                results.append((length, stage, dtype, _subprocess_row(length, stage, dtype, args.chunk, args.heads, args.head_dim)))
    copy_after, big_after = _copies(chunk_bytes)
    copy_bw, big_bw = max(copy_before, copy_after), max(big_before, big_after)
    for length, stage, dtype, r in results:
        judge_s = max(r["seconds"] - r["backend_seconds"], 1e-9)
        out_gb = r["out_bytes"] / 1e9
        row = Row(length, stage, dtype, args.heads, args.head_dim, args.chunk, r["status"], r["budget"], r["seconds"],
                  r["backend_seconds"], out_gb, out_gb / judge_s, (out_gb / judge_s) / copy_bw if copy_bw else None,
                  (out_gb / judge_s) / big_bw if big_bw else None,
                  length * args.heads * args.head_dim / r["seconds"] / 1e6,
                  r["traced_bytes"] / 2**20, r["traced_bytes"] / chunk_bytes, r["rss_delta_kib"] / 1024, r["rss_kib"] / 1024)
        rows.append(row)
        print(f"{length:>8} {stage:>8} {dtype:>8} {row.status:>6} {row.budget if row.budget is not None else float('nan'):>8.3g} "
              f"{row.seconds:>8.2f} {row.backend_seconds:>9.2f} {row.out_gb:>7.2f} {row.judge_gb_s:>10.2f} "
              f"{row.frac_copy or 0:>7.3f} {row.frac_copy_512 or 0:>7.3f} {row.mel_s:>7.1f} {row.traced_mib:>10.1f} "
              f"{row.traced_chunks:>7.1f} {row.rss_delta_mib:>8.1f} {row.rss_mib:>7.0f}")
    print(f"copy bandwidth (np.copyto of {chunk_bytes / 2**20:.1f} MiB float64, read+write): {copy_before:.1f} GB/s "
          f"before the rows, {copy_after:.1f} GB/s after (used: {copy_bw:.1f}); 512 MiB: {big_before:.1f} / "
          f"{big_after:.1f} GB/s (used: {big_bw:.1f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"info": {"copy_gb_s": [copy_before, copy_after],
                                                        "copy_512mib_gb_s": [big_before, big_after], "load_average": load,
                                                        "chunk_bytes": chunk_bytes},
                                               "rows": [asdict(r) for r in rows]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
