"""``benchmarks/bench_apply.py --quick`` runs end to end (the smoke mode; it asserts nothing about time).

Keeps the benchmark from rotting: every case has a row per implementation, with a time
or the reason it was skipped, and the report carries the issue's targets (met or not:
the verdict is a benchmark figure, not a test assertion).
"""

from __future__ import annotations

import importlib.util
import os

from bench_scripts import run_quick


def test_quick_mode_reports_every_row(tmp_path, capsys):
    report = run_quick("bench_apply", tmp_path)
    rows = report["rows"]
    cases = {r["case"] for r in rows}
    assert len(cases) == 6  # 2 shapes x 2 dtypes, varlen, mRoPE
    for case in cases:
        impls = {(r["direction"], r["impl"]) for r in rows if r["case"] == case}
        for want in (("copy", "np.copyto(out, x)"), ("fwd", "reference"), ("fwd", "fast"), ("bwd", "fast"), ("fwd", "fast+alloc")):
            assert want in impls, (case, want)
    for r in rows:
        timed = r["median_ms"] is not None
        assert timed == (r["gb_s"] is not None), r
        assert timed or r["note"], f"a row without a time must say why: {r}"
        if timed:
            assert r["median_ms"] > 0 and r["gb_s"] > 0, r
    for impl, module in (("torch", "torch"), ("jax", "jax"), ("mlx", "mlx.core")):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            assert os.environ.get("CI") != "true", f"CI installs {module}, but it is missing"
            continue  # optional library absent on this machine: its rows say "skipped"
        timed = [r for r in rows if r["impl"] == impl and r["direction"] == "fwd" and r["median_ms"] is not None]
        assert timed, f"{impl} is installed but no forward row was timed: {[r['note'] for r in rows if r['impl'] == impl]}"
    targets = next(v for k, v in report["info"].items() if k.startswith("targets"))
    assert set(targets) >= {"fraction of copy bandwidth", "reference time / fast", "fast bwd / fwd time", "fast fwd float32 / float64 time"}
    assert all(v.endswith((": met", ": NOT met")) for v in targets.values())
    printed = capsys.readouterr().out
    assert "copy bandwidth" in printed and "targets" in printed
