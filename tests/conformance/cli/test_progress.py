"""Progress where the user looks (issue 33, item 2): plain lines every interval when stderr is not a
terminal, an estimate before a long run, nothing with -q, the bar on a terminal. A fake clock: no waiting."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from conformance.cli.progress import Progress


@dataclass
class R:
    status: str
    family: str


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(stream, *, total=100, step=1.0, quiet=False, interval=30.0, fail_at=(7,)):
    clock = Clock()
    bar = Progress(total, stream, quiet=quiet, interval=interval, clock=clock)
    for k in range(total):
        clock.t += step
        bar(R("FAIL" if k in fail_at else "PASS", "forward" if k < 50 else "backward"))
    bar.close()
    return stream.getvalue()


def test_plain_lines_every_interval_with_counts_family_eta_and_fails():
    text = _run(io.StringIO())
    lines = text.splitlines()
    assert lines[0] == "roperef check: 100 cases, about 100 s at the rate of the first 3 (a progress line every 30 s)"
    progress = lines[1:]
    assert progress == [
        "roperef check: progress 30/100 cases (30%), family forward, 30 s elapsed, about 70 s left, 1 FAIL or ERROR so far",
        "roperef check: progress 60/100 cases (60%), family backward, 60 s elapsed, about 40 s left, 1 FAIL or ERROR so far",
        "roperef check: progress 90/100 cases (90%), family backward, 90 s elapsed, about 10 s left, 1 FAIL or ERROR so far",
    ]
    assert "\r" not in text


def test_a_short_run_says_nothing_and_quiet_silences_a_long_one():
    assert _run(io.StringIO(), step=0.1) == ""  # 10 s in all: under the interval
    assert _run(io.StringIO(), quiet=True) == ""
    assert _run(Tty(), quiet=True) == ""


def test_a_terminal_gets_the_bar_not_the_lines():
    text = _run(Tty(), total=3, fail_at=(1,))
    assert text.startswith("\r[") and "3/3 1 failing" in text and "roperef check: progress" not in text


def test_the_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval=0: must be > 0 seconds"):
        Progress(1, io.StringIO(), interval=0)
