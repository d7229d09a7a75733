"""Build hook: ship the published golden set (``golden/`` at the repository root) inside the wheel.

Everything else is configured in pyproject.toml. ``golden/`` lives outside the packages (it is the
published artefact, verified in the checkout by ``roperef golden verify``); ``build_py`` copies its
files (``manifest.json``, ``README.md``, the ``.npz`` cases) into ``golden_set/`` of the ``conformance`` package of the
build, where :func:`conformance.golden.store.default_golden_dir` finds it in an installed (non-editable)
package. An editable install reads ``golden/`` of the checkout directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
GOLDEN = ROOT / "golden"
SHIPPED = ("manifest.json", "README.md")


class BuildWithGolden(build_py):
    """``build_py`` plus the golden set copied to ``golden_set`` of the ``conformance`` package in ``build_lib``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        if not (GOLDEN / "manifest.json").is_file():
            raise FileNotFoundError(f"{GOLDEN / 'manifest.json'}: missing; the wheel must carry the published golden set")
        dest = Path(self.build_lib) / "conformance" / "golden_set"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        files = [GOLDEN / n for n in SHIPPED] + sorted(GOLDEN.glob("*.npz"))
        for f in files:
            shutil.copyfile(f, dest / f.name)


setup(cmdclass={"build_py": BuildWithGolden})
