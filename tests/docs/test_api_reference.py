"""The API reference pages list exactly the public names of the code (docs/api.md, docs/report-schema.md).

A table preceded by ``<!-- api-table: TARGET -->`` lists, in its first column (backticked names,
several per cell allowed), every public name of ``TARGET`` and nothing else:

- a dotted Python name (``roperef.spec.RopeSpec``): its dataclass fields, properties and methods
  not starting with ``_`` (inherited ones from roperef and conformance classes included);
- ``report``, ``report.results[]``, ``report.coverage``: the keys of a real ``roperef check
  --json`` document, of one of its results, of its coverage section; a dotted row
  (``metrics.worst``) must be a key of that object in a failing result.

The signature listings of the same pages are checked by the docs harness (test_docs_examples.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.golden.case_source import load_cases
from conformance.judge.check_sources import attach_sections
from conformance.judge.runner import RunOptions, run_cases
from conformance.report.formats import to_json
from wrong_backends import Buggy

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!--\s*api-table:\s*(\S+)\s*-->\s*$")
#: the objects a backend author uses: each must have its table on docs/api.md
REQUIRED = ("roperef.spec.RopeSpec", "roperef.spec.Scaling", "roperef.layout.PairMap",
            "conformance.backends.base.Capabilities", "conformance.backends.base.BaseBackend",
            "conformance.cases.case.GoldenCase")


def api_tables(page: Path) -> dict[str, set[str]]:
    """``{target: names in the first column}`` of every marked table of ``page``."""
    lines = page.read_text(encoding="utf-8").split("\n")
    tables: dict[str, set[str]] = {}
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        rows = []
        for row in lines[i + 1:]:
            if not row.startswith("|"):
                break
            rows.append(row)
        assert len(rows) > 2, f"{page.name}: api-table {m.group(1)} is not followed by a table"
        tables[m.group(1)] = {name for row in rows[2:] for name in re.findall(r"`([^`]+)`", row.split("|")[1])}
    return tables


def public_names(cls: type) -> set[str]:
    """Dataclass fields, properties and methods of ``cls`` not starting with ``_`` (the roperef and conformance classes of its MRO)."""
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("roperef", "conformance"):
            names |= {n for n in vars(klass) if not n.startswith("_")}
    return names


def _object(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_backend_authors_names_each_have_a_table():
    assert set(REQUIRED) <= set(api_tables(ROOT / "docs" / "api.md"))


@pytest.mark.parametrize("target", sorted(api_tables(ROOT / "docs" / "api.md")))
def test_api_table_lists_exactly_the_public_names(target):
    documented = api_tables(ROOT / "docs" / "api.md")[target]
    actual = public_names(_object(target))
    assert not actual - documented, f"docs/api.md, {target}: undocumented public names {sorted(actual - documented)}"
    assert not documented - actual, f"docs/api.md, {target}: documented names not in the code {sorted(documented - actual)}"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    """A real JSON report: a float32 engine with one bug on a few smoke cases (FAILs with diagnoses, and PASSes)."""
    cases = load_cases(None, "smoke", ["forward/default/half/float32/*", "forward/default/adjacent/float32/*"], ()).cases[:4]
    backend = Buggy(bug="pairing-swapped")
    run = run_cases(backend, cases, RunOptions())
    attach_sections(run, cases, backend, None)
    doc = to_json(run, golden={"tier": "smoke"})
    assert doc["summary"]["counts"]["FAIL"] > 0 and doc["coverage"] is not None, doc["summary"]
    return doc


def test_report_schema_lists_exactly_the_report_keys(report):
    tables = api_tables(ROOT / "docs" / "report-schema.md")
    failing = next(r for r in report["results"] if r["status"] == "FAIL")
    for target, obj in (("report", report), ("report.results[]", failing), ("report.coverage", report["coverage"])):
        documented = tables[target]
        top = {n for n in documented if "." not in n}
        assert top == set(obj), (f"docs/report-schema.md, {target}: undocumented {sorted(set(obj) - top)}, "
                                 f"not written {sorted(top - set(obj))}")
        for dotted in documented - top:
            parent, key = dotted.split(".", 1)
            assert isinstance(obj[parent], dict) and key in obj[parent], f"docs/report-schema.md, {target}: {dotted} is not in a failing result"
