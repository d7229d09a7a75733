"""Imports flow one way: no new cycles in roperef or conformance (function-local imports included),
roperef never imports conformance, and nothing below the CLI imports a CLI module (the modules
of issues 11/13 -- conformance/bugs, generated*, coverage, verdict, diagnose, ... -- add none)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: cycles already in main at 4b0fea8 (reported to the lead; their owners remove them): a NEW cycle fails
KNOWN_CYCLES = {
    frozenset({"conformance.cases", "conformance.cases_catalog"}),
    frozenset({"conformance.runner", "conformance.isolate"}),
    frozenset({"conformance.cli_check", "conformance.exchange"}),
}
KNOWN_CLI_IMPORTS = {("conformance.exchange", "conformance.cli_check")}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    files = [p for pkg in ("roperef", "conformance") for p in (ROOT / pkg).rglob("*.py")]
    names = {_module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        mod = _module_name(path)
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                while t and t not in names:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != mod and not mod.startswith(t + ".") and t != pkg:
                    deps.add(t)
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
    new = [c for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert not new, new[:5]


def test_roperef_never_imports_conformance_and_only_cli_modules_import_cli_modules():
    graph = _graph()
    assert not [m for m, deps in graph.items() if m.startswith("roperef") and any(d.startswith("conformance") for d in deps)]
    cli = {m for m in graph if m.startswith("conformance.cli")}
    below = {m: deps & cli for m, deps in graph.items() if m not in cli and m != "conformance.pytest_plugin" and m != "conformance.assertions"}
    bad = {(m, x) for m, d in below.items() for x in d} - KNOWN_CLI_IMPORTS
    assert not bad, bad
