"""The pytest plugin and assert_rope_conforms."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.assertions import assert_rope_conforms
from judge_cases import materialize_subset, write_golden_dir
from wrong_backends import Buggy

pytest_plugins = ["pytester"]


def _plugin() -> list[str]:
    """``-p conformance.pytest_plugin`` unless the installed entry point already loads it."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "conformance.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "conformance.pytest_plugin"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    directory = str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("forward/default/half/*")))
    # materialize the generated cases once here: Numba loads its kernels (and the registries it imports on
    # first use) in this process, before pytester's in-process runs, which drop the modules they import
    _check_ids("numpy", directory)
    return directory


def test_plugin_import_is_cheap():
    code = "import sys, conformance.pytest_plugin; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _check_ids(backend, golden, *filters):
    """The case ids ``roperef check`` judges (goldens plus generated) for these options."""
    from conformance.backends.resolve import resolve_backend
    from conformance.judge.check_sources import check_cases

    source, _ = check_cases(resolve_backend(backend), golden, "smoke", list(filters))
    return [c.id for c in source.cases]


def test_items_per_case_and_failure_messages(pytester, golden):
    ids = _check_ids("numpy", golden)
    buggy_ids = _check_ids("wrong_backends:Buggy", golden, "long-odd")
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "numpy", "--rope-golden", golden)
    assert len(ids) > len(materialize_subset("forward/default/half/*"))  # the generated cases are items too
    res.assert_outcomes(passed=len(ids) + 1)
    goldens = pytester.runpytest(*_plugin(), "--rope-backend", "numpy", "--rope-golden", golden, "--rope-goldens-only")
    goldens.assert_outcomes(passed=len(materialize_subset("forward/default/half/*")) + 1)
    bad = pytester.runpytest(*_plugin(), "--rope-backend", "wrong_backends:Buggy",
                             "--rope-golden", golden, "--rope-filter", "long-odd", "-p", "no:cacheprovider")
    bad.assert_outcomes(passed=1 + len(buggy_ids))  # a bug-free Buggy
    pytester.makepyfile(bugmod="from wrong_backends import Buggy\ndef make():\n    return Buggy(bug='positions-bf16')\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "bugmod:make", "--rope-golden", golden, "--rope-filter", "long-odd")
    assert res.parseoutcomes().get("failed", 0) >= 1
    res.stdout.fnmatch_lines(["*likely cause: positions rounded to bfloat16*", "*repro: pytest --rope-backend bugmod:make*"])


def test_without_backend_the_plugin_adds_nothing(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest(*_plugin()).assert_outcomes(passed=1)


def test_bad_backend_is_a_usage_error(pytester, golden):
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "nosuch", "--rope-golden", golden)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown backend 'nosuch'" in res.stderr.str()


def test_assert_rope_conforms(golden):
    report = assert_rope_conforms("numpy", filter="long-odd", golden=golden)
    assert report.ok
    with pytest.raises(AssertionError, match="likely cause: positions rounded to bfloat16"):
        assert_rope_conforms(Buggy(bug="positions-bf16"), filter="long-odd", golden=golden)


def test_report_header_names_backend_versions_profile_and_golden_hash(pytester, golden, monkeypatch):
    monkeypatch.setenv("ROPEREF_TEST_MARKER", "on")
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "emulated-fp32", "--rope-golden", golden, "-p", "no:cacheprovider")
    from conformance.golden.store import load_golden

    set_hash = load_golden(golden).set_hash
    res.stdout.fnmatch_lines([
        "roperef: backend emulated-fp32 (emulated-fp32); stages apply, backward, cos_sin, forward, inv_freq; angles float32, tables float32*",
        "roperef: versions roperef *, numpy *, numba *, ml_dtypes *; backend libraries numpy *",
        "roperef: dtypes declared bfloat16, float16, float32, float64; in the selected cases *",
        "roperef: profile fp32-angles (angle dtype float32, table dtype backend, c_out=2 c_tab=4 c_ang=8*",
        f"roperef: cases * from {golden}; golden set hash {set_hash}, tier smoke",
        "roperef: environment *ROPEREF_TEST_MARKER=on*",
    ])


def test_header_announces_an_undeclared_backend(pytester, golden):
    pytester.makepyfile(plainmod="from roperef import reference\n"
                                 "class Plain:\n"
                                 "    def forward(self, x, positions, spec, cu_seqlens=None):\n"
                                 "        return reference.forward(x, positions, spec)\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "plainmod:Plain", "--rope-golden", golden, "-p", "no:cacheprovider")
    res.stdout.fnmatch_lines(["roperef: note: no capabilities declared: judged as a float64 engine with float64 tables*"])


def test_header_without_backend_is_one_line(pytester, monkeypatch):
    monkeypatch.delenv("ROPEREF_BACKEND", raising=False)
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest(*_plugin(), "-p", "no:cacheprovider")
    res.stdout.fnmatch_lines(["roperef *: no --rope-backend (no conformance items); *"])


def test_failure_message_shows_worst_elements_like_numpy_testing(golden):
    with pytest.raises(AssertionError) as exc:
        assert_rope_conforms(Buggy(bug="positions-bf16"), filter="long-odd", golden=golden)
    text = str(exc.value)
    assert "Mismatched elements: " in text and "%)" in text
    header = next(line for line in text.splitlines() if line.strip().startswith("output"))
    assert header.split() == ["output", "index", "position", "actual", "expected", "|err|", "bound", "budget"]
    rows = text.splitlines()[text.splitlines().index(header) + 1:]
    first = rows[0].split()
    # index (b, t, h, c), position an int > 256 (bf16-rounded positions are exact below), budget > 1
    assert first[0] == "y" and int(first[5]) > 256 and float(first[-1]) > 1
    actual, expected, err = float(first[6]), float(first[7]), float(first[8])
    assert abs(abs(actual - expected) - err) <= 5e-3 * err  # |err| is printed with 3 significant digits


def test_assertion_helper_hides_its_frames(pytester, golden):
    pytester.makepyfile(test_mine=f"""
from conformance.assertions import assert_rope_conforms
from wrong_backends import Buggy

def test_kernel():
    assert_rope_conforms(Buggy(bug="positions-bf16"), filter="long-odd", golden={golden!r})
""")
    res = pytester.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "assert_rope_conforms(Buggy(" in out  # the caller's line is shown
    assert "raise AssertionError" not in out and "conformance/assertions.py" not in out  # the helper's is not
