"""pytest plugin (entry point ``pytest11: roperef``): every golden case as a test item.

    pytest --rope-backend mypkg.mod:Backend [--rope-filter PAT] [--rope-tier smoke|full]
           [--rope-profile NAME|FILE.toml] [--rope-golden DIR] [--rope-xfail FILE]

Without ``--rope-backend`` the plugin adds nothing. Items are named by case id; FAIL/ERROR
fail with the same message, diagnosis and repro command as ``roperef check``;
NOT_SUPPORTED is a skip, XFAIL an xfail. Importing this module is cheap (no NumPy).
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_collection_modifyitems", "RopeCaseItem"]


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("roperef", "RoPE conformance (roperef)")
    group.addoption("--rope-backend", default=None, help="backend to judge: short name or module:attr")
    group.addoption("--rope-filter", action="append", default=[], help="case id substring or glob (repeatable)")
    group.addoption("--rope-tier", default="smoke", choices=("smoke", "full"))
    group.addoption("--rope-profile", default=None, help="tolerance profile name or .toml file")
    group.addoption("--rope-golden", default=None, help="golden directory")
    group.addoption("--rope-xfail", default=None, help="expected-failure file")


class RopeFailure(Exception):
    """A case's FAIL/ERROR (rendered without a traceback)."""


class RopeCaseItem(pytest.Item):
    def __init__(self, *, case: Any, state: dict[str, Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.case, self.state = case, state

    def runtest(self) -> None:
        from .runner import RunOptions, run_one, _InProcess  # noqa: PLC2701

        st = self.state
        res = run_one(self.case, st["backend"], _InProcess(st["backend"], None), st["profile"],
                      RunOptions(xfail=st["xfail"], repro=st["repro"]))
        if res.status == "NOT_SUPPORTED":
            pytest.skip(f"NOT_SUPPORTED: {res.message}")
        if res.status == "XFAIL":
            pytest.xfail(f"{res.xfail_reason} ({res.message})")
        if res.status in ("FAIL", "ERROR"):
            diag = f"\n{res.diagnosis['summary']}" if res.diagnosis else ""
            raise RopeFailure(f"{res.status} {res.id}: {res.message}{diag}\nrepro: {res.repro}")

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, RopeFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int, str]:
        return "roperef", 0, f"rope: {self.name}"


class _RopeCollector(pytest.Collector):
    def collect(self) -> list[Any]:
        return []


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    selector = config.getoption("--rope-backend")
    if not selector:
        return
    import shlex

    from .backends.resolve import BackendError, resolve_backend
    from .cli_check import UsageError, load_cases
    from .tolerance import default_profile_name, get_profile
    from .xfail import load_xfail

    try:
        backend = resolve_backend(selector)
        profile = get_profile(config.getoption("--rope-profile"), (), default=default_profile_name(backend.capabilities))
        xf = config.getoption("--rope-xfail")
        source = load_cases(config.getoption("--rope-golden"), config.getoption("--rope-tier"), config.getoption("--rope-filter"))
        xfail = load_xfail(xf) if xf else None
    except (BackendError, UsageError, ValueError, TypeError) as exc:
        raise pytest.UsageError(f"roperef: {exc}") from None
    state = {
        "backend": backend, "profile": profile, "xfail": xfail,
        "repro": lambda case: shlex.join(["pytest", "--rope-backend", selector, "--rope-filter", case.id]),
    }
    parent = _RopeCollector.from_parent(session, name="roperef")
    items.extend(RopeCaseItem.from_parent(parent, name=c.id, case=c, state=state) for c in source.cases)
