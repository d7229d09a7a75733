"""The shape part of the coverage section in words (console and Markdown): which token, head, pair
and batch boundaries were judged (:mod:`conformance.judge.shape_coverage`), ``value:cases`` per value,
``value:failing/cases`` where cases failed."""

from __future__ import annotations

from typing import Any

__all__ = ["shape_lines"]


def _values(rows: list[dict[str, Any]], only_failing: bool = False) -> str:
    items = []
    for r in rows:
        if only_failing and not r["failing"]:
            continue
        items.append(f"{r['value']}:{r['failing']}/{r['cases']}" if r["failing"] else f"{r['value']}:{r['cases']}")
    return " ".join(items) or "-"


def shape_lines(shapes: dict[str, Any], quiet: bool = False) -> list[str]:
    """Lines (no newline) describing the judged shapes; ``quiet``: only values with failures and gaps."""
    n = shapes.get("judged_cases", 0)
    out = [f"shapes judged ({n} case(s); value:cases, value:failing/cases where some failed):"]
    gaps = []
    for dim in shapes.get("dimensions", []):
        label = dim["dimension"]
        if label == "head dim":
            nm = next((x for x in shapes["not_multiple_of"]["head_dim"] if x["tile"] == 16), None)
            if nm is not None:
                fail = f", {nm['failing']} failing" if nm["failing"] else ""
                out.append(f"  {'head dim':<15} not a multiple of 16: {nm['cases']} case(s){fail}")
            continue
        shown = _values(dim["values"], only_failing=quiet)
        if not quiet or shown != "-":
            out.append(f"  {label:<15} {shown}")
        if dim.get("not_judged"):
            gaps.append(f"{label} {', '.join(map(str, dim['not_judged']))}")
    sides = "yes" if shapes.get("both_sides_of_powers_of_two") else "no"
    over, empty = shapes.get("over_4096_rows", {}), shapes.get("zero_size", {})
    over_fail = f" ({over.get('failing')} failing)" if over.get("failing") else ""
    empty_fail = f" ({empty.get('failing')} failing)" if empty.get("failing") else ""
    out.append(f"  both sides of every power of two up to 1024 judged: {sides}; more than 4096 token rows: "
               f"{over.get('cases', 0)} case(s){over_fail} (largest {over.get('max_rows', 0)}); "
               f"empty inputs: {empty.get('cases', 0)} case(s){empty_fail}")
    for key, label in (("layouts", "layouts"), ("call_forms", "call forms"), ("qk_shapes", "q+k shapes")):
        rows = shapes.get(key) or []
        if rows and (not quiet or any(r["failing"] for r in rows)):
            out.append(f"  {label:<15} {_values(rows, only_failing=quiet)}")
    if gaps:
        out.append("  not judged: " + "; ".join(gaps))
    return out
