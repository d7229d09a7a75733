"""Imports flow one way, and modules talk through public names (docs/design.md, "Layout").

Checked on the source with ``ast`` (nothing is imported):

- no import cycle among roperef and conformance modules, function-local imports included;
- the packages are layers in the order of ``LAYERS`` (docs/design.md's package tree): a module
  imports only modules of its own layer or of a layer below it, and every package has its place;
- roperef never imports conformance; no module imports a CLI module (``conformance.cli*``)
  except another CLI module;
- no ``module._private`` across modules: neither ``from m import _name`` nor ``m._name`` where
  ``m`` is a roperef or conformance module other than the one being read (roperef, conformance,
  tests, scripts, benchmarks);
- a function-local import is a lazy import of a heavy or optional library, of a module that
  imports one when it is loaded, or of an adapter; or it sits in a module that must stay cheap
  to import (the pytest plugin). Never a cycle breaker (the first test sees through it), and
  the module says why (its docstring, or a comment on the import or the line above).
"""

from __future__ import annotations

import ast
from pathlib import Path

from conformance.backends.names import BUILTIN_BACKENDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("roperef", "conformance")

#: third-party libraries that are optional or slow to import: imported inside the functions that need them
LAZY_LIBRARIES = frozenset({
    "numba", "mpmath", "matplotlib", "ml_dtypes", "torch", "jax", "mlx", "mlx_lm", "triton", "transformers",
    "onnx", "onnxruntime", "keras", "keras_hub", "penzai", "flash_attn", "liger_kernel", "litgpt",
    "rotary_embedding_torch", "torchtune", "transformer_engine", "vllm", "ggml", "openvino",
})
#: our modules that import a heavy library when they are loaded (Numba kernels: compiled on first call)
HEAVY_MODULES = frozenset({"roperef.fast.kernels", "roperef.fast.serial", "conformance.long_context.kernel"})
#: the adapters (imported only when a backend is selected)
ADAPTERS = frozenset(target.split(":")[0] for target in BUILTIN_BACKENDS.values())
#: the layers of the tree, bottom to top (docs/design.md, "Layout"): package (or module) prefixes per layer.
#: ``roperef`` and ``conformance`` alone stand for their top-level modules (the leaves and the maths).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("roperef",),                      # the maths: spec, exact frequencies, sincos, positions, layout, reference
    ("roperef.fast",),                 # the Numba twin
    ("roperef.hf",),                   # Hugging Face configs -> specs
    ("conformance",),                  # leaves: vocabulary, selection, usage errors, exit codes, interrupts
    ("conformance.cases",),            # the case record, the catalogue, named positions, user cases
    ("conformance.golden",),           # the hash-locked set, audit, atomic writes, which cases a run judges
    ("conformance.error_model",),      # tolerance profiles, conditioning, expected values
    ("conformance.bugs",),             # the bug catalogue
    ("conformance.backends",),         # the protocol and the adapters
    ("conformance.calls",),            # declarations, guarded stage calls, worker processes
    ("conformance.generated",),        # cases generated for a backend's interface
    ("conformance.diagnose",),         # what a FAIL says beyond its numbers
    ("conformance.judge",),            # runner, xfail, verdicts, coverage
    ("conformance.explore", "conformance.long_context", "conformance.context"),  # run modes beyond the fixed cases
    ("conformance.report",),           # console, JSON, JUnit, Markdown, plots
    ("conformance.hf",),               # transformers' own rotary modules, the preset corpus
    ("conformance.cli", "conformance.assertions", "conformance.pytest_plugin"),  # entry points
)


def _layer(mod: str) -> int:
    """The index in ``LAYERS`` of the longest prefix naming ``mod``'s package or module."""
    best, rank = "", -1
    for k, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            top_level_only = prefix in PACKAGES
            hit = (mod == prefix or mod.count(".") == 1 and mod.startswith(prefix + ".")) if top_level_only \
                else (mod == prefix or mod.startswith(prefix + "."))
            if hit and len(prefix) > len(best):
                best, rank = prefix, k
    return rank


#: modules that must stay cheap to import, so that they import everything lazily
CHEAP_TO_IMPORT = {"conformance.pytest_plugin": "loaded by every pytest session (entry point); imports no NumPy"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _files(folders: tuple[str, ...] = PACKAGES) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


NAMES = {_module_name(p) for p in _files()}


def _stem(node: ast.ImportFrom, mod: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved against ``mod``)."""
    if not node.level:
        return node.module or ""
    base = (mod if is_package else mod.rsplit(".", 1)[0]).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _internal(name: str) -> str | None:
    """The roperef or conformance module ``name`` lies in (``pkg.mod.attr`` -> ``pkg.mod``), or None."""
    while name and name not in NAMES:
        name = name.rsplit(".", 1)[0] if "." in name else ""
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, mod: str, is_package: bool) -> list[str]:
    """Every module an import statement may load (``from pkg import sub`` loads ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    stem = _stem(node, mod, is_package)
    return [stem] + [f"{stem}.{a.name}" for a in node.names]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _files():
        mod = _module_name(path)
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(node, mod, path.name == "__init__.py"):
                    found = _internal(t)
                    if found and found != mod and not mod.startswith(found + ".") and found != pkg:
                        deps.add(found)
        graph[mod] = deps
    return graph


def test_no_import_cycles_not_even_through_function_local_imports():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, cycles[:5]


def test_roperef_never_imports_conformance_and_only_cli_modules_import_cli_modules():
    graph = _graph()
    assert not [m for m, deps in graph.items() if m.startswith("roperef") and any(d.startswith("conformance") for d in deps)]
    cli = {m for m in graph if m.startswith("conformance.cli")}
    bad = {(m, x) for m, deps in graph.items() if m not in cli for x in deps & cli}
    assert not bad, bad


def test_packages_are_layers_and_import_only_downwards():
    graph = _graph()
    unplaced = sorted(m for m in graph if _layer(m) < 0)
    assert not unplaced, f"modules whose package has no place in LAYERS: {unplaced}"
    packages = {_module_name(p) for p in _files() if p.name == "__init__.py"}
    for pkg in packages - set(PACKAGES):
        placed = any(pkg == prefix or pkg.startswith(prefix + ".") for layer in LAYERS for prefix in layer if prefix not in PACKAGES)
        assert placed, f"package {pkg} has no place in LAYERS"
    upward = sorted(f"{m} ({LAYERS[_layer(m)][0]}) imports {d} ({LAYERS[_layer(d)][0]})"
                    for m, deps in graph.items() for d in deps if _layer(d) > _layer(m))
    assert not upward, upward


def _private_uses(path: Path, mod: str | None = None) -> list[str]:
    """``from m import _x`` and ``m._x`` in ``path`` (module ``mod``, by default its name in the repository)
    where ``m`` is another roperef or conformance module."""
    mod = mod or _module_name(path)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            stem = _stem(node, mod, is_package)
            for a in node.names:
                if f"{stem}.{a.name}" in NAMES:
                    aliases[a.asname or a.name] = f"{stem}.{a.name}"
                elif stem in NAMES and stem != mod and a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{shown}:{node.lineno}: from {stem} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in NAMES:
                    head = a.name.split(".")[0]
                    aliases[a.asname or head] = a.name if a.asname else head
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            parts, value = [], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and aliases.get(value.id):
                target = ".".join([aliases[value.id], *reversed(parts)])
                if target in NAMES and target != mod:
                    found.append(f"{shown}:{node.lineno}: {target}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules():
    found = [use for p in _files(PACKAGES + ("tests", "scripts", "benchmarks")) for use in _private_uses(p)]
    assert not found, found


def _local_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(set(out), key=lambda n: n.lineno)


def _commented(lines: list[str], lineno: int) -> bool:
    """A comment on the import, on a line just above it, or on an import of the same group above it."""
    k = lineno - 1
    while k >= 0:
        text = lines[k].strip()
        if "#" in text:
            return True
        if k < lineno - 1 and not text.startswith(("import ", "from ")):
            return False
        k -= 1
    return False


def test_function_local_imports_are_lazy_imports_of_heavy_libraries_or_adapters_and_say_so():
    wrong, silent = [], []
    for path in _files():
        mod = _module_name(path)
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        lines = source.splitlines()
        doc = (ast.get_docstring(tree) or "").lower()
        for node in _local_imports(tree):
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for target in _targets(node, mod, path.name == "__init__.py")[:1]:
                internal = _internal(target)
                ok = (mod in CHEAP_TO_IMPORT or target.split(".")[0] in LAZY_LIBRARIES
                      or internal in HEAVY_MODULES or internal in ADAPTERS)
                if not ok:
                    wrong.append(f"{where}: {target}")
            said = any(w in doc for w in ("lazy", "lazily", "on first use", "imported inside", "imported when")) or _commented(lines, node.lineno)
            if not said:
                silent.append(where)
    assert not wrong, f"function-local imports that should be at the top of their module: {wrong}"
    assert not silent, f"lazy imports whose module does not say why (docstring or comment): {silent}"


def test_the_checks_see_what_they_look_for(tmp_path):
    """Each check finds what it looks for (a check that finds nothing proves nothing)."""
    graph = _graph()
    assert "conformance.cases.catalog" in graph["conformance.cases.materialize"]  # a top-level import
    assert "conformance.long_context.kernel" in graph["conformance.long_context.stream"]  # a function-local one
    assert "conformance.golden.case_source" in graph["conformance.cli.check"]  # a relative import
    assert _layer("conformance.vocabulary") < _layer("conformance.cases.case") < _layer("conformance.judge.runner")
    assert _layer("conformance.cli.check") == _layer("conformance.assertions") > _layer("conformance.report.formats")
    assert _layer("roperef.fast") == _layer("roperef.fast.kernels") > _layer("roperef.reference")
    probe = tmp_path / "probe.py"
    probe.write_text("from conformance.judge.runner import _Hidden\nimport conformance.report.formats as rep\nrep._hidden_line(1)\n"
                     "from conformance import golden\ngolden._gone()\n")
    assert len(_private_uses(probe, "tests.probe")) == 3
