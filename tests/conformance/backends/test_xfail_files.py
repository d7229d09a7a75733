"""The built-in backends' expected-failure files: named exactly after their backends, found by one function."""

from __future__ import annotations

import pytest

from conformance.backends.names import BUILTIN_BACKENDS
from conformance.judge.xfail import XFAIL_DIR, load_xfail, xfail_path


def test_every_xfail_file_is_named_after_a_registered_backend():
    files = sorted(XFAIL_DIR.glob("*"))
    assert len(files) >= 9  # keras-hub, litgpt, mlx, mlx-lm, onnx-reference, onnxruntime(-contrib), penzai, ...
    strays = [f.name for f in files if f.suffix != ".txt" or f.stem not in BUILTIN_BACKENDS]
    assert not strays, f"xfail files not named <backend name>.txt: {strays}"
    for f in files:
        assert xfail_path(f.stem) == f
        load_xfail(f)  # each parses (every entry has a pattern and a reason)


def test_xfail_path_takes_the_registered_name_only():
    assert xfail_path("mlx-lm").is_file() and xfail_path("keras-hub").is_file()
    assert not xfail_path("numpy").exists()  # a backend without known failures has no file
    for wrong in ("mlx_lm", "keras_hub", "../names"):  # no other spelling tried
        with pytest.raises(ValueError, match=rf"backend='{wrong}': not a built-in backend; known: numpy, "):
            xfail_path(wrong)


def test_every_built_in_backend_reports_under_its_registered_name():
    """A backend's ``name`` (the report key, docs/backends.md's row) is the name it is selected by."""
    from conformance.backends.resolve import resolve_backend

    wrong = {}
    for registered in BUILTIN_BACKENDS:
        name = getattr(resolve_backend(registered), "name", None)
        if name != registered:
            wrong[registered] = name
    assert not wrong, wrong
