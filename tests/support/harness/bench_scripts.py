"""Load a script of ``benchmarks/`` as a module (the benchmarks are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as module ``name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"benchmarks/{name}.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_quick(name: str, tmp_path: Path) -> dict[str, Any]:
    """``benchmarks/<name>.py --quick --json FILE`` run in process (exit 0 asserted); the JSON report."""
    out = tmp_path / "bench.json"
    assert load_benchmark(name).main(["--quick", "--json", str(out)]) == 0
    report: dict[str, Any] = json.loads(out.read_text())
    return report
