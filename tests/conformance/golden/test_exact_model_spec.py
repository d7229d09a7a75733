"""The exact model of the tests says what docs/spec.md says, formula by formula (conformance/golden/exact_model.py).

Each formula of the model carries the spec text it implements as its docstring: section 3's base
line (``BASE``), one bullet per scaling type of section 3, and section 4's 2-D vision bullet.
Whitespace aside, each must equal the page's text, and every bullet of section 3 must have its
formula (a scaling type the spec gains is a type the model must gain). Together with the
bit-for-bit tests of roperef against this model (tests/roperef/test_frequencies_exact.py), a change to the
contract's text that the reference does not follow fails a test, and so does the reverse.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.golden.exact_model import BASE, FORMULAS
from roperef.spec import SCALING_TYPES

SPEC = Path(__file__).resolve().parents[3] / "docs" / "spec.md"


def _normal(text: str) -> str:
    return " ".join(text.split())


def _section(text: str, number: int) -> list[str]:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {number}."))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return lines[start + 1 : end]


def _bullets(lines: list[str]) -> list[str]:
    """The top-level bullets (``- ...`` with their indented continuation and sub-bullets), text after ``- ``."""
    out: list[str] = []
    for line in lines:
        if line.startswith("- "):
            out.append(line[2:])
        elif out and line.startswith("  ") and line.strip():
            out[-1] += "\n" + line
        elif out and not line.strip():
            out.append("")  # a blank line ends the bullet
    return [b for b in out if b]


def spec_formulas() -> dict[str, str]:
    """``{key: text}``: ``base``, each section 3 bullet by its first backticked name, ``vision`` (section 4)."""
    text = SPEC.read_text(encoding="utf-8")
    sec3 = _section(text, 3)
    out = {"base": next(line for line in sec3 if line.startswith("Base:"))}
    for bullet in _bullets(sec3):
        m = re.match(r"`([a-z0-9_]+)`", bullet)
        assert m, f"docs/spec.md section 3: a bullet that names no type: {bullet[:60]!r}"
        out[m.group(1)] = bullet
    out["vision"] = next(b for b in _bullets(_section(text, 4)) if b.startswith("2-D vision RoPE"))
    return out


def test_every_scaling_type_has_its_bullet_and_its_formula():
    bullets = spec_formulas()
    assert set(bullets) - {"base", "vision"} == set(SCALING_TYPES), "docs/spec.md section 3 and roperef.spec.SCALING_TYPES"
    assert set(FORMULAS) == set(bullets) - {"base"}, "conformance/golden/exact_model.py FORMULAS and docs/spec.md"


def test_base_line_is_the_spec_text():
    assert _normal(BASE) == _normal(spec_formulas()["base"])


@pytest.mark.parametrize("key", sorted(FORMULAS))
def test_each_formula_quotes_its_bullet_verbatim(key):
    doc = FORMULAS[key].__doc__ or ""
    want = spec_formulas()[key]
    assert _normal(doc) == _normal(want), (
        f"conformance/golden/exact_model.py's {key} model no longer implements docs/spec.md's text: update the model "
        f"(and so the reference, which must equal it bit for bit) to the spec, then its docstring.\n"
        f"spec:  {_normal(want)}\nmodel: {_normal(doc)}")
