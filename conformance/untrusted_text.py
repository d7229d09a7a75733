"""One sanitiser for text the judge did not write: backend exception messages, backend names,
``supports()`` reasons, case ids from user folders, expected-failure reasons.

Such text reaches four kinds of output, each with its own hazard:

==============  ===============================================================================
output          what :func:`for_output` does to untrusted text
==============  ===============================================================================
``terminal``    C0 and C1 control characters (ESC, CR, BEL, backspace, ...), DEL, and the Unicode
                bidirectional overrides are written as escapes (``\\x1b``, ``\\r``, ``\\u202e``):
                an ANSI sequence cannot repaint the screen (a green "all passed" over a failing
                run) and a CR cannot overwrite a line; with ``one_line`` newlines are escaped too
                (``\\n``), so a message cannot forge further lines of the report
``xml``         the same escapes, so that every character left is allowed in XML 1.0 (JUnit
                files stay valid XML; ElementTree escapes ``<``, ``&`` and quotes itself)
``markdown``    the terminal escapes with newlines and tabs as spaces (a CR or LF cannot split a
                table row), ``|``, backticks and backslashes escaped, ``<``, ``>`` and ``&`` as
                HTML entities (no live HTML, no autolink); :func:`markdown_code` for code spans
``json``        only :func:`clip` (``json.dumps`` escapes every control character)
==============  ===============================================================================

Undecodable bytes (file names read with ``surrogateescape``: a folder name that is not UTF-8)
are written as ``\\xNN``, and every text is first cut by :func:`clip` to :data:`MAX_CHARS`
characters, saying how long it was: a 5 MB exception message is not repeated in every report.

A leaf module: it imports nothing of roperef or conformance.
"""

from __future__ import annotations

import re

__all__ = ["MAX_CHARS", "clip", "for_terminal", "for_xml", "for_markdown", "markdown_code", "escape_controls",
           "safe_str"]

#: the longest untrusted text kept (characters); longer texts are cut and say their length
MAX_CHARS = 2000

#: control characters (C0 but tab and newline, DEL, C1), bidi overrides/isolates, line/paragraph
#: separators, lone surrogates, and the two non-characters XML 1.0 forbids
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, decoded with surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clip(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was (unchanged when it fits)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text)} characters in all]"


def escape_controls(text: str, *, one_line: bool = False) -> str:
    """Control characters written as escapes (newlines and tabs kept unless ``one_line``)."""
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE).sub(_escape, text)


def for_terminal(text: object, *, one_line: bool = True, limit: int = MAX_CHARS) -> str:
    """Untrusted text for a terminal or a log: clipped, control characters escaped."""
    return escape_controls(clip(str(text), limit), one_line=one_line)


def for_xml(text: object, *, limit: int = MAX_CHARS) -> str:
    """Untrusted text for XML 1.0 (attribute or element text): clipped, every character XML forbids escaped."""
    return escape_controls(clip(str(text), limit), one_line=False)


_MD_SPECIAL = {"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "`": "\\`", "\\": "\\\\"}


def for_markdown(text: object, *, limit: int = MAX_CHARS) -> str:
    """Untrusted text for a Markdown table cell or paragraph: one line, no live HTML, no table split."""
    flat = clip(str(text), limit).replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    escaped = "".join(_MD_SPECIAL.get(ch, ch) for ch in escape_controls(flat, one_line=True))
    return escaped


def markdown_code(text: object, *, limit: int = MAX_CHARS) -> str:
    """Untrusted text as one inline code span (a table cell may hold it: ``|`` is escaped)."""
    flat = escape_controls(clip(str(text), limit).replace("\n", " ").replace("\r", " "), one_line=True)
    flat = flat.replace("|", "\\|")
    ticks = max((len(m) for m in re.findall("`+", flat)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if ticks else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def safe_str(value: object, limit: int = MAX_CHARS) -> str:
    """``str(value)`` for a value the judge did not make: whatever ``__str__`` raises, a description
    instead (``<unprintable KeyError: __str__ raised ValueError>``), clipped to ``limit``.

    Runs the value's own ``__str__``: call it only where backend code is allowed to run (a call
    thread or a worker process), never in the judge's own thread."""
    try:
        text = str(value)
        if not isinstance(text, str):
            text = object.__repr__(value)
    except BaseException as exc:  # a hostile __str__ (SystemExit and KeyboardInterrupt included) is text too
        text = f"<unprintable {type(value).__name__}: __str__ raised {type(exc).__name__}>"
    return clip(text, limit)
