"""The exit codes of ``roperef check``, in one place (shared by every mode of the command).

=====  ================  ==========================================================
code   name              meaning
=====  ================  ==========================================================
0      OK                cases were judged and all passed (XFAIL allowed)
1      FAILED            at least one FAIL or ERROR (or a strict XPASS)
2      USAGE             a usage error: bad flag, argument or file, missing golden
                         directory, bad backend spec (one line on stderr)
3      NOTHING_JUDGED    nothing was judged: every case NOT_SUPPORTED or filtered out
4      INTERNAL          an internal roperef error (a bug in the judge itself)
130    INTERRUPTED       interrupted by Ctrl-C (partial report written, marked so)
=====  ================  ==========================================================
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    NOTHING_JUDGED = 3
    INTERNAL = 4
    INTERRUPTED = 130
