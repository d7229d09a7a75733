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
    return str(write_golden_dir(tmp_path_factory.mktemp("golden"), materialize_subset("forward/default/half/*")))


def test_plugin_import_is_cheap():
    code = "import sys, conformance.pytest_plugin; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_items_per_case_and_failure_messages(pytester, golden):
    pytester.makepyfile("def test_plain():\n    pass\n")
    res = pytester.runpytest(*_plugin(), "--rope-backend", "numpy", "--rope-golden", golden)
    res.assert_outcomes(passed=len(materialize_subset("forward/default/half/*")) + 1)
    bad = pytester.runpytest(*_plugin(), "--rope-backend", "wrong_backends:Buggy",
                             "--rope-golden", golden, "--rope-filter", "long-odd", "-p", "no:cacheprovider")
    bad.assert_outcomes(passed=1 + len(materialize_subset("forward/default/half/*long-odd*")))  # a bug-free Buggy
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
