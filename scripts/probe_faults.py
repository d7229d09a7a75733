#!/usr/bin/env python3
"""Re-run the fault probes of issues 16 and 27 and count the outcomes: clear errors, tracebacks, hangs,
lost reports, wrong results, silent substitutions.

Usage::

    python scripts/probe_faults.py [--quick] [--json OUT.json]

Probe classes (each one runs ``roperef`` in a subprocess with a wall-clock limit, except the
config mutations, which call ``conformance.cli.main.main`` in this process):

- ``backend``: fault-injection backends (``tests/support/faults/fault_backends.py``: sys.exit, KeyboardInterrupt,
  sleep, a GIL-holding C call, os._exit, abort, segfault, garbage outputs, crash or exit at import)
  x run modes (in process, ``--isolate``, ``--timeout 2``, ``--jobs 2``); expected exit 1 (3 when
  nothing is supported, 2 when the backend cannot be loaded) with the JSON report written;
- ``sigint``: Ctrl-C sent to runs stuck in a backend call; expected exit 130, the partial report
  written and marked interrupted; the time from SIGINT to exit is reported;
- ``generate``: Ctrl-C at several moments of ``golden generate --force`` over a different set, and
  the same write under ``ulimit -f`` (a file-size limit: writes fail with EFBIG midway); expected:
  the directory holds the old set or the new one, verified, with nothing beside it;
- ``golden``: damaged golden sets (deep, huge-integer, overflowing or FIFO manifest, truncated,
  forged-header, pickled, missing and stray files) x the five commands that read them
  (check, verify, show, audit, export); expected one line naming the file, exit 1 or 2;
- ``usage``: bad flags and paths (--timeout nan/inf, missing golden directories, a file as
  ``generate --out``, FIFO or directory report paths, filters matching nothing, a deep config);
- ``config``: every preset config mutated (nesting, huge integers, 1e400, NaN, wrong types,
  deleted keys, garbage bytes, empty file) through ``roperef spec``; expected exit 0 or one line
  with exit 2 (5 for a model without RoPE) (what the rules accept is the config reader's business; a traceback never is).

Issue 27 (hostile backends, broken pipes, forged sets; backends in ``tests/support/faults/hostile_backends.py``):

- ``hostile``: backends that attack through what they hand back (``__array__`` that exits,
  interrupts or hangs; exception text that exits, repaints the terminal or is 5 MB; ``numpy.True_``
  from supports; a mutated spec or case; stdout replaced or closed; ``os.chdir``; a non-daemon
  thread; a pickle written onto the worker pipe) x in process / ``--isolate`` / ``--timeout 2``;
  expected: the exit code of the verdict they deserve, the JSON report where it was asked for,
  the summary on stdout, no raw escape on the terminal, valid JUnit XML;
- ``output``: ``| head -n 1``, ``> /dev/full``, ``>&-``, ``2>&-``, a 255-byte report name, an
  undecodable case folder name; expected: the report complete, exit code as documented (a closed
  pipe keeps the verdict, a lost console turns 0 into 6);
- ``sigterm``: SIGTERM to runs stuck in a backend call (serial, ``--jobs 2``, ``--isolate --jobs 2``,
  ``--timeout 600``, during ``golden generate --force``); expected 143, the partial report marked
  ``stopped_by: SIGTERM`` (or the old or the new golden set); the time from SIGTERM to exit is reported;
- ``cases``: user case folders with a FIFO ``case.json`` or array, a forged ``.npy`` header, a
  deflate bomb, an array outside the folder (by path or by symlink), a symlinked case folder, a
  changed ``config.json`` (the set hash must change), undecodable names, an id starting with ``-``;
- ``anchor``: golden sets whose outputs were changed with every manifest hash updated (a copy of the
  checked-in set, a written one, one named by ``ROPEREF_GOLDEN``), a wrong or malformed
  ``--set-hash``, ``golden verify`` of an empty set;
- ``messages``: ``ROPEREF_PRESETS`` naming a missing folder, symlink loops, ``golden audit --samples -5``,
  ``-q`` summaries of runs that judged nothing, ``golden list | head``.

Kinds: ``clear``, ``traceback``, ``hang``, ``data-loss`` (a report missing, misplaced or damaged; a
golden directory holding neither set), ``wrong-code``, ``wrong-result`` (a verdict the run did not
earn: a pass for a backend that tampered, an exit of the judge), ``substitution`` (something else
judged or reported than what was asked for, silently).

A probe "hangs" when it exceeds its limit (60 s; 20 s after SIGINT or SIGTERM). The summary is a
table per class and the slowest stop after Ctrl-C and after SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [str(p) for p in sorted((ROOT / "tests" / "support").glob("*/"))]  # the test helpers' folders
LIMIT_S = 60.0
sys.path[:0] = [str(ROOT), *TESTS, str(ROOT / "scripts")]
import probe_hostile  # noqa: E402 - the probe classes of issue 27 (scripts/probe_hostile.py)

from conformance.calls.stage_call import DEFAULT_TIMEOUT_S  # noqa: E402 - imported after sys.path gains the repo root


@dataclass
class Outcome:
    cls: str
    name: str
    kind: str  # clear | traceback | hang | data-loss | wrong-code | wrong-result | substitution
    detail: str = ""
    stop_s: float | None = None
    signal: str = "SIGINT"


@dataclass
class Probe:
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, cls: str, name: str, kind: str, detail: str = "", stop_s: float | None = None,
            signal_name: str = "SIGINT") -> None:
        self.outcomes.append(Outcome(cls, name, kind, detail, stop_s, signal_name))
        if kind != "clear":
            print(f"  [{kind}] {cls} {name}: {detail[-300:]}", flush=True)
        elif cls != "config":
            note = (f" (stopped {stop_s:.2f} s after {signal_name})" if stop_s is not None
                    else f" {detail[-90:]}" if detail else "")
            print(f"  [clear] {cls} {name}{note}", flush=True)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROPEREF_GOLDEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *TESTS])
    env.update(extra)
    return env


def _cli(args: list[str], *, env: dict[str, str] | None = None, limit: float = LIMIT_S, cwd: Path = ROOT,
         preexec=None) -> tuple[int | None, str]:
    """(exit code or None on a hang, stdout + stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env or _env(), cwd=cwd, preexec_fn=preexec,
                            errors="backslashreplace")
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out + err
    return proc.returncode, out + err


def _classify(code: int | None, text: str, expected: set[int]) -> str:
    if code is None:
        return "hang"
    if code == -signal.SIGINT:  # killed by SIGINT during interpreter exit: the shell sees 130
        code = 130
    if code == -signal.SIGTERM:
        code = 143
    if "Traceback (most recent call last)" in text:
        return "traceback"
    return "clear" if code in expected else "wrong-code"


def _golden_dir(tmp: Path, pattern: str, name: str) -> Path:
    from judge_cases import materialize_subset, write_golden_dir

    return write_golden_dir(tmp / name, materialize_subset(pattern))


# ----------------------------------------------------------------------------- backend faults


FAULTS = {  # backend -> expected exit code
    "fault_backends:ExitsZero": 1, "fault_backends:ExitsThree": 1, "fault_backends:RaisesKeyboardInterrupt": 1,
    "fault_backends:SupportsExits": 1, "fault_backends:Sleeps": 1, "fault_backends:HoldsGIL": 1,
    "fault_backends:OsExit": 1, "fault_backends:Aborts": 1, "runner_backends:Segfaults": 1,
    "fault_backends:ReturnsNone": 1, "fault_backends:ReturnsString": 1, "fault_backends:ReturnsObjects": 1,
    "fault_backends:ReturnsFloat128": 0, "fault_backends:Unsupported": 3,
    "fault_import_segv:Backend": 2, "fault_import_exit:Backend": 2,
}
IN_PROCESS_ONLY_SAFE = {"fault_backends:OsExit", "fault_backends:Aborts", "runner_backends:Segfaults",
                        "fault_backends:HoldsGIL", "fault_import_segv:Backend"}


def probe_backends(p: Probe, golden: Path, tmp: Path, quick: bool) -> None:
    modes = {"isolate": ["--isolate"], "timeout": ["--timeout", "2"], "jobs2": ["--jobs", "2", "--timeout", "2"],
             "in-process": []}
    for backend, expected in FAULTS.items():
        for mode, flags in modes.items():
            if mode == "in-process" and backend in IN_PROCESS_ONLY_SAFE:
                continue  # these kill or freeze any process they run in: that is what --isolate/--timeout are for
            if mode == "in-process" and backend.endswith(":Sleeps"):
                continue  # the default limit takes 120 s per call: tests/conformance/calls/test_faults.py covers it with a short limit
            if quick and mode == "jobs2":
                continue
            report = tmp / "r.json"
            report.unlink(missing_ok=True)
            hung = backend.endswith((":Sleeps", ":HoldsGIL")) and mode == "isolate"  # default limit, 3 in a row
            # a worker that dies on every call is restarted for every case (about 0.3 s each, more on a loaded
            # machine): under isolation every route judges the generated cases too (about 200), so give it time
            crashes = backend.endswith((":OsExit", ":Aborts", ":Segfaults")) and mode != "in-process"
            t0 = time.perf_counter()
            code, text = _cli(["check", "--backend", backend, "--golden", str(golden), "--json", str(report), "-q", *flags],
                              limit=4 * DEFAULT_TIMEOUT_S + 30 if hung else 5 * LIMIT_S if crashes else LIMIT_S)
            if hung:
                text += f" [took {time.perf_counter() - t0:.0f} s: 3 default time-outs, then the rest 'not run']"
            elif crashes:
                text += f" [took {time.perf_counter() - t0:.0f} s: a worker restarted for every case]"
            kind = _classify(code, text, {expected})
            if kind == "clear" and expected in (0, 1, 3) and not report.is_file():
                kind, text = "data-loss", "no JSON report written"
            p.add("backend", f"{backend} {mode}", kind, text if kind != "clear" or hung or crashes else "")


# ----------------------------------------------------------------------------- Ctrl-C


def probe_sigint(p: Probe, golden: Path, tmp: Path) -> None:
    runs = {
        "serial, sleeping": ["--backend", "fault_backends:SleepsMarked"],
        "--jobs 2, sleeping": ["--backend", "fault_backends:SleepsMarked", "--jobs", "2"],
        "--isolate --jobs 2, sleeping": ["--backend", "fault_backends:SleepsMarked", "--isolate", "--jobs", "2"],
        "--timeout 600, sleeping": ["--backend", "fault_backends:SleepsMarked", "--timeout", "600"],
        "two SIGINTs, --jobs 2": ["--backend", "fault_backends:SleepsMarked", "--jobs", "2", "TWICE"],
    }
    for name, args in runs.items():
        twice = "TWICE" in args
        args = [a for a in args if a != "TWICE"]
        marker = tmp / "entered"
        marker.unlink(missing_ok=True)
        report = tmp / "partial.json"
        report.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "check", *args, "--golden", str(golden),
                                 "--json", str(report)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env(ROPEREF_TEST_MARKER=str(marker)), cwd=ROOT)
        deadline = time.monotonic() + LIMIT_S
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        if twice:
            time.sleep(0.02)
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
            stop = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            p.add("sigint", name, "hang", out + err)
            continue
        kind = _classify(proc.returncode, out + err, {130})
        if kind == "clear" and "KeyboardInterrupt" in out + err:
            kind = "traceback"
        if kind == "clear" and not twice:
            doc = json.loads(report.read_text()) if report.is_file() else {}
            if not doc.get("summary", {}).get("interrupted"):
                kind = "data-loss"
        p.add("sigint", name, kind, out + err if kind != "clear" else "", stop_s=stop)


# ----------------------------------------------------------------------------- golden generate


def _golden_state(target: Path, old: bytes, new_ids: set[str]) -> str:
    from conformance.golden.store import verify_golden

    beside = [q.name for q in target.parent.iterdir() if q.name not in (target.name, "old-manifest.json")]
    if beside:
        return f"strays beside the set: {beside}"
    if verify_golden(target, recompute_outputs=False):
        return "damaged: " + verify_golden(target, recompute_outputs=False)[0]
    now = (target / "manifest.json").read_bytes()
    if now == old:
        return "old"
    return "new" if set(json.loads(now)["cases"]) == new_ids else "mixed"


def probe_generate(p: Probe, tmp: Path, quick: bool) -> None:
    old_pat, new_pat = "freq/*,table/default/*", "forward/default/*,backward/llama3/*"
    from judge_cases import materialize_subset

    new_ids = {c.id for c in materialize_subset(new_pat)}
    base = tmp / "gen"
    base.mkdir()
    target = base / "golden"
    delays = (0.2, 0.6, 1.2, 2.0) if quick else (0.1, 0.3, 0.6, 0.9, 1.2, 1.6, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0)
    for delay in delays:
        shutil.rmtree(target, ignore_errors=True)
        _golden_dir(base, old_pat, "golden")
        old = (target / "manifest.json").read_bytes()
        proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "golden", "generate", "--filter", new_pat,
                                 "--out", str(target), "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=_env(), cwd=ROOT)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            p.add("generate", f"SIGINT at {delay} s", "hang")
            continue
        kind = _classify(proc.returncode, out + err, {0, 130})
        state = _golden_state(target, old, new_ids)
        if state not in ("old", "new"):
            kind = "data-loss"
        p.add("generate", f"SIGINT at {delay} s ({state}, exit {proc.returncode})", kind, out + err + state if kind != "clear" else "")
    for blocks in (8, 32, 256):  # ulimit -f in KiB: the larger .npz files of the new set cannot be written (EFBIG)
        shutil.rmtree(target, ignore_errors=True)
        _golden_dir(base, old_pat, "golden")
        old = (target / "manifest.json").read_bytes()

        def limit(b=blocks) -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (b * 1024, b * 1024))

        code, text = _cli(["golden", "generate", "--filter", new_pat, "--out", str(target), "--force"], preexec=limit)
        kind = _classify(code, text, {0, 2})
        state = _golden_state(target, old, new_ids)
        if (code, state) not in ((2, "old"), (0, "new")):  # failed and untouched, or written whole
            kind = "data-loss"
        p.add("generate", f"file size limit {blocks} KiB ({state}, exit {code})", kind, text if kind != "clear" else text[-120:])


# ----------------------------------------------------------------------------- damaged golden sets


def _damage(golden: Path, how: str) -> None:
    import hashlib
    import zipfile

    import numpy as np

    manifest_path = golden / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    cid, entry = next((k, v) for k, v in sorted(manifest["cases"].items()) if v["stage"] == "forward")
    npz = golden / entry["file"]

    def rehash() -> None:
        entry["sha256"] = hashlib.sha256(npz.read_bytes()).hexdigest()
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))

    if how == "deep manifest":
        manifest_path.write_text("[" * 100000 + "]" * 100000)
    elif how == "400-digit integer":
        manifest["schema_version"] = 10**400
        manifest_path.write_text(json.dumps(manifest))
    elif how == "1e400 in manifest":
        text = manifest_path.read_text()
        damaged = re.sub(r'"schema_version": \d+', '"schema_version": 1e400', text)
        if damaged == text:  # a probe that damages nothing would report an intact set as a wrong exit code
            raise ValueError(f"{how}: no schema_version in {manifest_path}")
        manifest_path.write_text(damaged)
    elif how == "manifest is a FIFO":
        manifest_path.unlink()
        os.mkfifo(manifest_path)
    elif how == "manifest not JSON":
        manifest_path.write_text("{nope")
    elif how == "unknown manifest field":
        manifest["surprise"] = 1
        manifest_path.write_text(json.dumps(manifest))
    elif how == "truncated npz":
        npz.write_bytes(npz.read_bytes()[:200])
    elif how == "truncated npz, rehashed":
        npz.write_bytes(npz.read_bytes()[:200])
        rehash()
    elif how in ("2^37-element header", "header/data mismatch"):
        shape = (2**37,) if how.startswith("2^37") else (3, 3)
        src = zipfile.ZipFile(io.BytesIO(npz.read_bytes()))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == "x.npy":
                    arr = np.load(io.BytesIO(data))
                    head = io.BytesIO()
                    np.lib.format.write_array_header_1_0(head, {"descr": arr.dtype.str, "fortran_order": False, "shape": shape})
                    data = head.getvalue() + arr.tobytes()
                dst.writestr(info, data)
        npz.write_bytes(buf.getvalue())
        rehash()
    elif how == "pickled array":
        arrays = dict(np.load(npz))
        arrays["x"] = np.array([{"evil": 1}], dtype=object)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        npz.write_bytes(buf.getvalue())
        rehash()
    elif how == "missing npz":
        npz.unlink()
    elif how == "npz is a FIFO":
        npz.unlink()
        os.mkfifo(npz)
    elif how == "stray npz":
        (golden / "stray.npz").write_bytes(b"PK")
    else:
        raise ValueError(how)


DAMAGES = ("deep manifest", "400-digit integer", "1e400 in manifest", "manifest is a FIFO", "manifest not JSON",
           "unknown manifest field", "truncated npz", "truncated npz, rehashed", "2^37-element header",
           "header/data mismatch", "pickled array", "missing npz", "npz is a FIFO", "stray npz")


def probe_golden(p: Probe, tmp: Path, pattern: str) -> None:
    for k, how in enumerate(DAMAGES):
        golden = _golden_dir(tmp, pattern, f"damaged-{k}")
        manifest = json.loads((golden / "manifest.json").read_text())
        some_id = sorted(manifest["cases"])[0]
        _damage(golden, how)
        commands = {
            "check": ["check", "--backend", "numpy", "--golden", str(golden)],
            "verify": ["golden", "verify", str(golden)],
            "show": ["golden", "show", some_id, "--dir", str(golden)],
            "audit": ["golden", "audit", str(golden), "--samples", "2"],
            "export": ["golden", "export", "--golden", str(golden), "--out", str(tmp / f"export-{k}")],
        }
        for cmd, args in commands.items():
            code, text = _cli(args, limit=30)
            expected = {1, 2} if how != "stray npz" or cmd == "verify" else {0, 1, 2}
            kind = _classify(code, text, expected)
            if kind == "clear" and code != 0 and ("MemoryError" in text or "RecursionError" in text):
                kind = "traceback"
            p.add("golden", f"{how} / {cmd}", kind, text if kind != "clear" else "")


# ----------------------------------------------------------------------------- usage


def probe_usage(p: Probe, golden: Path, tmp: Path) -> None:
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    afile = tmp / "a-file"
    afile.write_text("x")
    deep = tmp / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    big = tmp / "big.json"
    big.write_text('{"model_type": "llama", "head_dim": 64, "rope_theta": 1' + "0" * 400 + "}")
    cases = {
        "--timeout nan": (["check", "--backend", "numpy", "--golden", str(golden), "--timeout", "nan"], {2}, None),
        "--timeout inf": (["check", "--backend", "numpy", "--golden", str(golden), "--timeout", "inf"], {2}, None),
        "ROPEREF_GOLDEN=/missing": (["check", "--backend", "numpy"], {2}, {"ROPEREF_GOLDEN": "/missing"}),
        "--golden /missing": (["check", "--backend", "numpy", "--golden", "/missing"], {2}, None),
        "generate --out a file": (["golden", "generate", "--filter", "freq/default/*", "--out", str(afile)], {2}, None),
        "--json FIFO": (["check", "--backend", "numpy", "--golden", str(golden), "--json", str(fifo)], {2}, None),
        "--json a directory": (["check", "--backend", "numpy", "--golden", str(golden), "--json", str(tmp)], {2}, None),
        "--json in /proc": (["check", "--backend", "numpy", "--golden", str(golden), "--json", "/proc/roperef.json"], {2}, None),
        "--xfail FIFO": (["check", "--backend", "numpy", "--golden", str(golden), "--xfail", str(fifo)], {2}, None),
        "audit --json FIFO": (["golden", "audit", str(golden), "--samples", "1", "--json", str(fifo)], {2}, None),
        "golden list no match": (["golden", "list", "--filter", "zzz"], {2}, None),
        "check no match": (["check", "--backend", "numpy", "--golden", str(golden), "--filter", "zzz"], {2}, None),
        "spec FIFO": (["spec", str(fifo)], {2}, None),
        "spec deep config": (["spec", str(deep)], {2}, None),
        "spec 400-digit theta": (["spec", str(big)], {2}, None),
        "spec a directory": (["spec", str(tmp)], {2}, None),
        "--outputs with a FIFO": (["check", "--outputs", str(fifo)], {2}, None),
        "--jobs 1000 --isolate": (["check", "--backend", "numpy", "--golden", str(golden), "--jobs", "1000", "--isolate"], {0}, None),
    }
    for name, (args, expected, extra) in cases.items():
        env = _env(**(extra or {}))
        code, text = _cli(args, env=env, limit=30)
        p.add("usage", name, _classify(code, text, expected), text)


# ----------------------------------------------------------------------------- config mutations


def _mutations(cfg: dict, rng: random.Random) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    keys = list(cfg)
    for key in keys:
        for label, value in (("nan", float("nan")), ("1e400", "RAW:1e400"), ("400 digits", "RAW:1" + "0" * 400),
                             ("string", "abc"), ("list", [1, 2]), ("dict", {"a": 1}), ("null", None),
                             ("negative", -1), ("zero", 0), ("bool", True)):
            doc = dict(cfg)
            doc[key] = value
            out.append((f"{key}={label}", doc))
        doc = dict(cfg)
        del doc[key]
        out.append((f"without {key}", doc))
    out.append(("deep", "RAW:" + "[" * 50000 + "]" * 50000))
    out.append(("empty file", "RAW:"))
    out.append(("garbage bytes", "BYTES"))
    rng.shuffle(out)
    return out


def probe_configs(p: Probe, tmp: Path, quick: bool) -> None:
    from conformance.cli.main import main

    presets = sorted((ROOT / "conformance" / "presets").glob("*.json"))
    rng = random.Random(16)
    for preset in presets:
        cfg = json.loads(preset.read_text())
        muts = _mutations(cfg, rng)
        for name, doc in (muts[:12] if quick else muts):
            path = tmp / "config.json"
            if doc == "BYTES":
                path.write_bytes(bytes(range(256)) * 4)
            elif isinstance(doc, str) and doc.startswith("RAW:"):
                path.write_text(doc[4:])
            else:
                text = json.dumps(doc)
                text = text.replace('"RAW:1e400"', "1e400").replace('"RAW:1' + "0" * 400 + '"', "1" + "0" * 400)
                path.write_text(text)
            err = io.StringIO()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    code = main(["spec", str(path)])
            except BaseException as exc:
                p.add("config", f"{preset.stem} {name}", "traceback", f"{type(exc).__name__}: {exc}")
                continue
            lines = err.getvalue().strip().splitlines()
            ok = code == 0 or (code in (2, 5) and len(lines) == 1)  # 5: NO_ROPE, a model without rotary embedding
            p.add("config", f"{preset.stem} {name}", "clear" if ok else "wrong-code", err.getvalue())


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer delays, modes and mutations")
    ap.add_argument("--json", default=None, help="write every outcome here")
    ap.add_argument("--only", default=None, help="comma-separated classes to run")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    p = Probe()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="roperef-probe-") as tmpdir:
        tmp = Path(tmpdir)
        for sub in ("u", "d", "c", "h", "o", "s", "k", "a", "m"):
            (tmp / sub).mkdir()
        golden = _golden_dir(tmp, "forward/default/half/*,freq/default/*", "golden")
        steps = [
            ("usage", lambda: probe_usage(p, golden, tmp / "u")),
            ("backend", lambda: probe_backends(p, golden, tmp, args.quick)),
            ("sigint", lambda: probe_sigint(p, golden, tmp)),
            ("golden", lambda: probe_golden(p, tmp / "d", "forward/default/half/float64/*,freq/default/*")),
            ("generate", lambda: probe_generate(p, tmp, args.quick)),
            ("config", lambda: probe_configs(p, tmp / "c", args.quick)),
            ("hostile", lambda: probe_hostile.probe_hostile(p, golden, tmp / "h")),
            ("output", lambda: probe_hostile.probe_output(p, golden, tmp / "o")),
            ("sigterm", lambda: probe_hostile.probe_sigterm(p, golden, tmp / "s")),
            ("cases", lambda: probe_hostile.probe_cases(p, tmp / "k")),
            ("anchor", lambda: probe_hostile.probe_anchor(p, tmp / "a")),
            ("messages", lambda: probe_hostile.probe_messages(p, golden, tmp / "m")),
        ]
        for name, step in steps:
            if only and name not in only:
                continue
            s0 = time.perf_counter()
            step()
            print(f"{name}: done in {time.perf_counter() - s0:.0f} s", flush=True)
    kinds = ("clear", "traceback", "hang", "data-loss", "wrong-code", "wrong-result", "substitution")
    print(f"\n{'class':<10}{'probes':>8}" + "".join(f"{k:>13}" for k in kinds))
    for cls in dict.fromkeys(o.cls for o in p.outcomes):
        sel = [o for o in p.outcomes if o.cls == cls]
        print(f"{cls:<10}{len(sel):>8}" + "".join(f"{sum(o.kind == k for o in sel):>13}" for k in kinds))
    total = p.outcomes
    print(f"{'total':<10}{len(total):>8}" + "".join(f"{sum(o.kind == k for o in total):>13}" for k in kinds))
    for sig, words in (("SIGINT", "Ctrl-C"), ("SIGTERM", "SIGTERM")):
        stops = [o.stop_s for o in total if o.stop_s is not None and o.signal == sig]
        if stops:
            print(f"\n{words} to exit: max {max(stops):.2f} s, median {sorted(stops)[len(stops) // 2]:.2f} s over "
                  f"{len(stops)} runs")
    print(f"probes ran in {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in total], indent=1) + "\n")
    return 0 if all(o.kind == "clear" for o in total) else 1


if __name__ == "__main__":
    raise SystemExit(main())
