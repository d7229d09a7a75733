"""``benchmarks/bench_first_run.py --quick`` runs end to end (smoke mode; it asserts nothing about time).

Keeps the benchmark from rotting, and checks that what it calls cold and warm are: the fresh copy's
first run compiles the serial kernels (nothing was cached), the second compiles nothing.
"""

from __future__ import annotations

from bench_scripts import run_quick


def test_quick_mode_times_a_cold_and_a_warm_run(tmp_path, capsys):
    report = run_quick("bench_first_run", tmp_path)
    assert report["summary"].startswith("OK: ") and "PASS" in report["summary"], report
    assert sorted(report["cold_compiled"]) == ["rotate_serial (float64 input)", "tables_serial (int64 input)"], report
    assert report["warm_compiled"] == [], report
    assert report["cold_s"] > 0 and len(report["warm_s"]) == 1 and report["cold_over_warm"] > 0
    assert report["files_copied"] > 100 and not report["venv"]
    printed = capsys.readouterr().out
    assert "cold/warm" in printed and "(< 10 s on 2 idle cores)" in printed
