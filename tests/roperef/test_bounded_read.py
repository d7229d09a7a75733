"""Files are read in bounded chunks (issue 35, item 4): never with a buffer sized to the limit.

``fh.read(4 GiB)`` allocates 4 GiB before reading a 3 KiB file: under a 4 GiB address-space
limit (``ulimit -v 4194304``) the goldens could not be read ("out of memory"), and under
``python -X dev`` the debug allocator's fill of that buffer made the run seem to hang. These
tests run the CLI in a subprocess under ``RLIMIT_AS`` = 4 GiB and under ``-X dev`` on a
three-case copy of the checked-in golden set (small, so the test takes seconds).
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roperef.bounded_read import read_at_most

ROOT = Path(__file__).resolve().parents[2]
FOUR_GIB = 4 * 2**30


class _CountingReader(io.BytesIO):
    """A BytesIO that records the size of every read asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def read(self, n: int | None = -1) -> bytes:  # type: ignore[override]
        self.asked.append(-1 if n is None else n)
        return super().read(n)


def test_read_at_most_never_asks_more_than_a_chunk() -> None:
    fh = _CountingReader(b"x" * 10)
    assert read_at_most(fh, FOUR_GIB, chunk=4) == b"x" * 10
    assert max(fh.asked) == 4  # a 4 GiB limit, yet no read asked for more than one chunk


def test_read_at_most_reads_one_byte_past_the_limit() -> None:
    assert read_at_most(io.BytesIO(b"abcdef"), 6, chunk=4) == b"abcdef"          # exactly at the limit
    assert read_at_most(io.BytesIO(b"abcdefg"), 6, chunk=4) == b"abcdefg"        # one past: the caller refuses
    assert read_at_most(io.BytesIO(b"abcdefghij"), 6, chunk=4) == b"abcdefg"     # never more than limit + 1
    assert read_at_most(io.BytesIO(b""), 0) == b""


@pytest.mark.parametrize(("kwargs", "words"), [({"limit": -1}, "limit=-1"), ({"limit": 3, "chunk": 0}, "chunk=0"),
                                               ({"limit": True}, "limit=True")])
def test_read_at_most_refuses_bad_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        read_at_most(io.BytesIO(b"ab"), **kwargs)


def _small_golden(tmp_path: Path, n: int = 3) -> Path:
    """A copy of the checked-in golden set holding its first ``n`` cases (manifest rewritten)."""
    manifest = json.loads((ROOT / "golden" / "manifest.json").read_text())
    keep = dict(list(sorted(manifest["cases"].items()))[:n])
    out = tmp_path / "golden"
    out.mkdir()
    for entry in keep.values():
        shutil.copyfile(ROOT / "golden" / entry["file"], out / entry["file"])
    manifest["cases"] = keep
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return out


def _limit_address_space() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (FOUR_GIB, FOUR_GIB))


def _cli(args: list[str], *, dev: bool = False, limited: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, *(["-X", "dev"] if dev else []), "-m", "conformance.cli", *args]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_address_space if limited else None)


@pytest.mark.parametrize("mode", ["rlimit_as_4gib", "x_dev"])
def test_golden_verify_and_check_under_4gib_address_space_and_dev_mode(tmp_path: Path, mode: str) -> None:
    golden = _small_golden(tmp_path)
    flags = {"dev": mode == "x_dev", "limited": mode == "rlimit_as_4gib"}
    verify = _cli(["golden", "verify", str(golden)], **flags)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.strip().splitlines()[-1].startswith(f"{golden}: OK ("), verify.stdout
    if mode == "x_dev":
        return  # the dev-mode hang was the read buffer's fill; one CLI run shows it gone (kept fast)
    check = _cli(["check", "-q", "--goldens-only", "--golden", str(golden), "--no-xfail"], **flags)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "OK: 3 cases (3 PASS)" in check.stdout, check.stdout + check.stderr
