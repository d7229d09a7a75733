"""``benchmarks/bench_long_context.py --quick`` runs end to end (smoke mode; it asserts nothing about time).

Keeps the benchmark from rotting: one row per length x stage x dtype, each measured in its own
subprocess, with a throughput, a fraction of the copy bandwidth and a peak-memory delta.
"""

from __future__ import annotations

import math

from bench_scripts import run_quick


def test_quick_mode_reports_every_row(tmp_path, capsys):
    report = run_quick("bench_long_context", tmp_path)
    rows = report["rows"]
    assert {(r["length"], r["stage"], r["dtype"]) for r in rows} == {
        (t, s, d) for t in (8192, 16384) for s in ("forward", "backward") for d in ("bfloat16", "float32")}
    for r in rows:
        assert r["status"] == "PASS" and r["budget"] is not None and r["budget"] <= 1.0
        assert r["out_gb"] == r["length"] * r["heads"] * r["head_dim"] * 8 / 1e9  # float64 output, every element once
        assert r["seconds"] > r["backend_seconds"] > 0 and r["judge_gb_s"] > 0 and r["frac_copy"] > 0
        assert math.isfinite(r["rss_mib"]) and r["rss_mib"] > 0
        assert 1 <= r["traced_chunks"] < 10  # a few chunk-sized arrays (the output of one chunk is 1)
    assert all(bw > 0 for bw in report["info"]["copy_gb_s"])
    printed = capsys.readouterr().out
    assert "copy bandwidth (np.copyto" in printed and "judge GB/s" in printed
