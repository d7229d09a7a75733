"""The judge judged: correct engines PASS every smoke case; each bug class FAILs and is named."""

from __future__ import annotations

import collections
import fnmatch

import pytest

from conformance.backends.emulated import Float32Emulation
from conformance.backends.resolve import resolve_backend
from conformance.runner import RunOptions, run_cases
from judge_cases import smoke_cases
from wrong_backends import BUGS, Buggy


@pytest.mark.parametrize(
    "make",
    [lambda: resolve_backend("numpy"), lambda: resolve_backend("numba"), lambda: Float32Emulation(),
     lambda: Float32Emulation(tables="input")],
    ids=["numpy", "numba", "emulated-fp32", "emulated-fp32-input-tables"],
)
def test_correct_backends_pass_everything(make):
    rep = run_cases(make(), list(smoke_cases()), RunOptions(diagnose=False))
    bad = [(r.id, r.status, r.message) for r in rep.results if r.status != "PASS"]
    assert not bad, bad[:5]
    assert len(rep.results) == len(smoke_cases())


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_bug_class_fails_and_is_named(bug):
    rep = run_cases(Buggy(bug=bug), list(smoke_cases()), RunOptions())
    fails = [r for r in rep.results if r.status == "FAIL"]
    assert fails, f"{bug}: no case failed"
    named = collections.Counter((r.diagnosis or {}).get("match") for r in fails)
    ok = sum(n for name, n in named.items() if name and any(fnmatch.fnmatchcase(name, p) for p in BUGS[bug]))
    assert ok >= 1, f"{bug}: diagnoses were {dict(named)}"
    wrong = {k: n for k, n in named.items() if k and not any(fnmatch.fnmatchcase(k, p) for p in BUGS[bug])}
    assert sum(wrong.values()) <= ok / 4, f"{bug}: named as another bug too often: {wrong} vs {ok} right"
    # the explanation is in words, in the message of a named case
    example = next(r for r in fails if (r.diagnosis or {}).get("match"))
    assert example.diagnosis["summary"].startswith("likely cause: ")
