"""Run the ``roperef`` CLI in process for a test: exit code, stdout and stderr, never a traceback."""

from __future__ import annotations

from typing import Any

from conformance.cli.main import main


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``roperef ARGV...`` through :func:`conformance.cli.main`; asserts no traceback reached the user."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def run_check(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``roperef check ARGV...`` (see :func:`run_cli`)."""
    return run_cli(capsys, "check", *argv)
