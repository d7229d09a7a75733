"""The code blocks of a Markdown page, as the docs harness reads them (tests/docs/test_docs_examples.py).

Fenced blocks (```` ``` ```` or ``~~~``, indented or not: a fence inside a list item is dedented by
its own indentation) with these info strings are collected, in page order:

- ``python``: run, in order, in one namespace per page (docs/extending.md, "Code blocks in the docs");
- ``pycon``: a doctest session (``>>>`` prompts and their shown output), run in the same namespace;
- ``python-signature``: a listing of signatures, never run; each line ``name.attr(params)`` is
  checked against the real function's parameters;
- ``output`` right after a ``python`` block (only blank lines between): what that block prints,
  compared with what it printed (``...`` matches anything, as in doctest's ELLIPSIS).

An HTML comment on the line before a block's fence (invisible on the rendered page) gives it a
directive: ``<!-- docs-test: file NAME -->`` (write the block to NAME in the page's directory, run
it as its own module there and call its ``test_*`` functions) or ``<!-- docs-test: skip REASON -->``
(not run: the reason is shown as the test's skip reason; for what no CI machine can run, e.g. a GPU).
Every other block (bash, text, plain) is prose to the harness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "DocsError", "RUN", "read_blocks"]

RUN = ("python", "pycon", "python-signature")  # the info strings the harness collects
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>file|skip)\s+(?P<arg>.+?)\s*-->\s*$")


class DocsError(ValueError):
    """A page the harness cannot read: an unclosed fence, an output block after nothing to run, a bad directive."""


@dataclass(frozen=True)
class Block:
    """One collected code block of a page."""

    page: str  # path relative to the repository root, e.g. "docs/fast.md"
    line: int  # 1-based line of the first source line (the line after the opening fence)
    lang: str  # one of RUN
    source: str  # dedented by the fence's indentation
    output: str | None = None  # the ``output`` block that follows, if any
    file: str | None = None  # ``docs-test: file NAME``
    skip: str | None = None  # ``docs-test: skip REASON``

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _dedent(lines: list[str], indent: str) -> str:
    """Remove the fence's indentation from each line (lines indented less lose what they have)."""
    out = []
    for text in lines:
        k = 0
        while k < len(indent) and k < len(text) and text[k] == indent[k]:
            k += 1
        out.append(text[k:])
    return "\n".join(out) + "\n"


def read_blocks(path: Path, root: Path) -> list[Block]:
    """Every collected block of the page at ``path``, with its output block and directive."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").split("\n")
    raw: list[tuple[int, str, str, str | None, str | None]] = []  # (line, info, source, file, skip)
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip().split(" ")[0]
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(fence[0] * len(fence)) and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        if end == len(lines):
            raise DocsError(f"{page}:{i + 1}: the fence {fence}{info} is never closed")
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        d = _DIRECTIVE.match(prev)
        if "docs-test" in prev and not d:
            raise DocsError(f"{page}:{i}: {prev.strip()!r}: a directive is <!-- docs-test: file NAME --> or <!-- docs-test: skip REASON -->")
        file = d.group("arg") if d and d.group("kind") == "file" else None
        skip = d.group("arg") if d and d.group("kind") == "skip" else None
        raw.append((i + 2, info, _dedent(lines[i + 1 : end], indent), file, skip))
        i = end + 1
    blocks: list[Block] = []
    for k, (line, info, source, file, skip) in enumerate(raw):
        if info == "output":
            prev_block = raw[k - 1] if k else None
            if prev_block is None or prev_block[1] != "python" or not _adjacent(lines, prev_block[0], prev_block[2], line):
                raise DocsError(f"{page}:{line - 1}: an ```output block must follow a ```python block (only blank lines between)")
            continue
        if info not in RUN:
            if file or skip:
                raise DocsError(f"{page}:{line - 1}: a docs-test directive on a ```{info or ' (plain)'} block, which the harness does not run")
            continue
        nxt = raw[k + 1] if k + 1 < len(raw) else None
        output = nxt[2] if nxt is not None and nxt[1] == "output" and _adjacent(lines, line, source, nxt[0]) else None
        if output is not None and info != "python":
            raise DocsError(f"{page}:{line - 1}: an ```output block must follow a ```python block")
        blocks.append(Block(page, line, info, source, output, file, skip))
    return blocks


def _adjacent(lines: list[str], first_line: int, source: str, next_line: int) -> bool:
    """Whether only blank lines lie between the block starting at ``first_line`` and the block at ``next_line``."""
    closing = first_line - 1 + source.count("\n")  # 0-based index of the closing fence
    return all(not lines[k].strip() for k in range(closing + 1, next_line - 2))
