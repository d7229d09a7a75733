"""A failing case in words, the way ``numpy.testing.assert_allclose`` reports a mismatch.

Used by :func:`conformance.assertions.assert_rope_conforms` and the pytest plugin::

    FAIL forward/default/half/float32/b2-s16-h2-d64/short
      37/4096 elements over the bound; worst |err|=... > bound ... (budget 56.6) at y[...]
      Mismatched elements: 37 / 4096 (0.903%)
      Worst elements (budget = |actual - expected| / bound; passes when <= 1):
        output  index          position  actual                 expected               |err|      bound      budget
        y       (1, 12, 0, 33) 4095      0.12345678901234568    0.12344999999999999    6.79e-06   1.2e-07    56.6
      diagnosis: likely cause: ... (matches decoy ...)
      repro: roperef check --backend ... --filter ...

Values are printed with ``repr`` precision (17 significant digits) so the actual and expected
values can be pasted back; positions are the integer positions (a list of rows for mRoPE/vision).
"""

from __future__ import annotations

from typing import Any

from ..untrusted_text import for_terminal

__all__ = ["failure_text", "mismatch_line", "worst_table"]


def mismatch_line(n_over: int, n_elements: int) -> str:
    """``Mismatched elements: 37 / 4096 (0.903%)`` (as numpy.testing words it)."""
    pct = 100.0 * n_over / n_elements if n_elements else 0.0
    return f"Mismatched elements: {n_over} / {n_elements} ({pct:.3g}%)"


def _index(el: dict[str, Any]) -> str:
    return "(" + ", ".join(str(i) for i in el.get("index", [])) + (",)" if len(el.get("index", [])) == 1 else ")")


def _position(el: dict[str, Any]) -> str:
    if "position" in el:
        return str(el["position"])
    if "pair" in el:
        return f"pair {el['pair']}"
    return "-"


def worst_table(elements: list[dict[str, Any]]) -> list[str]:
    """One header and one line per element: output, index, position, actual, expected, |err|, bound, budget."""
    rows = [("output", "index", "position", "actual", "expected", "|err|", "bound", "budget")]
    for el in elements:
        rows.append((
            str(el.get("output", "")), _index(el), _position(el), repr(float(el["actual"])), repr(float(el["expected"])),
            f"{el['error']:.3g}", f"{el['bound']:.3g}", f"{el['budget']:.3g}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def failure_text(result: Any) -> str:
    """The full message of a FAIL/ERROR :class:`~conformance.judge.runner.CaseResult` (several lines)."""
    t = for_terminal
    lines = [f"{result.status} {t(result.id)}", f"  {t(result.message)}"]
    m = result.metrics
    if m is not None and result.status in ("FAIL", "IMPRECISE", "XFAIL") and m.n_over:
        lines.append("  " + mismatch_line(m.n_over, m.n_elements))
        elements = [el for el in m.worst_elements if el.get("budget", 0) > 0]
        if elements:
            lines.append("  Worst elements (budget = |actual - expected| / bound; passes when <= 1):")
            lines += ["    " + row for row in worst_table(elements)]
    if result.diagnosis:
        lines.append(f"  diagnosis: {t(result.diagnosis['summary'])}")
    if result.xfail_reason:
        lines.append(f"  expected failure: {t(result.xfail_reason)}")
    if result.repro:
        lines.append(f"  repro: {t(result.repro)}")
    return "\n".join(lines)
