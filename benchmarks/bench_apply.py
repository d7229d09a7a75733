"""Speed of RoPE forward/backward on CPU: roperef.reference, roperef.fast, torch eager, JAX jit, MLX.

Run by hand (``python benchmarks/bench_apply.py``); ``--quick`` is a smoke mode with
tiny shapes that asserts nothing about time. ``--json F`` writes the rows.

For every case and implementation it prints the median wall time (ms), the
throughput ``(bytes read + bytes written) / time`` in GB/s, and that throughput as a
fraction of the memory bandwidth measured in the same run by ``np.copyto`` of a large
float64 array (read + write bytes / time, one thread). The shapes are written as the
issue gives them, q in ``[B, H, T, D]``; roperef takes ``x[B, T, H, D]`` (same bytes).

Implementations (each skipped cleanly, with the reason, when not installed):

- ``reference``: :func:`roperef.reference.forward` / ``backward``.
- ``fast``: :func:`roperef.fast.forward` / ``backward`` writing into a preallocated
  ``out=`` buffer; ``fast+alloc`` the same call allocating its output.
- ``torch``: Hugging Face ``apply_rotary_pos_emb`` style (``q*cos + rotate_half(q)*sin``)
  with precomputed ``[T, D]`` tables, eager, ``torch.set_num_threads(2)``.
- ``jax``: the same formula under ``jax.jit`` (CPU).
- ``mlx``: ``mx.fast.rope`` on the CPU device (float32 only; forward only).

Memory: the peak of traced NumPy allocations (``tracemalloc``) during one
``fast.forward`` call, in units of the output size (1.0 = the output only), with and
without ``out=``; also the ``ru_maxrss`` increase across that call. Measured for the
first shape (B = 1: one cos/sin row per token) and the second (B = 8: batch rows share
positions, so the shared-positions path adds its small tables).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roperef import RopeSpec, fast, reference
from roperef.positions import mrope_ids


@dataclass
class Row:
    case: str
    direction: str
    impl: str
    median_ms: float | None
    gb_s: float | None
    frac_copy_bw: float | None
    note: str = ""


@dataclass
class Case:
    name: str
    x: np.ndarray  # [B, T, H, D] or packed [N, H, D]
    positions: np.ndarray | None
    spec: RopeSpec
    cu_seqlens: np.ndarray | None = None
    plain: bool = True  # torch/jax/mlx run only plain bshd half-pairing cases


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (JIT, page faults of first-touch buffers)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def copy_bandwidth(n_bytes: int, repeats: int) -> float:
    """GB/s of ``np.copyto`` (bytes read + written) on a float64 array of ``n_bytes``."""
    src = np.ones(n_bytes // 8)
    dst = np.empty_like(src)
    ms = median_ms(lambda: np.copyto(dst, src), repeats)
    return 2 * src.nbytes / (ms * 1e-3) / 1e9


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    out: list[Case] = []
    shapes = [(1, 4, 64, 32), (2, 2, 32, 16)] if quick else [(1, 32, 4096, 128), (8, 8, 2048, 64)]
    for b, h, t, d in shapes:
        for dtype in (np.float64, np.float32):
            x = rng.standard_normal((b, t, h, d)).astype(dtype)
            pos = np.arange(t, dtype=np.int64)[None].repeat(b, 0) + np.arange(b, dtype=np.int64)[:, None] * 7
            out.append(Case(f"bshd q({b},{h},{t},{d}) {np.dtype(dtype).name}", x, pos, RopeSpec(head_dim=d, theta=500000.0)))
    n_seq, h, d = 16, (4 if quick else 32), (32 if quick else 128)
    lengths = rng.integers(2 if quick else 64, 9 if quick else 449, size=n_seq)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = rng.standard_normal((int(cu[-1]), h, d))
    out.append(Case(f"varlen {n_seq} seqs, {int(cu[-1])} tok, H={h} D={d} float64", x, None, RopeSpec(head_dim=d), cu, plain=False))
    grid = (1, 4, 4) if quick else (1, 32, 48)
    pos3 = mrope_ids([16 if quick else 1024, grid, 16 if quick else 1024])
    n_tok = pos3.shape[1]
    spec = RopeSpec(head_dim=d, theta=1000000.0, mrope_section=(d // 8, 3 * d // 16, 3 * d // 16), mrope_layout="interleaved")
    x = rng.standard_normal((1, n_tok, h, d))
    out.append(Case(f"mRoPE interleaved {n_tok} tok, H={h} D={d} float64", x, pos3[:, None, :], spec, plain=False))
    return out


def hf_tables(case: Case, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``[B, T, D]`` cos/sin in the HF layout (``cat(freqs, freqs)``), from the reference tables."""
    c, s = reference.cos_sin(case.spec, case.positions)
    return np.concatenate([c, c], -1).astype(dtype), np.concatenate([s, s], -1).astype(dtype)


def torch_impl(case: Case):
    import torch

    torch.set_num_threads(2)
    q = torch.from_numpy(np.ascontiguousarray(case.x.transpose(0, 2, 1, 3)))  # [B, H, T, D]
    c, s = (torch.from_numpy(a)[:, None] for a in hf_tables(case, case.x.dtype))

    def rotate_half(v):
        half = v.shape[-1] // 2
        return torch.cat((-v[..., half:], v[..., :half]), dim=-1)

    return (lambda: q * c + rotate_half(q) * s), (lambda: q * c - rotate_half(q) * s)


def jax_impl(case: Case):
    import jax
    import jax.numpy as jnp

    if case.x.dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    q = jnp.asarray(np.ascontiguousarray(case.x.transpose(0, 2, 1, 3)))
    c, s = (jnp.asarray(a)[:, None] for a in hf_tables(case, case.x.dtype))

    def rotate_half(v):
        half = v.shape[-1] // 2
        return jnp.concatenate((-v[..., half:], v[..., :half]), axis=-1)

    fwd = jax.jit(lambda q, c, s: q * c + rotate_half(q) * s)
    bwd = jax.jit(lambda q, c, s: q * c - rotate_half(q) * s)
    return (lambda: fwd(q, c, s).block_until_ready()), (lambda: bwd(q, c, s).block_until_ready())


def mlx_impl(case: Case):
    import mlx.core as mx

    if case.x.dtype != np.float32:
        raise RuntimeError("mx.fast.rope has no float64")
    mx.set_default_device(mx.cpu)
    if not (case.positions == case.positions[:1] + (np.arange(case.x.shape[0]) * 7)[:, None]).all():
        raise RuntimeError("positions are not contiguous per row")
    q = mx.array(np.ascontiguousarray(case.x.transpose(0, 2, 1, 3)))
    d = case.spec.head_dim

    def fwd():
        y = mx.fast.rope(q, d, traditional=False, base=case.spec.theta, scale=1.0, offset=0)
        mx.eval(y)
        return y

    return fwd, None


def peak_memory(case: Case) -> dict[str, float]:
    """Peak traced NumPy allocation during one fast.forward call, in output sizes; and ru_maxrss growth (MiB)."""
    x, pos, spec, cu = case.x, case.positions, case.spec, case.cu_seqlens
    fast.forward(x, pos, spec, cu_seqlens=cu)  # compiled, pages of the kernels touched
    out_bytes = x.size * 8
    res: dict[str, float] = {}
    buf = np.empty(x.shape)
    for label, kw in (("alloc", {}), ("out=", {"out": buf})):
        tracemalloc.start()
        tracemalloc.reset_peak()
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        y = fast.forward(x, pos, spec, cu_seqlens=cu, **kw)
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del y
        res[f"traced_peak_per_output[{label}]"] = round(peak / out_bytes, 4)
        res[f"maxrss_increase_mib[{label}]"] = round((rss1 - rss0) / 1024, 1)
    return res


def _sig(value: float) -> float:
    """``value`` to 4 significant digits (a tiny smoke-mode throughput stays non-zero)."""
    return float(f"{value:.4g}")


def run(quick: bool, repeats: int) -> tuple[list[Row], dict[str, object]]:
    copy_gbs = copy_bandwidth((16 if quick else 512) << 20, repeats)
    rows: list[Row] = []
    extra: dict[str, object] = {"copy_bandwidth_gb_s": round(copy_gbs, 2)}

    def add(case: Case, direction: str, impl: str, fn: Callable[[], object] | None, n_bytes: int, reps: int, note: str = "") -> None:
        if fn is None:
            rows.append(Row(case.name, direction, impl, None, None, None, note))
            return
        ms = median_ms(fn, reps)
        gbs = n_bytes / (ms * 1e-3) / 1e9
        rows.append(Row(case.name, direction, impl, _sig(ms), _sig(gbs), _sig(gbs / copy_gbs), note))

    all_cases = cases(quick)
    for case in all_cases:
        x, pos, spec, cu = case.x, case.positions, case.spec, case.cu_seqlens
        od = x.dtype
        n_bytes = 2 * x.nbytes  # read x, write y of the same dtype
        buf = np.empty(x.shape, dtype=od)
        # The same traffic as a forward into ``buf``: on a VM, copy bandwidth depends on the buffers
        # (here 12-14 GB/s for 128 MiB arrays vs ~21 GB/s for the 512 MiB reference copy).
        add(case, "copy", "np.copyto(out, x)", lambda: np.copyto(buf, x), n_bytes, repeats, "same buffers, reference")
        for direction, ref_fn, fast_fn in (("fwd", reference.forward, fast.forward), ("bwd", reference.backward, fast.backward)):
            add(case, direction, "reference", lambda: ref_fn(x, pos, spec, cu_seqlens=cu, out_dtype=od), n_bytes, min(repeats, 3))
            add(case, direction, "fast", lambda: fast_fn(x, pos, spec, cu_seqlens=cu, out=buf), n_bytes, repeats)
            add(case, direction, "fast+alloc", lambda: fast_fn(x, pos, spec, cu_seqlens=cu, out_dtype=od), n_bytes, repeats)
        if not case.plain:
            continue
        for impl, make in (("torch", torch_impl), ("jax", jax_impl), ("mlx", mlx_impl)):
            try:
                fwd, bwd = make(case)
            except Exception as exc:  # not installed, or this case not supported: a row that says why
                for direction in ("fwd", "bwd"):
                    add(case, direction, impl, None, n_bytes, repeats, f"skipped: {type(exc).__name__}: {exc}"[:90])
                continue
            add(case, "fwd", impl, fwd, n_bytes, repeats)
            add(case, "bwd", impl, bwd, n_bytes, repeats, "" if bwd else "no backward")
    for case in (all_cases[0], all_cases[2]):  # one position per token; batch rows sharing positions
        extra["memory " + case.name] = peak_memory(case)
    return rows, extra


def ratios(rows: list[Row], case: str) -> dict[str, float]:
    t = {(r.direction, r.impl): r.median_ms for r in rows if r.case == case and r.median_ms}
    f = t.get(("fwd", "fast"))
    out: dict[str, float] = {}
    same = t.get(("copy", "np.copyto(out, x)"))
    if f and same:
        out["fast fwd / same-buffer copy bandwidth"] = round(same / f, 3)
    if f:
        for impl in ("reference", "torch", "jax", "mlx"):
            if ("fwd", impl) in t:
                out[f"{impl}/fast fwd"] = round(t[("fwd", impl)] / f, 2)
        if ("bwd", "fast") in t:
            out["fast bwd/fwd"] = round(t[("bwd", "fast")] / f, 3)
    return out


def targets(rows: list[Row], case: str, f32_case: str | None) -> dict[str, str]:
    """The issue's targets for fast forward of ``case`` (float64), each ``"measured (target): met|NOT met"``."""
    t = {(r.direction, r.impl): r for r in rows if r.case == case}
    fwd = t.get(("fwd", "fast"))
    if fwd is None or fwd.median_ms is None:
        return {}
    out: dict[str, str] = {}

    def check(name: str, value: float, ok: bool, want: str) -> None:
        out[name] = f"{value:.3g} ({want}): {'met' if ok else 'NOT met'}"

    check("fraction of copy bandwidth", fwd.frac_copy_bw or 0.0, (fwd.frac_copy_bw or 0.0) >= 0.7, ">= 0.7")
    for impl, want in (("reference", 8.0), ("torch", 10.0), ("jax", 10.0)):
        other = t.get(("fwd", impl))
        if other is not None and other.median_ms is not None:
            ratio = other.median_ms / fwd.median_ms
            check(f"{impl} time / fast", ratio, ratio >= want, f">= {want:g}")
    bwd = t.get(("bwd", "fast"))
    if bwd is not None and bwd.median_ms is not None:
        ratio = bwd.median_ms / fwd.median_ms
        check("fast bwd / fwd time", ratio, ratio <= 1.2, "<= 1.2")
    f32 = next((r for r in rows if r.case == f32_case and r.direction == "fwd" and r.impl == "fast"), None)
    if f32 is not None and f32.median_ms is not None:
        ratio = f32.median_ms / fwd.median_ms
        check("fast fwd float32 / float64 time", ratio, ratio <= 1.0, "<= 1")
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes, one repeat; asserts nothing about time")
    ap.add_argument("--repeats", type=int, default=None, help="timed calls per row (median); default 7, quick 1")
    ap.add_argument("--json", metavar="F", help="also write the rows and the machine info as JSON")
    args = ap.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 7)
    rows, extra = run(args.quick, repeats)
    info = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "numpy": np.__version__,
        **extra,
    }
    first = rows[0].case
    f32 = next((r.case for r in rows if "float32" in r.case), None)
    info["ratios " + first] = ratios(rows, first)
    if f32:
        t64 = next(r.median_ms for r in rows if r.case == first and r.direction == "fwd" and r.impl == "fast")
        t32 = next(r.median_ms for r in rows if r.case == f32 and r.direction == "fwd" and r.impl == "fast")
        info["fast fwd float32/float64 time"] = round(t32 / t64, 3)
    info["targets " + first] = targets(rows, first, f32)
    print(f"# {info['date']}  {info['cpu']}  cores={info['cores']}  load={info['load_average']}")
    print(f"# copy bandwidth (np.copyto, read+write): {extra['copy_bandwidth_gb_s']} GB/s")
    width = max(len(r.case) for r in rows)
    print(f"{'case':{width}}  dir  {'impl':10}  {'ms':>9}  {'GB/s':>7}  {'of copy':>7}  note")
    for r in rows:
        ms = f"{r.median_ms:9.2f}" if r.median_ms is not None else f"{'-':>9}"
        gb = f"{r.gb_s:7.2f}" if r.gb_s is not None else f"{'-':>7}"
        fr = f"{r.frac_copy_bw:7.2f}" if r.frac_copy_bw is not None else f"{'-':>7}"
        print(f"{r.case:{width}}  {r.direction}  {r.impl:10}  {ms}  {gb}  {fr}  {r.note}")
    for key, value in info.items():
        if key.startswith(("ratios", "memory", "fast fwd")):
            print(f"# {key}: {value}")
        elif key.startswith("targets"):
            print(f"# {key} (measured in this run; reported, never asserted):")
            for name, verdict in value.items():  # type: ignore[attr-defined]  # the "targets" row holds a dict
                print(f"#   {name}: {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "rows": [asdict(r) for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
