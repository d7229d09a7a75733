"""Exit codes of the ``roperef`` command, in one place (README "Exit codes").

- ``OK`` 0: cases were judged and all passed (XFAIL allowed); ``roperef spec``: the spec(s) were printed,
  or ``--against transformers`` agreed on every item;
- ``FAILED`` 1: at least one FAIL / ERROR / strict XPASS; ``spec --against``: an item DIFFERs;
- ``USAGE`` 2: a bad flag, argument, file or config value (one line on stderr);
- ``NOTHING_JUDGED`` 3: nothing was judged (every case NOT_SUPPORTED or filtered out; ``spec --against``
  on a model type transformers does not ship) - never 0;
- ``INTERNAL`` 4: a bug in roperef itself;
- ``NO_ROPE`` 5: ``roperef spec`` on a config whose model has no RoPE anywhere (BERT, GPT-2, Mamba
  hybrids, ...): there is no spec to print;
- ``INTERRUPTED`` 130: stopped by Ctrl-C (a partial report is written, marked interrupted).
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
    NO_ROPE = 5
    INTERRUPTED = 130
