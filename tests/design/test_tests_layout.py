"""The tests mirror the packages: each test folder is a package of roperef or conformance, or a named group.

Layout (docs/design.md, "The tests"): ``tests/roperef/`` (the maths), ``tests/roperef/fast/``,
``tests/roperef/hf/``, ``tests/conformance/<layer>/`` for each layer package of conformance, and five
groups that test no one package: ``routes`` (the same cases through every route), ``meta`` (the
judge judged with planted bugs), ``docs`` (pages as tests), ``benchmarks`` (their quick modes) and
``design`` (this file, the import graph). Helpers live in ``tests/support/<concern>/`` and hold no
tests; data in ``tests/data/``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
GROUPS = {"routes", "meta", "docs", "benchmarks", "design"}
SUPPORT_CONCERNS = {"engines", "faults", "strategies", "harness"}


def _wrong_folders(tests: Path) -> list[str]:
    """Folders holding test modules that are neither a package of roperef or conformance nor a named group."""
    folders = {p.parent.relative_to(tests) for p in tests.rglob("test_*.py")}
    wrong = []
    for rel in sorted(folders):
        if rel.parts and rel.parts[0] in ("support", "data"):
            continue
        if len(rel.parts) == 1 and rel.parts[0] in GROUPS:
            continue
        if not rel.parts or rel.parts[0] not in ("roperef", "conformance") or not (ROOT / rel / "__init__.py").is_file():
            wrong.append(str(rel) if rel.parts else "tests/ itself")
    return wrong


def test_every_test_folder_is_a_package_or_a_named_group():
    wrong = _wrong_folders(TESTS)
    assert not wrong, f"test folders that match no package of roperef or conformance nor a named group: {wrong}"


def test_no_test_module_lies_flat_and_helpers_hold_no_tests():
    flat = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py")
    assert not flat, f"modules directly in tests/ (move each to the folder of the package it tests): {flat}"
    support = TESTS / "support"
    concerns = {p.name for p in support.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert concerns == SUPPORT_CONCERNS
    tests_in_support = sorted(str(p.relative_to(TESTS)) for p in support.rglob("test_*.py"))
    assert not tests_in_support, f"test modules among the helpers: {tests_in_support}"


def test_the_check_sees_misplaced_folders(tmp_path):
    """A folder named after no package, and a flat test module, are caught (the check is not vacuous)."""
    fake = tmp_path / "tests"
    for rel in ("conformance" + "/nowhere", "roperef/fast", "meta", "support/engines"):
        (fake / rel).mkdir(parents=True)
        (fake / rel / "test_x.py").write_text("")
    (fake / "test_flat.py").write_text("")
    assert sorted(_wrong_folders(fake)) == ["conformance" + "/nowhere", "tests/ itself"]
