"""The facts that head a conformance run (the pytest plugin's ``pytest_report_header``): backend and
its declaration, library versions, dtypes, tolerance profile, golden set and ``ROPEREF_*`` variables.

Versions are read from the installed distributions' metadata (nothing is imported).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from ..backends.names import BACKEND_LIBRARIES
from ..untrusted_text import for_terminal

__all__ = ["distribution_version", "backend_libraries", "header_lines", "roperef_environment"]

_CORE = ("roperef", "numpy", "numba", "ml_dtypes")


def distribution_version(name: str) -> str:
    """The installed version of distribution ``name``, or ``"not installed"``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def backend_libraries(backend: Any, selector: str | None) -> tuple[str, ...]:
    """The distributions ``backend`` runs on: its ``libraries`` attribute, else the built-in table."""
    for obj in (backend, getattr(backend, "inner", None)):  # a plain object is wrapped (resolve.Adapted)
        own = getattr(obj, "libraries", None)
        if isinstance(own, (tuple, list)):
            return tuple(str(x) for x in own)
    return BACKEND_LIBRARIES.get(selector or "", ())


def roperef_environment() -> dict[str, str]:
    """Every ``ROPEREF_*`` environment variable, sorted."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("ROPEREF_")}


def header_lines(backend: Any, selector: str | None, profile: Any, golden: Mapping[str, Any] | None,
                 case_dtypes: Sequence[str] = (), notes: Sequence[str] = ()) -> list[str]:
    """The header, one fact per line, each starting with ``roperef:``."""
    caps = backend.capabilities
    libs = backend_libraries(backend, selector)
    lines = [
        f"roperef: backend {for_terminal(backend.name)} ({for_terminal(selector or type(backend).__name__)}); "
        f"stages {', '.join(sorted(caps.stages)) or 'none'}; "
        f"angles {caps.angle_dtype}, tables {caps.table_dtype}, attention factor {'applied' if caps.applies_attention_factor else 'left out'}",
        "roperef: versions " + ", ".join(f"{d} {distribution_version(d)}" for d in _CORE)
        + ("; backend libraries " + ", ".join(f"{d} {distribution_version(d)}" for d in libs) if libs else ""),
        f"roperef: dtypes declared {', '.join(sorted(caps.dtypes))}; in the selected cases {', '.join(sorted(set(case_dtypes))) or 'none'}",
        f"roperef: profile {profile.name} (angle dtype {profile.angle_dtype}, table dtype {profile.table_dtype}, "
        f"c_out={profile.c_out:g} c_tab={profile.c_tab:g} c_ang={profile.c_ang:g} c_log={profile.c_log:g} "
        f"c_blend={profile.c_blend:g} c_floor={profile.c_floor:g})",
    ]
    if golden:
        source = golden.get("directory") or golden.get("source") or "computed in memory"
        lines.append(f"roperef: cases {golden.get('selected', '?')} from {for_terminal(source)}; golden set hash "
                     f"{golden.get('set_hash')}, tier {golden.get('tier')}")
        if golden.get("anchor"):
            lines.append(f"roperef: set anchored: {for_terminal(golden['anchor'])}")
    env = roperef_environment()
    lines.append("roperef: environment " + (", ".join(f"{k}={for_terminal(v)}" for k, v in env.items())
                                            or "no ROPEREF_* variable set"))
    if getattr(caps, "notes", ""):
        lines.append(f"roperef: backend notes: {for_terminal(caps.notes)}")
    lines += [f"roperef: note: {for_terminal(note)}" for note in notes]
    return lines
