"""``--backend path/to/file.py:Name`` and ``--backend module:Name`` from the current directory,
without PYTHONPATH; every failure names the file (or module) and the attribute."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance.backends.resolve import BackendError, resolve_backend

ROOT = Path(__file__).resolve().parents[3]

MY_ROPE = textwrap.dedent('''
    import numpy as np
    from conformance.backends.base import BaseBackend, Capabilities
    from helper_sibling import SCALE   # a sibling file: the file's folder must be importable


    class MyRope(BaseBackend):
        name = "my-rope"
        capabilities = Capabilities(stages=frozenset({"forward"}), dtypes=frozenset({"float32"}),
                                    angle_dtype="float32", table_dtype="float32")

        def forward(self, x, positions, spec, cu_seqlens=None):
            from roperef import reference
            return (reference.forward(x, positions, spec) * SCALE).astype(x.dtype)


    def make_backend():
        return MyRope()


    INSTANCE = MyRope()
''')


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "my_rope.py").write_text(MY_ROPE)
    (d / "helper_sibling.py").write_text("SCALE = 1.0\n")
    monkeypatch.chdir(tmp_path)
    saved = list(sys.path)
    yield d
    sys.path[:] = saved
    for name in ("my_rope", "helper_sibling"):
        sys.modules.pop(name, None)


def test_file_path_selector_with_class_factory_and_instance(user_dir):
    for attr in ("MyRope", "make_backend", "INSTANCE"):
        b = resolve_backend(f"kernels/my_rope.py:{attr}")
        assert b.name == "my-rope" and b.capabilities.angle_dtype == "float32"
    b = resolve_backend(f"{user_dir}/my_rope.py:MyRope")  # absolute path
    assert b.name == "my-rope"


def test_module_in_the_current_directory_imports_without_pythonpath(user_dir, monkeypatch):
    monkeypatch.chdir(user_dir)
    assert str(user_dir) not in sys.path
    b = resolve_backend("my_rope:MyRope")
    assert b.name == "my-rope"


def test_missing_attribute_names_the_file_and_lists_candidates(user_dir):
    with pytest.raises(BackendError) as exc:
        resolve_backend("kernels/my_rope.py:MyRpoe")
    msg = str(exc.value)
    assert "file kernels/my_rope.py has no attribute 'MyRpoe'" in msg
    assert "did you mean 'MyRope'?" in msg
    assert "MyRope (class)" in msg and "make_backend (function)" in msg and "INSTANCE (MyRope instance)" in msg
    assert "BaseBackend" not in msg  # imported names are not candidates


def test_missing_file_and_missing_module_are_named(user_dir):
    with pytest.raises(BackendError, match=r"file kernels/nope\.py not found \(current directory "):
        resolve_backend("kernels/nope.py:MyRope")
    with pytest.raises(BackendError, match=r"cannot import module 'nope_mod' .*the current directory .* has no nope_mod\.py either"):
        resolve_backend("nope_mod:MyRope")


def test_file_without_name_lists_candidates(user_dir):
    with pytest.raises(BackendError, match=r"name the backend in the file as kernels/my_rope\.py:Name; candidates in it: .*MyRope \(class\)"):
        resolve_backend("kernels/my_rope.py")


def test_a_file_raising_at_import_is_reported(user_dir):
    (user_dir / "broken.py").write_text("import this_module_does_not_exist_xyz\n")
    with pytest.raises(BackendError,
                       match=r"executing kernels/broken\.py raised ModuleNotFoundError: No module named 'this_module_does_not_exist_xyz'"):
        resolve_backend("kernels/broken.py:X")
    (user_dir / "broken2.py").write_text("import this_module_does_not_exist_xyz\n")
    import os

    os.chdir(user_dir)
    with pytest.raises(BackendError, match=r"importing module 'broken2' failed: .*this_module_does_not_exist_xyz.*a module it imports is missing"):
        resolve_backend("broken2:X")


def test_a_file_named_like_an_installed_module_does_not_shadow_it(user_dir):
    (user_dir / "json.py").write_text(MY_ROPE)
    b = resolve_backend("kernels/json.py:MyRope")
    import json

    assert b.name == "my-rope" and hasattr(json, "dumps")  # the stdlib json is still the stdlib one


def test_cli_judges_a_file_backend_without_pythonpath(user_dir, tmp_path):
    """The real command line in a fresh process whose sys.path holds only the project: ``-P`` keeps
    Python from prepending the current directory (as the ``roperef`` console script does not)."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def check(where, selector):
        cmd = [sys.executable, "-P", "-m", "conformance.cli", "check", "--backend", selector,
               "--filter", "forward/default/half/float32/*"]
        return subprocess.run(cmd, cwd=where, capture_output=True, text=True, env=env)

    for where, selector in ((tmp_path, "kernels/my_rope.py:MyRope"), (user_dir, "my_rope:MyRope")):
        done = check(where, selector)
        assert done.returncode == 0, done.stdout + done.stderr
        last = done.stdout.strip().splitlines()[-1]
        assert "backend my-rope" in done.stdout and last.startswith("OK:") and " PASS" in last, done.stdout
    bad = check(tmp_path, "kernels/my_rope.py:Nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "kernels/my_rope.py has no attribute 'Nope'" in bad.stderr
