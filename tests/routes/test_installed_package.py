"""The installed package is the checkout: a wheel carries every data file the judge reads at run time
(presets, xfail lists, the published golden set), a non-editable install judges exactly the published
set (same set hash as ``roperef golden verify`` in the checkout), and ``python -m roperef`` /
``python -m conformance`` run the command.

The wheel is built from a copy of the checkout's build inputs (no ``build/`` left in the checkout) with
``pip wheel --no-deps --no-build-isolation`` (offline) and installed with ``pip install --no-deps --target``
(NumPy, Numba, ... come from the running environment). ~40 s on 2 loaded cores; CI runs it with the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HASH = re.compile(r"^set hash ([0-9a-f]{64}): ", re.M)


def _run(args: list[str], cwd: Path, path: Path | None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROPEREF_GOLDEN")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("roperef", "conformance", "golden"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    dist = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(src)], src, None)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("*.whl")
    target = tmp_path_factory.mktemp("site")
    inst = _run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)], dist, None)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    return target


def _checkout_files(folder: str, pattern: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob(pattern) if p.is_file()}


def test_the_wheel_carries_every_data_file(installed):
    have = {p.relative_to(installed).as_posix() for p in installed.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    for folder, pattern in (("conformance/presets", "*"), ("conformance/backends/xfail", "*")):
        want = _checkout_files(folder, pattern)
        assert want and want <= have, sorted(want - have)
    golden = {p.name for p in (ROOT / "golden").iterdir() if p.is_file()}
    shipped = {Path(p).name for p in have if Path(p).parent == Path("conformance", "golden_set")}
    assert golden and golden == shipped, sorted(golden ^ shipped)
    assert {"roperef/__main__.py", "conformance/__main__.py"} <= have


def test_the_installed_package_verifies_the_published_set_hash(installed, tmp_path):
    here = _run([sys.executable, "-m", "roperef", "golden", "verify"], tmp_path, ROOT)
    there = _run([sys.executable, "-m", "roperef", "golden", "verify"], tmp_path, installed)
    assert here.returncode == 0 and there.returncode == 0, here.stdout + here.stderr + there.stdout + there.stderr
    assert str(installed / "conformance" / "golden_set") in there.stdout, there.stdout  # the shipped copy, not the checkout's
    (h_here,), (h_there,) = HASH.findall(here.stdout), HASH.findall(there.stdout)
    assert h_here == h_there and "published" in there.stdout, (h_here, h_there)
    also = _run([sys.executable, "-m", "conformance", "golden", "verify"], tmp_path, installed)
    assert also.returncode == 0 and HASH.findall(also.stdout) == [h_here], also.stdout + also.stderr


def test_python_m_runs_the_command(tmp_path):
    for mod in ("roperef", "conformance"):
        r = _run([sys.executable, "-m", mod, "--help"], tmp_path, ROOT, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith("usage: roperef"), (mod, r.stdout, r.stderr)
