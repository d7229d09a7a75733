"""What a backend can change in the judge's own process, put back and said out loud.

Backend code runs in the judge's process (in process, and while it is imported). Besides the
arguments it is handed (:mod:`conformance.calls.handoff`) it can change process-wide state that
the judge relies on afterwards: the working directory (relative report paths would move), the
``ROPEREF_*`` environment variables (which golden set is read), ``sys.stdout`` / ``sys.stderr``
(the summary would vanish), and it can leave non-daemon threads running (Python waits for them
at exit, after the summary). :meth:`ProcessState.capture` records all of it;
:meth:`ProcessState.restore` puts the working directory, the variables and the streams back and
returns one sentence per change, which the reports carry as notes.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from ..untrusted_text import for_terminal

__all__ = ["ProcessState"]

_ENV_PREFIX = "ROPEREF_"


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIX)}


def _non_daemon() -> dict[int, str]:
    return {t.ident or 0: t.name for t in threading.enumerate()
            if not t.daemon and t.is_alive() and t is not threading.main_thread()}


@dataclass
class ProcessState:
    """The working directory, ``ROPEREF_*`` variables, standard streams and non-daemon threads at one moment."""

    cwd: str | None
    env: dict[str, str]
    stdout: Any
    stderr: Any
    threads: dict[int, str]

    @classmethod
    def capture(cls) -> ProcessState:
        return cls(_cwd(), _env(), sys.stdout, sys.stderr, _non_daemon())

    def restore(self, who: str = "the backend") -> list[str]:
        """Put back what changed since :meth:`capture`; one sentence per change."""
        notes = []
        now = _cwd()
        if self.cwd is not None and now != self.cwd:
            try:
                os.chdir(self.cwd)
                notes.append(f"{who} changed the working directory to {for_terminal(now)} (the judge changed it back)")
            except OSError as exc:
                notes.append(f"{who} changed the working directory to {for_terminal(now)}; changing it back failed ({exc})")
        env = _env()
        for key in sorted(set(env) | set(self.env)):
            if env.get(key) != self.env.get(key):
                if key in self.env:
                    os.environ[key] = self.env[key]
                else:
                    os.environ.pop(key, None)
                notes.append(f"{who} changed the environment variable {for_terminal(key)} (the judge restored it)")
        for name in ("stdout", "stderr"):
            if getattr(sys, name) is not getattr(self, name):
                setattr(sys, name, getattr(self, name))
                notes.append(f"{who} replaced sys.{name} (the judge put its own back)")
        left = {k: v for k, v in _non_daemon().items() if k not in self.threads}
        if left:
            names = ", ".join(sorted(for_terminal(v, limit=80) for v in left.values())[:5])
            notes.append(f"{who} left {len(left)} non-daemon thread(s) running ({names}); roperef does not wait "
                         "for them when it exits")
        return notes
