"""The error for bad user input to a command or a session: printed as one line, exit code 2.

:class:`UsageError` is raised below the CLI (case loading, the file protocol) as well as by
the CLI itself, so it lives in this leaf module: the CLI prints it as ``roperef ...: error:
<message>`` and exits :attr:`conformance.exit_codes.ExitCode.USAGE`; the pytest plugin turns
it into ``pytest.UsageError``; :func:`conformance.assertions.assert_rope_conforms` lets it
propagate (it is a ``ValueError``).
"""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(ValueError):
    """Bad command-line input: printed as one line, exit 2."""
