"""pytest plugin (entry point ``pytest11: roperef``): every case ``roperef check`` judges as a test item.

    pytest --rope-backend mypkg.mod:Backend [--rope-filter PAT] [--rope-tier smoke|full]
           [--rope-profile NAME|FILE.toml] [--rope-golden DIR | --rope-cases DIR]
           [--rope-xfail FILE | --rope-no-xfail] [--rope-goldens-only] [--rope-no-probe] [--rope-fail-imprecise]
           [--rope-timeout S] [--rope-set-hash HEX]

The items are the cases ``roperef check --backend ...`` judges with the same options: the golden
cases plus the cases generated for the backend's interface
(:func:`conformance.judge.check_sources.check_cases`; ``--rope-goldens-only`` keeps the goldens),
with a built-in backend's shipped list of known discrepancies applied unless ``--rope-no-xfail``.
Without ``--rope-backend`` the plugin adds no item and its header is one line (versions and
``ROPEREF_*`` variables). Items are named by case id; FAIL/ERROR fail with the mismatch
fraction, the worst elements (index, position, actual, expected, bound), the diagnosis and the
repro command; NOT_SUPPORTED is a skip, XFAIL an xfail, IMPRECISE a pass with a
:class:`RopeImpreciseWarning` (a failure with ``--rope-fail-imprecise``). A session whose conformance
items all ran and judged nothing (every one NOT_SUPPORTED) fails, as ``roperef check`` exits 3. The report
header (like array-api-tests') names the backend, library versions, dtypes, profile, golden set
hash and ``ROPEREF_*`` variables (:mod:`conformance.report.header`). Importing this module is cheap (no NumPy).

Backend code runs under the same protection as in ``roperef check``: every call (``supports``,
the stage, turning its result into arrays) in a call thread under a time limit (``--rope-timeout``,
default 60 s; past it the item fails "timed out" and the session goes on), whatever it raises
(``SystemExit`` and ``KeyboardInterrupt`` included) is that item's failure, never the session's end
(the user's own Ctrl-C still stops pytest), its import is loaded the same way, and what it changes
in the process (working directory, ``ROPEREF_*`` variables, ``sys.stdout``) is put back after each
item and reported as a warning. Messages are sanitised like the console's; the nothing-judged line
gives the top NOT_SUPPORTED reasons.

Everything else (the judge, NumPy) is imported lazily, inside the hooks, once ``--rope-backend``
is given: pytest loads this plugin in every session.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_report_header", "pytest_collection_modifyitems", "RopeCaseItem",
           "pytest_sessionfinish", "pytest_terminal_summary", "RopeImpreciseWarning"]


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("roperef", "RoPE conformance (roperef)")
    group.addoption("--rope-backend", default=None, help="backend to judge: short name or module:attr")
    group.addoption("--rope-filter", action="append", default=[], help="case id substring or glob (repeatable)")
    group.addoption("--rope-tier", default="smoke", choices=("smoke", "full"))
    group.addoption("--rope-profile", default=None, help="tolerance profile name or .toml file")
    group.addoption("--rope-golden", default=None, help="golden directory")
    group.addoption("--rope-cases", default=None, help="a directory of your own cases instead of the golden set (docs/user-cases.md)")
    group.addoption("--rope-xfail", default=None, help="expected-failure file (replaces a built-in backend's shipped list)")
    group.addoption("--rope-no-xfail", action="store_true", default=False,
                    help="judge a built-in backend without its shipped list of known discrepancies")
    group.addoption("--rope-goldens-only", action="store_true", default=False,
                    help="the golden cases only (no cases generated for the backend's interface)")
    group.addoption("--rope-timeout", default=None, type=float,
                    help="seconds per backend call; past it the item fails 'timed out' (default 60)")
    group.addoption("--rope-set-hash", default=None,
                    help="judge only if the golden set (or --rope-cases directory) has this set hash (16+ hex digits)")
    group.addoption("--rope-no-probe", action="store_true", default=False,
                    help="diagnose failures from their own data only (never call the backend again with designed inputs)")
    group.addoption("--rope-fail-imprecise", action="store_true", default=False,
                    help="IMPRECISE cases (a precision mechanism within 8x the bound) fail instead of warning")



class RopeImpreciseWarning(UserWarning):
    """A case over its bound by a small factor that a precision mechanism reproduces (status IMPRECISE)."""


class RopeFailure(Exception):
    """A case's FAIL/ERROR (rendered without a traceback)."""


class RopeCaseItem(pytest.Item):
    def __init__(self, *, case: Any, state: dict[str, Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.case, self.state = case, state

    def runtest(self) -> None:
        import warnings

        from .calls.process_state import ProcessState
        from .judge.runner import RunOptions, run_one
        from .untrusted_text import for_terminal

        st = self.state
        state = ProcessState.capture()
        try:
            res = run_one(self.case, st["backend"], st["caller"], st["profile"],
                          RunOptions(xfail=st["xfail"], repro=st["repro"], timeout=st["timeout"], probe=not st["no_probe"],
                                     fail_imprecise=st["fail_imprecise"]), st["probes"])
        finally:
            for note in state.restore():
                warnings.warn(f"roperef: {for_terminal(self.case.id)}: {note}", stacklevel=1)
        st["statuses"][self.case.id] = res.status
        if res.status == "NOT_SUPPORTED":
            st["reasons"][res.message] = st["reasons"].get(res.message, 0) + 1
            pytest.skip(f"NOT_SUPPORTED: {for_terminal(res.message)}")
        if res.status == "XFAIL":
            pytest.xfail(f"{for_terminal(res.xfail_reason)} ({for_terminal(res.message)})")
        if res.status in ("FAIL", "ERROR") or (res.status == "IMPRECISE" and st["fail_imprecise"]):
            from .report.failure_text import failure_text

            raise RopeFailure(failure_text(res))
        if res.status == "IMPRECISE":
            import warnings

            from .report.failure_text import failure_text

            warnings.warn(RopeImpreciseWarning(failure_text(res)), stacklevel=1)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, RopeFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int, str]:
        return "roperef", 0, f"rope: {self.name}"


class _RopeCollector(pytest.Collector):
    def collect(self) -> list[Any]:
        return []


_STATE_KEY = "_roperef_state"


def _load_state(config: Any) -> dict[str, Any]:
    """Backend, profile, cases and expected failures of this session (raises pytest.UsageError)."""
    import math
    import shlex

    from .backends.resolve import BackendError
    from .calls.load import load_in_process
    from .calls.process_state import ProcessState
    from .calls.stage_call import DEFAULT_TIMEOUT_S
    from .diagnose.probe import ProbeBook
    from .error_model.tolerance import default_profile_name, get_profile
    from .golden.case_source import user_case_source
    from .judge.check_sources import check_cases
    from .judge.runner import InProcess
    from .judge.xfail import choose_xfail
    from .untrusted_text import for_terminal
    from .usage_error import UsageError

    selector = config.getoption("--rope-backend")
    timeout = config.getoption("--rope-timeout")
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise pytest.UsageError(f"roperef: --rope-timeout={timeout}: must be a finite number of seconds > 0")
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    state = ProcessState.capture()
    try:
        backend = load_in_process(selector)
    except BackendError as exc:
        raise pytest.UsageError(f"roperef: {for_terminal(str(exc))}") from None
    finally:
        notes = state.restore("the backend's import")
    try:
        profile = get_profile(config.getoption("--rope-profile"), (), default=default_profile_name(backend.capabilities))
        own = config.getoption("--rope-cases")
        set_hash = config.getoption("--rope-set-hash")
        if own:
            source = user_case_source(own, config.getoption("--rope-filter"), set_hash=set_hash)
        else:
            source, _ = check_cases(backend, config.getoption("--rope-golden"), config.getoption("--rope-tier"),
                                    config.getoption("--rope-filter"), goldens_only=config.getoption("--rope-goldens-only"),
                                    set_hash=set_hash)
        if config.getoption("--rope-xfail") and config.getoption("--rope-no-xfail"):
            raise UsageError("--rope-xfail and --rope-no-xfail exclude each other")
        xfail = choose_xfail(config.getoption("--rope-xfail"), not config.getoption("--rope-no-xfail"), backend, selector)
    except (UsageError, ValueError, TypeError) as exc:
        raise pytest.UsageError(f"roperef: {for_terminal(str(exc))}") from None

    no_probe, fail_imprecise = bool(config.getoption("--rope-no-probe")), bool(config.getoption("--rope-fail-imprecise"))

    def flag(name: str, value: str) -> list[str]:
        return [f"{name}={value}"] if value.startswith("-") else [name, value]

    return {
        "selector": selector, "backend": backend, "profile": profile, "xfail": xfail, "source": source, "statuses": {},
        "reasons": {}, "timeout": timeout, "caller": InProcess(backend, timeout), "load_notes": notes,
        "no_probe": no_probe, "fail_imprecise": fail_imprecise, "probes": ProbeBook(enabled=not no_probe),
        "repro": lambda case: shlex.join(["pytest", *flag("--rope-backend", selector),
                                          *(flag("--rope-cases", own) if own else []), *flag("--rope-filter", case.id)]),
    }


def pytest_configure(config: Any) -> None:
    if config.getoption("--rope-backend", default=None):
        setattr(config, _STATE_KEY, _load_state(config))


def pytest_report_header(config: Any) -> list[str]:
    from .report.header import distribution_version, header_lines, roperef_environment

    state = getattr(config, _STATE_KEY, None)
    if state is None:
        env = roperef_environment()
        return [f"roperef {distribution_version('roperef')}: no --rope-backend (no conformance items); "
                + (", ".join(f"{k}={v}" for k, v in env.items()) or "no ROPEREF_* variable set")]
    from .backends.base import declaration_notes
    from .error_model.tolerance import ignored_declaration

    source = state["source"]
    notes = [*declaration_notes(state["backend"]), *ignored_declaration(state["backend"].capabilities, state["profile"]),
             *state["load_notes"]]
    return header_lines(state["backend"], state["selector"], state["profile"], source.info,
                        [c.dtype for c in source.cases], notes)


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    state = getattr(config, _STATE_KEY, None)
    if state is None:
        return
    parent = _RopeCollector.from_parent(session, name="roperef")
    items.extend(RopeCaseItem.from_parent(parent, name=c.id, case=c, state=state) for c in state["source"].cases)


def _nothing_judged(state: dict[str, Any] | None) -> str | None:
    """The nothing-judged line when every conformance item of the session ran and was NOT_SUPPORTED."""
    if state is None:
        return None
    statuses = state["statuses"]
    if not statuses or len(statuses) < len(state["source"].cases) or any(s != "NOT_SUPPORTED" for s in statuses.values()):
        return None  # something was judged, or not every item ran (-k, -x, a deselection): no verdict on the whole
    from .untrusted_text import for_terminal

    top = sorted(state["reasons"].items(), key=lambda kv: -kv[1])[:3]
    why = "; ".join(f'{n} x "{for_terminal(reason, limit=200)}"' for reason, n in top)
    return (f"nothing judged: {len(statuses)} conformance item(s) of backend {for_terminal(state['backend'].name)}, "
            f"all NOT_SUPPORTED (top reasons: {why})")


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    """A session whose conformance items judged nothing fails (``roperef check`` exits 3 there)."""
    if _nothing_judged(getattr(session.config, _STATE_KEY, None)) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    line = _nothing_judged(getattr(config, _STATE_KEY, None))
    if line:
        terminalreporter.write_line(f"roperef: {line}: the session fails (roperef check exits 3)", red=True)
