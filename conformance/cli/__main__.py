"""``python -m conformance.cli``: the ``roperef`` command (:func:`conformance.cli.main.console_main`).

Importing the command's modules (NumPy, the judge) takes a moment, before :func:`console_main` can
handle a signal: a Ctrl-C that lands then exits 130 with one line, as one during a run does, not
with Python's traceback (it may arrive wrapped, e.g. in the ``RuntimeError`` a dataclass's
``__set_name__`` raises). SIGTERM keeps its default action until the command installs its own."""

import sys


def _interrupted(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, KeyboardInterrupt):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


try:
    from .main import console_main
except BaseException as exc:
    if not _interrupted(exc):
        raise
    sys.stderr.write("roperef: interrupted\n")
    raise SystemExit(130) from None

raise SystemExit(console_main())
