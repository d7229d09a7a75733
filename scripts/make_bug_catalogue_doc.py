#!/usr/bin/env python3
"""Write the bug-class table of docs/conformance.md from conformance.bugs.catalogue.

Usage::

    python scripts/make_bug_catalogue_doc.py [--check]

Replaces the text between the bug-catalogue markers of docs/conformance.md. ``--check``
writes nothing and exits 1 when the file is out of date (tests/conformance/bugs/test_bug_catalogue.py runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "conformance.md"


def render(text: str) -> str:
    from conformance.bugs.doc import END, START, catalogue_markdown

    if START not in text or END not in text:
        raise SystemExit(f"{DOC}: the markers {START!r} and {END!r} are missing")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{catalogue_markdown()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/conformance.md is out of date")
    args = ap.parse_args(argv)
    old = DOC.read_text(encoding="utf-8")
    new = render(old)
    if args.check:
        if new != old:
            print(f"{DOC} is out of date: run python scripts/make_bug_catalogue_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
