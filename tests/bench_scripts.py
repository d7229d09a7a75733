"""Load a script of ``benchmarks/`` as a module (the benchmarks are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as module ``name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"benchmarks/{name}.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
