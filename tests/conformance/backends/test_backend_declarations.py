"""Declarations that cannot silently go wrong: class-level name/capabilities on BaseBackend
subclasses, the case_reason hook, and the report notes for backends that declare nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from conformance.backends.base import BaseBackend, Capabilities, declaration_notes
from conformance.backends.resolve import BackendError, resolve_backend
from conformance.judge.runner import RunOptions, run_cases
from conformance.report.formats import console, to_json, write_markdown
from judge_cases import forward_case
from roperef import reference
from roperef.spec import RopeSpec

FP32_CAPS = Capabilities(stages=frozenset({"forward"}), dtypes=frozenset({"float32"}), angle_dtype="float32")


class ClassLevel(BaseBackend):
    """Plain class attributes, no @dataclass: what a newcomer writes first."""

    name = "class-level"
    capabilities = FP32_CAPS

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec).astype(x.dtype)


@dataclass
class DataclassLevel(BaseBackend):
    name: str = "dc-level"
    capabilities: Capabilities = FP32_CAPS  # frozen, hashable: a valid dataclass default

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec).astype(x.dtype)


class Undeclared(BaseBackend):
    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec).astype(x.dtype)


class Plain:
    """Not a BaseBackend at all: stages only."""

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec).astype(x.dtype)


class Empty(BaseBackend):
    capabilities = Capabilities(stages=frozenset())

    def forward(self, x, positions, spec, cu_seqlens=None):
        return x


class DeclaresMore(BaseBackend):
    capabilities = Capabilities(stages=frozenset({"forward", "backward"}))

    def forward(self, x, positions, spec, cu_seqlens=None):
        return reference.forward(x, positions, spec)


class WithCaseReason(ClassLevel):
    def case_reason(self, case):
        return "positions above 4000 are not supported" if case.positions.max() > 4000 else None


def test_class_level_name_and_capabilities_survive_construction():
    for cls in (ClassLevel, DataclassLevel):
        b = cls()
        assert b.name in ("class-level", "dc-level")
        assert b.capabilities is FP32_CAPS
        assert declaration_notes(b) == ()
    assert ClassLevel(name="renamed").name == "renamed"  # constructor arguments still win
    other = Capabilities(stages=frozenset({"forward"}))
    assert ClassLevel(capabilities=other).capabilities is other


def test_class_level_capabilities_drive_supports():
    b = ClassLevel()
    assert b.supports(forward_case(RopeSpec(64), [[1, 2]], "float32")) is True
    assert b.supports(forward_case(RopeSpec(64), [[1, 2]], "float16")) == "dtype float16 not supported"


def test_undeclared_subclass_is_assumed_float64_and_named_after_its_class():
    b = Undeclared()
    assert b.name == "Undeclared"
    assert b.capabilities.stages == frozenset({"forward"}) and b.capabilities.angle_dtype == "float64"
    (note,) = declaration_notes(b)
    assert note.startswith("no capabilities declared: judged as a float64 engine with float64 tables")


def test_plain_object_is_announced_with_the_assumption():
    b = resolve_backend(Plain())
    (note,) = declaration_notes(b)
    assert "no capabilities declared: judged as a float64 engine with float64 tables" in note
    assert "stages forward" in note


def test_plain_object_with_dtype_attributes_is_announced_with_those():
    obj = Plain()
    obj.angle_dtype, obj.table_dtype = "float32", "input"
    (note,) = declaration_notes(resolve_backend(obj))
    assert "judged as a float32 engine with input tables" in note


def test_empty_and_overclaiming_declarations_are_announced():
    assert declaration_notes(Empty()) == ("declared capabilities are empty (no stage): every case will be NOT_SUPPORTED",)
    (note,) = declaration_notes(DeclaresMore())
    assert "backward" in note and "no method" in note


def test_capabilities_of_the_wrong_type_are_an_error():
    with pytest.raises(TypeError, match="capabilities=.*must be a conformance.backends.base.Capabilities"):
        ClassLevel(capabilities={"stages": ["forward"]})

    class Bad:
        capabilities = {"stages": ["forward"]}

        def forward(self, x, positions, spec, cu_seqlens=None):
            return x

    with pytest.raises(BackendError, match="is not a conformance.backends.base.Capabilities"):
        resolve_backend(Bad())


def test_case_reason_hook_gives_not_supported():
    b = WithCaseReason()
    far = forward_case(RopeSpec(64), [[4093, 4094]], "float32")
    near = forward_case(RopeSpec(64), [[1, 2]], "float32")
    assert b.supports(far) == "positions above 4000 are not supported"
    assert b.supports(near) is True
    report = run_cases(b, [far, near], RunOptions(diagnose=False))
    assert [r.status for r in report.results] == ["NOT_SUPPORTED", "PASS"]


def _float32_engine_report(backend):
    """An honest float32 engine judged with whatever the declaration says."""
    from conformance.backends.emulated import Float32Emulation

    emu = Float32Emulation()
    backend.forward = lambda x, positions, spec, cu_seqlens=None: emu.forward(x, positions, spec)
    case = forward_case(RopeSpec(64), [[4093, 4094, 4095, 4096, 4097]], "float32", case_id="forward/default/half/float32/t")
    return run_cases(resolve_backend(backend), [case], RunOptions(diagnose=False))


def test_notes_reach_console_json_and_markdown(tmp_path):
    report = _float32_engine_report(Plain())
    assert report.results[0].status == "FAIL"  # judged as float64: the assumption matters
    import io

    buf = io.StringIO()
    console(report, buf)
    text = buf.getvalue()
    header = text.split("\n\n")[0]
    assert "note: no capabilities declared: judged as a float64 engine with float64 tables" in header
    assert text.count("note: no capabilities declared") == 2  # repeated above the summary of a failing run
    doc = to_json(report)
    assert doc["backend"]["notes"] and doc["backend"]["notes"][0].startswith("no capabilities declared")
    json.dumps(doc)
    write_markdown(report, tmp_path / "r.md")
    assert "**Note:** no capabilities declared" in (tmp_path / "r.md").read_text()


def test_declared_float32_engine_passes_without_notes():
    obj = Plain()
    obj.capabilities = Capabilities(stages=frozenset({"forward"}), angle_dtype="float32", table_dtype="float32")
    report = _float32_engine_report(obj)
    assert report.results[0].status == "PASS" and report.notes == []


def test_builtin_backends_declare_everything():
    from conformance.backends.names import BUILTIN_BACKENDS

    for name in BUILTIN_BACKENDS:
        b = resolve_backend(name)
        assert declaration_notes(b) == (), name
        assert b.name and b.name != type(b).__name__, name
