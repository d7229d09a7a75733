"""The exit codes of the ``roperef`` command, in one place (every subcommand uses these).

==================  ====  ============================================================
name                code  meaning
==================  ====  ============================================================
``OK``              0     cases were judged and all passed (XFAIL, XPASS allowed; IMPRECISE
                          allowed unless ``--fail-imprecise``); ``roperef spec``: printed, or
                          ``--against`` agreed on every item
``FAILED``          1     at least one FAIL or ERROR, or IMPRECISE with ``--fail-imprecise``
                          (``golden verify``/``audit``: a problem; ``spec --against``: an item DIFFERs)
``USAGE``           2     usage or input error: bad flag, argument, file, config value or
                          golden directory (one line on stderr)
``NOTHING_JUDGED``  3     nothing was judged (every case NOT_SUPPORTED, or every judged case an
                          UNINFORMATIVE PASS; ``spec --against``
                          on a model type transformers does not ship); never 0
``INTERNAL``        4     an internal roperef error (a bug in the judge itself)
``NO_ROPE``         5     ``roperef spec`` on a model without RoPE anywhere (BERT, GPT-2,
                          Mamba hybrids, ...): there is no spec to print
``OUTPUT_ERROR``    6     the console could not be written (stdout or stderr on a full
                          disk, closed, failing); the report files were written first and
                          are complete. A reader that closes the pipe (``| head``) is not
                          an error: the command keeps its own code
``INTERRUPTED``     130   stopped by Ctrl-C (a partial report is written, marked interrupted)
``TERMINATED``      143   stopped by SIGTERM (a CI cancel, ``timeout``, ``docker stop``): as
                          Ctrl-C, the partial report is written, marked interrupted
==================  ====  ============================================================
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """Exit status of every ``roperef`` subcommand (see the module docstring)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    NOTHING_JUDGED = 3
    INTERNAL = 4
    NO_ROPE = 5
    OUTPUT_ERROR = 6
    INTERRUPTED = 130
    TERMINATED = 143
