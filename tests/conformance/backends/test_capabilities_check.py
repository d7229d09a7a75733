"""Capabilities checked at load (issue 33, item 4): every field against its vocabulary, engine dtype
spellings normalised, a declaration the profile ignores said in the header, and ``notes`` shown in
the console header, Markdown, JUnit and the pytest header."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import ml_dtypes
import numpy as np
import pytest

from conformance.backends.base import BaseBackend, Capabilities
from conformance.backends.emulated import Float32Emulation
from conformance.backends.resolve import resolve_backend
from conformance.error_model.tolerance import get_profile
from conformance.judge.runner import RunOptions, run_cases
from conformance.report.formats import console, write_junit, write_markdown
from conformance.report.header import header_lines
from judge_cases import forward_case
from roperef.spec import RopeSpec

F = frozenset({"forward"})


@pytest.mark.parametrize("spelling, name", [
    ("bf16", "bfloat16"), ("BF16", "bfloat16"), ("fp16", "float16"), ("half", "float16"), ("fp32", "float32"),
    ("torch.bfloat16", "bfloat16"), ("torch.float", "float32"), ("torch.half", "float16"), ("np.float32", "float32"),
    ("jnp.bfloat16", "bfloat16"), ("mlx.core.float16", "float16"), (np.float32, "float32"), (np.dtype("float16"), "float16"),
    (ml_dtypes.bfloat16, "bfloat16"), (float, "float64"), ("double", "float64"),
])
def test_engine_spellings_become_the_judges_names(spelling, name):
    caps = Capabilities(stages=F, angle_dtype=spelling, table_dtype=spelling, dtypes=[spelling, "float32"])
    assert caps.angle_dtype == name and caps.table_dtype == name
    assert caps.dtypes == frozenset({name, "float32"})


def test_torch_dtype_objects_are_read():
    torch = pytest.importorskip("torch")
    caps = Capabilities(stages=F, angle_dtype=torch.float32, table_dtype=torch.bfloat16, dtypes={torch.float16})
    assert (caps.angle_dtype, caps.table_dtype, caps.dtypes) == ("float32", "bfloat16", frozenset({"float16"}))


@pytest.mark.parametrize("kw, message", [
    ({"angle_dtype": "banana"}, "Capabilities.angle_dtype='banana': expected one of float64, float32, float16, bfloat16"),
    ({"table_dtype": "float8"}, "Capabilities.table_dtype='float8': expected input or one of float64"),
    ({"angle_dtype": "input"}, "Capabilities.angle_dtype='input': expected one of"),
    ({"table_dtype": "float"}, "ambiguous (torch.float is float32, NumPy's float is float64)"),
    ({"dtypes": {"float32", "int8"}}, "Capabilities.dtypes='int8'"),
    ({"pairings": {"halves"}}, "Capabilities.pairings='halves': unknown word; expected any of half, adjacent"),
    ({"scaling_types": {"rope"}}, "Capabilities.scaling_types='rope'"),
    ({"features": {"partial", "sliding"}}, "Capabilities.features='sliding'"),
    ({"layouts": {"nhwc"}}, "Capabilities.layouts='nhwc'"),
    ({"call_forms": {"inplace_qk"}}, "Capabilities.call_forms='inplace_qk'"),
    ({"qk_shapes": {"gqa", "mla"}}, "Capabilities.qk_shapes='mla'"),
    ({"pairings": "half"}, "Capabilities.pairings='half': must be a set of words"),
    ({"applies_attention_factor": 1}, "Capabilities.applies_attention_factor=1: must be True or False"),
    ({"shared_tables": "yes"}, "Capabilities.shared_tables='yes'"),
    ({"max_position": -1}, "Capabilities.max_position=-1: must be None"),
    ({"max_position": 2.5}, "Capabilities.max_position=2.5"),
    ({"notes": None}, "Capabilities.notes=None: must be a string"),
])
def test_a_word_outside_the_vocabulary_is_refused_naming_the_field(kw, message):
    with pytest.raises(ValueError) as info:
        Capabilities(stages=F, **kw)
    assert message in str(info.value)


def test_stages_are_checked_and_numpy_ints_accepted():
    with pytest.raises(ValueError, match="Capabilities.stages='rotate'"):
        Capabilities(stages=frozenset({"rotate"}))
    assert Capabilities(stages=F, max_position=np.int64(4095)).max_position == 4095


class _Bf16Tables(BaseBackend):
    """A correct engine with float32 angles and bfloat16 tables, declared in the engine's spelling."""

    name = "bf16-tables"
    capabilities = Capabilities(stages=F, angle_dtype="fp32", table_dtype="bf16", notes="tables cast to bf16")

    def forward(self, x, positions, spec, cu_seqlens=None):
        emu = Float32Emulation(tables="input")
        return emu.forward(x.astype(ml_dtypes.bfloat16), positions, spec).astype(x.dtype)


def _report(backend, **options):
    case = forward_case(RopeSpec(64), [[3, 17, 255, 1000, 4093]], "bfloat16", case_id="forward/default/half/bfloat16/t")
    return run_cases(resolve_backend(backend), [case], RunOptions(diagnose=False, **options))


def test_a_bf16_spelling_is_judged_not_an_internal_error():
    report = _report(_Bf16Tables())
    assert report.capabilities["table_dtype"] == "bfloat16"
    assert [r.status for r in report.results] == ["PASS"], report.results[0].message


def test_a_declaration_the_profile_ignores_is_said_and_notes_reach_every_report(tmp_path):
    b = _Bf16Tables()
    b.capabilities = Capabilities(stages=F, angle_dtype="bfloat16", table_dtype="bfloat16", notes="angles in bf16")
    report = _report(b)  # default profile for a non-float64 engine: fp32-angles
    assert report.profile["name"] == "fp32-angles"
    assert ("declared angle_dtype=bfloat16 is ignored by profile fp32-angles, which judges angles as float32; "
            "--profile backend judges the declared dtype") in report.notes
    assert not [n for n in _report(b, profile="backend").notes if "ignored by profile" in n]
    buf = io.StringIO()
    console(report, buf)
    header = buf.getvalue().split("\n\n")[0]
    assert "backend notes: angles in bf16" in header and "note: declared angle_dtype=bfloat16 is ignored" in header
    write_markdown(report, tmp_path / "r.md")
    assert "Backend notes: angles in bf16" in (tmp_path / "r.md").read_text()
    write_junit(report, tmp_path / "r.xml")
    props = {(p.get("name"), p.get("value")) for p in ET.parse(tmp_path / "r.xml").iter("property")}
    assert ("backend notes", "angles in bf16") in props
    assert any(k == "note" and "ignored by profile fp32-angles" in v for k, v in props)
    lines = header_lines(resolve_backend(b), None, get_profile("fp32-angles"), None)
    assert "roperef: backend notes: angles in bf16" in lines
