"""The probe classes of issue 27 for scripts/probe_faults.py: hostile backends, broken output, SIGTERM,
user-case limits, forged golden sets, vague messages. Each probe runs ``roperef`` in a subprocess (or a
shell pipeline) with a wall-clock limit and classifies what happened (see probe_faults.py's docstring).

Run through ``python scripts/probe_faults.py --only hostile,output,sigterm,cases,anchor,messages``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TESTS = [str(p) for p in sorted((ROOT / "tests" / "support").glob("*/"))]  # the test helpers' folders
LIMIT_S = 60.0
CLI = [sys.executable, "-m", "conformance.cli"]


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("ROPEREF_")}
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), *TESTS])
    out.update(extra)
    return out


def run(args: list[str], *, environ: dict[str, str] | None = None, limit: float = LIMIT_S, cwd: Path = ROOT,
        shell_tail: str | None = None) -> tuple[int | None, str, str]:
    """(exit code or None on a hang, stdout, stderr); ``shell_tail`` runs ``roperef ARGS <tail>`` in bash and
    reports roperef's own exit status (``PIPESTATUS[0]``)."""
    if shell_tail is not None:
        import shlex
        import tempfile

        with tempfile.NamedTemporaryFile("r", suffix=".rc") as status:
            cmd = ["bash", "-c", f"{shlex.join([*CLI, *args])} {shell_tail}; echo ${{PIPESTATUS[0]}} > {status.name}"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ or env(), cwd=cwd)
            try:
                out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                return None, out.decode(errors="backslashreplace"), err.decode(errors="backslashreplace")
            text = Path(status.name).read_text().strip()
        code = int(text) if text.lstrip("-").isdigit() else None
        return code, out.decode(errors="backslashreplace"), err.decode(errors="backslashreplace")
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ or env(), cwd=cwd)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out.decode(errors="backslashreplace"), err.decode(errors="backslashreplace")
    return proc.returncode, out.decode(errors="backslashreplace"), err.decode(errors="backslashreplace")


def kind_of(code: int | None, text: str, expected: set[int]) -> str:
    if code is None:
        return "hang"
    if "Traceback (most recent call last)" in text or "Exception ignored" in text:
        return "traceback"
    return "clear" if code in expected else "wrong-code"


def report(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- hostile backends


#: backend -> (expected exit code, extra check name); "deserved" is the verdict of an honest judge
HOSTILE = {
    "ArrayExits": (1, "error"), "ArrayInterrupts": (1, "error"), "StrExits": (1, "error"),
    "AnsiMessage": (1, "sanitised"), "HugeMessage": (1, "clipped"), "NumpyTrue": (0, "pass"),
    "MutatesSpec": (1, "fail"), "MutatesCase": (1, "fail"), "ReplacesStdout": (0, "summary"),
    "ClosesStdout": (0, "summary"), "ChangesDir": (0, "report-in-place"), "LeavesThread": (0, "pass"),
    "ArrayHangs": (1, "error"), "PicklesOntoThePipe": (1, "error"), "OffByALittle": (1, "fail"),
    "NotInstalled": (3, "why"),
}


def _hostile_check(check: str, code: int | None, out: str, doc: dict[str, Any] | None, junit: Path) -> str | None:
    """None when the run is what it should be, else (kind, why)."""
    if doc is None:
        return "data-loss"
    summary = doc["summary"]
    if check == "error" and not summary["counts"]["ERROR"]:
        return "wrong-result"
    if check == "fail" and not summary["counts"]["FAIL"]:
        return "wrong-result"
    if check == "pass" and summary["counts"]["PASS"] != summary["cases"]:
        return "wrong-result"
    if check in ("summary", "pass", "error", "fail") and not any(line.startswith(("OK: ", "FAILED: ")) for line in out.splitlines()):
        return "data-loss"  # the summary vanished
    if check == "sanitised":
        if "\x1b" in out or "\r" in out:
            return "wrong-result"
        try:
            ET.parse(junit)
        except (ET.ParseError, OSError):
            return "data-loss"
    if check == "clipped" and len(json.dumps(doc)) > 2**20:
        return "wrong-result"
    if check == "why" and "not installed" not in out.splitlines()[-1]:
        return "substitution"
    return None


def probe_hostile(p: Any, golden: Path, tmp: Path) -> None:
    modes = {"in-process": [], "isolate": ["--isolate"], "timeout": ["--timeout", "2"]}
    for name, (expected, check) in HOSTILE.items():
        for mode, flags in modes.items():
            slow = name == "ArrayHangs" and mode != "timeout"  # the default 60 s limit, 3 in a row: 3 minutes
            if name == "PicklesOntoThePipe" and mode == "in-process":
                continue  # there is no pipe in process
            work = tmp / f"{name}-{mode}"
            work.mkdir()
            filt = ["--filter", "forward/default/half/float64/*"] if slow else []
            args = ["check", "--backend", f"hostile_backends:{name}", "--golden", str(golden), "--goldens-only",
                    "--json", "r.json", "--junit", str(work / "j.xml"), *filt, *flags]
            limit = 4 * 60 + 60 if slow else LIMIT_S
            code, out, err = run(args, environ=env(ROPEREF_TEST_DIR=str(tmp)), cwd=work, limit=limit)
            kind = kind_of(code, out + err, {expected})
            if kind == "clear":
                kind = _hostile_check(check, code, out, report(work / "r.json"), work / "j.xml") or "clear"
            if kind == "clear" and name == "ChangesDir" and any(tmp.glob("r.json")):
                kind = "data-loss"  # the report went where the backend moved the process
            p.add("hostile", f"{name} {mode}", kind, out[-400:] + err[-400:] if kind != "clear" else "")


# ----------------------------------------------------------------------------- broken output


def probe_output(p: Any, golden: Path, tmp: Path) -> None:
    base = ["check", "--backend", "numpy", "--golden", str(golden), "--goldens-only"]
    wrong = ["check", "--backend", "hostile_backends:OffByALittle", "--golden", str(golden), "--goldens-only"]
    cases = {  # name -> (args, shell tail, expected code, report path)
        "| head -n 1": (base, "| head -n 1 >/dev/null", {0}),
        "| head -n 1, failing run": (wrong, "| head -n 1 >/dev/null", {1}),
        "> /dev/full": (base, "> /dev/full", {6}),
        "> /dev/full, failing run": (wrong, "> /dev/full", {1}),
        ">&- (stdout closed)": (base, ">&-", {6}),
        "2>&- (stderr closed), failing run": (wrong, "2>&-", {1}),
        "-q | head -c 10": ([*base, "-q"], "| head -c 10 >/dev/null", {0}),
        "golden list | head -n 1": (["golden", "list"], "| head -n 1 >/dev/null", {0}),
        "golden verify > /dev/full": (["golden", "verify", str(golden)], "> /dev/full", {6}),
    }
    for name, (args, tail, expected) in cases.items():
        rep = tmp / "r.json"
        rep.unlink(missing_ok=True)
        extra = ["--json", str(rep)] if args[0] == "check" else []
        code, out, err = run([*args, *extra], shell_tail=tail)
        kind = kind_of(code, out + err, expected)
        if kind == "clear" and extra and report(rep) is None:
            kind = "data-loss"
        p.add("output", name, kind, f"exit {code}: {err[-300:]}" if kind != "clear" else "")
    long_name = tmp / ("r" * 250 + ".json")
    code, out, err = run([*base, "--json", str(long_name), "--markdown", str(tmp / ("m" * 252 + ".md"))])
    kind = kind_of(code, out + err, {0})
    if kind == "clear" and (report(long_name) is None or any(q.name.endswith(".tmp") for q in tmp.iterdir())):
        kind = "data-loss"
    p.add("output", "255-byte report names", kind, err[-300:] if kind != "clear" else "")
    cases_dir = tmp / "undecodable"
    folder = Path(os.fsdecode(bytes(cases_dir) + b"/case-\xff\xfe\x1b[2J"))
    _user_case(folder)
    code, out, err = run(["check", "--backend", "numpy", "--cases", str(cases_dir), "--json", str(tmp / "u.json"),
                          "--junit", str(tmp / "u.xml"), "--markdown", str(tmp / "u.md")])
    kind = kind_of(code, out + err, {0})
    if kind == "clear" and (report(tmp / "u.json") is None or "\x1b" in out):
        kind = "data-loss" if report(tmp / "u.json") is None else "wrong-result"
    p.add("output", "undecodable case folder name", kind, err[-300:] if kind != "clear" else "")


# ----------------------------------------------------------------------------- SIGTERM


def probe_sigterm(p: Any, golden: Path, tmp: Path) -> None:
    runs = {
        "serial, sleeping": [],
        "--jobs 2, sleeping": ["--jobs", "2"],
        "--isolate --jobs 2, sleeping": ["--isolate", "--jobs", "2"],
        "--timeout 600, sleeping": ["--timeout", "600"],
        "conversion hanging, --jobs 2": ["--jobs", "2", "BACKEND=hostile_backends:ArrayHangs"],
    }
    for name, flags in runs.items():
        backend = next((f.split("=", 1)[1] for f in flags if f.startswith("BACKEND=")), "fault_backends:SleepsMarked")
        flags = [f for f in flags if not f.startswith("BACKEND=")]
        marker, rep = tmp / "entered", tmp / "partial.json"
        marker.unlink(missing_ok=True)
        rep.unlink(missing_ok=True)
        proc = subprocess.Popen([*CLI, "check", "--backend", backend, "--golden", str(golden), "--json", str(rep), *flags],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env(ROPEREF_TEST_MARKER=str(marker)), cwd=ROOT)
        deadline = time.monotonic() + LIMIT_S
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=20)
            stop = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            p.add("sigterm", name, "hang", out + err, signal_name="SIGTERM")
            continue
        kind = kind_of(proc.returncode, out + err, {143})
        doc = report(rep)
        if kind == "clear" and (doc is None or doc["summary"].get("stopped_by") != "SIGTERM"):
            kind = "data-loss"
        p.add("sigterm", name, kind, out[-200:] + err[-300:] if kind != "clear" else "", stop_s=stop, signal_name="SIGTERM")
    _sigterm_generate(p, tmp)


def _sigterm_generate(p: Any, tmp: Path) -> None:
    from conformance.golden.store import verify_golden
    from judge_cases import materialize_subset, write_golden_dir

    old_pat, new_pat = "freq/*,table/default/*", "forward/default/*,backward/llama3/*"
    base = tmp / "gen"
    base.mkdir()
    target = base / "golden"
    for delay in (0.3, 1.0, 2.0, 4.0):
        shutil.rmtree(target, ignore_errors=True)
        write_golden_dir(target, materialize_subset(old_pat))
        old = (target / "manifest.json").read_bytes()
        proc = subprocess.Popen([*CLI, "golden", "generate", "--filter", new_pat, "--out", str(target), "--force"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=ROOT)
        time.sleep(delay)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            p.add("sigterm", f"generate, SIGTERM at {delay} s", "hang", signal_name="SIGTERM")
            continue
        stop = time.monotonic() - t0
        kind = kind_of(proc.returncode, out + err, {0, 143})
        strays = [q.name for q in base.iterdir() if q.name != "golden"]
        now = (target / "manifest.json").read_bytes() if (target / "manifest.json").is_file() else b""
        sound = not verify_golden(target, recompute_outputs=False)
        if kind == "clear" and (strays or not sound or (now != old and proc.returncode != 0)):
            kind = "data-loss"
        state = "old" if now == old else "new"
        p.add("sigterm", f"generate, SIGTERM at {delay} s ({state}, exit {proc.returncode})", kind,
              out + err + str(strays) if kind != "clear" else "", stop_s=stop, signal_name="SIGTERM")


# ----------------------------------------------------------------------------- user cases


def _user_case(folder: Path, *, doc: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps(doc or {"stage": "forward", "spec": {"head_dim": 8}}))
    np.save(folder / "x.npy", np.ones((1, 2, 1, 8)))
    np.save(folder / "positions.npy", np.array([[0, 1]], dtype=np.int64))
    return folder


def _bomb(folder: Path, n_bytes: int) -> None:
    """An arrays.npz whose x.npy inflates to ``n_bytes`` of zeros (written streaming: never in memory)."""
    n = n_bytes // (8 * 2 * 8)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (1, n, 2, 8)})
    with zipfile.ZipFile(folder / "arrays.npz", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("x.npy", "w", force_zip64=True) as fh:
            fh.write(header.getvalue())
            chunk = bytes(2**20)
            left = n * 128
            while left > 0:
                fh.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)
        buf = io.BytesIO()
        np.save(buf, np.zeros((1, n), dtype=np.int64)[:, :2])
        zf.writestr("positions.npy", buf.getvalue())


def probe_cases(p: Any, tmp: Path) -> None:
    def make(name: str) -> tuple[Path, Path]:
        root = tmp / name
        return root, _user_case(root / "a")

    probes: dict[str, tuple[Path, set[int], str]] = {}
    root, a = make("fifo-case-json")
    (a / "case.json").unlink()
    os.mkfifo(a / "case.json")
    probes["FIFO case.json"] = (root, {2}, "FIFO")
    root, a = make("fifo-npy")
    (a / "x.npy").unlink()
    os.mkfifo(a / "x.npy")
    probes["FIFO x.npy"] = (root, {2}, "FIFO")
    root, a = make("forged-header")
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (2**37,)})
    (a / "x.npy").write_bytes(head.getvalue() + bytes(64))
    probes["2^37-element header"] = (root, {2}, "x.npy")
    root, a = make("bomb")
    (a / "x.npy").unlink()
    (a / "positions.npy").unlink()
    _bomb(a, 600 * 2**20)
    probes[f"deflate bomb ({(a / 'arrays.npz').stat().st_size // 1024} kB -> 600 MiB)"] = (root, {2}, "size budget")
    root, a = make("outside-path")
    _user_case(tmp / "elsewhere")
    (a / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8},
                                             "arrays": {"x": "../../elsewhere/x.npy", "positions": "positions.npy"}}))
    probes["array outside the folder (path)"] = (root, {2}, "outside the case folder")
    root, a = make("outside-link")
    (a / "x.npy").unlink()
    (a / "x.npy").symlink_to(tmp / "elsewhere" / "x.npy")
    probes["array outside the folder (symlink)"] = (root, {2}, "outside the case folder")
    root = tmp / "linked-folder"
    root.mkdir()
    (root / "b").symlink_to(tmp / "elsewhere")
    probes["symlinked case folder"] = (root, {2}, "is a symlink")
    root, a = make("dash-id")
    (a / "case.json").write_text(json.dumps({"stage": "forward", "spec": {"head_dim": 8}, "id": "-x/forward"}))
    probes["id starting with '-' (repro runs)"] = (root, {1}, "repro")
    for name, (root, expected, needle) in probes.items():
        backend = "hostile_backends:FailsById" if needle == "repro" else "numpy"
        code, out, err = run(["check", "--backend", backend, "--cases", str(root)], limit=LIMIT_S)
        kind = kind_of(code, out + err, expected)
        if kind == "clear" and needle == "repro":
            line = next((ln.split("repro: ", 1)[1] for ln in out.splitlines() if "repro: " in ln), "")
            import shlex

            rcode, rout, rerr = run(shlex.split(line)[1:]) if line else (None, "", "no repro line")
            kind = "clear" if rcode == 1 and "1 FAIL" in rout else "wrong-result"
        elif kind == "clear" and needle not in err:
            kind = "wrong-code"  # the right code, but the message does not say what is wrong
        p.add("cases", name, kind, err[-300:] if kind != "clear" else "")
    # the set hash covers a config.json the case reads
    root = tmp / "config-hash"
    a = _user_case(root / "a", doc={"stage": "forward", "spec": "../config.json"})
    cfg = {"model_type": "llama", "head_dim": 8, "hidden_size": 16, "num_attention_heads": 2, "rope_theta": 10000.0}
    hashes = []
    for theta in (10000.0, 500000.0):
        (root / "config.json").write_text(json.dumps({**cfg, "rope_theta": theta}))
        code, out, err = run(["check", "--backend", "numpy", "--cases", str(root), "--json", str(tmp / "h.json")])
        doc = report(tmp / "h.json")
        hashes.append(doc["golden"]["set_hash"] if doc else None)
    kind = "clear" if None not in hashes and hashes[0] != hashes[1] else "substitution"
    p.add("cases", "config.json changed: set hash changes", kind, str(hashes) if kind != "clear" else "")
    del a


# ----------------------------------------------------------------------------- forged golden sets


def _forge(golden: Path, stage: str) -> str:
    from conformance.golden.store import array_sha256, npz_bytes

    manifest = json.loads((golden / "manifest.json").read_text())
    case_id, entry = next((k, v) for k, v in sorted(manifest["cases"].items()) if v["stage"] == stage)
    path = golden / entry["file"]
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    out = {"forward": "y", "backward": "grad_x", "inv_freq": "inv_freq", "cos_sin": "cos", "apply": "y"}[stage]
    arrays[out] = arrays[out] * (1 + 2**-20)
    path.write_bytes(npz_bytes(arrays))
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    entry["arrays"][out]["sha256"] = array_sha256(arrays[out])
    (golden / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return case_id


def probe_anchor(p: Any, tmp: Path) -> None:
    from judge_cases import materialize_subset, write_golden_dir

    checked_in = ROOT / "golden"
    for stage in ("forward", "backward", "inv_freq", "cos_sin", "apply"):
        copy = tmp / f"copy-{stage}"
        shutil.copytree(checked_in, copy)
        case_id = _forge(copy, stage)
        for how, extra, environ in (("--golden", ["--golden", str(copy)], env()),
                                    ("ROPEREF_GOLDEN", [], env(ROPEREF_GOLDEN=str(copy)))):
            code, out, err = run(["check", "--backend", "numpy", "--filter", case_id, "-q", *extra], environ=environ)
            kind = kind_of(code, out + err, {2})
            if code in (0, 1, 3):
                kind = "substitution"  # a forged set was judged
            p.add("anchor", f"forged {stage} output in a copy of golden/ ({how})", kind, err[-300:] if kind != "clear" else "")
    written = write_golden_dir(tmp / "written", materialize_subset("forward/default/half/float32/*"))
    _forge(written, "forward")
    code, out, err = run(["check", "--backend", "numpy", "--golden", str(written), "-q"])
    kind = "substitution" if code in (0, 1, 3) else kind_of(code, out + err, {2})
    p.add("anchor", "forged output in a written set", kind, err[-300:] if kind != "clear" else "")
    for name, value, expected in (("wrong --set-hash", "0" * 64, {2}), ("short --set-hash", "abc", {2}),
                                  ("right --set-hash", hashlib.sha256((checked_in / "manifest.json").read_bytes()).hexdigest()[:16], {0})):
        code, out, err = run(["check", "--backend", "numpy", "--golden", str(checked_in), "--goldens-only", "--filter",
                              "freq/default/*", "--set-hash", value, "-q"])
        p.add("anchor", name, kind_of(code, out + err, expected), err[-300:])
    empty = tmp / "empty"
    empty.mkdir()
    manifest = json.loads((checked_in / "manifest.json").read_text())
    manifest["cases"] = {}
    (empty / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = run(["golden", "verify", str(empty)])
    kind = kind_of(code, out + err, {1})
    p.add("anchor", "golden verify of an empty set", kind if code != 0 else "wrong-result", out[-300:] + err[-300:])


# ----------------------------------------------------------------------------- messages


def probe_messages(p: Any, golden: Path, tmp: Path) -> None:
    loop = tmp / "loop"
    loop.symlink_to(loop)
    probes = {
        "ROPEREF_PRESETS missing: generate": (["golden", "generate", "--out", str(tmp / "g"), "--filter", "model/*"],
                                              {"ROPEREF_PRESETS": str(tmp / "missing")}, {2}, "does not exist"),
        "ROPEREF_PRESETS missing: check in memory": (["check", "--backend", "numpy", "--tier", "full", "--filter", "model/*"],
                                                     {"ROPEREF_PRESETS": str(tmp / "missing")}, {2}, "does not exist"),
        "symlink loop: --golden": (["check", "--backend", "numpy", "--golden", str(loop)], {}, {2}, "symlink loop"),
        "symlink loop: --cases": (["check", "--backend", "numpy", "--cases", str(loop)], {}, {2}, "symlink loop"),
        "symlink loop: golden verify": (["golden", "verify", str(loop)], {}, {2}, "symlink loop"),
        "golden audit --samples -5": (["golden", "audit", str(golden), "--samples", "-5"], {}, {2}, "--samples=-5"),
        "-q, library not installed": (["check", "--backend", "hostile_backends:NotInstalled", "--golden", str(golden), "-q"],
                                      {}, {3}, "STDOUT:not installed"),
        "-q, nothing supported": (["check", "--backend", "fault_backends:Unsupported", "--golden", str(golden), "-q"],
                                  {}, {3}, "STDOUT:quantum computer"),
    }
    for name, (args, extra, expected, needle) in probes.items():
        code, out, err = run(args, environ=env(**extra))
        kind = kind_of(code, out + err, expected)
        where = out if needle.startswith("STDOUT:") else err
        if kind == "clear" and needle.removeprefix("STDOUT:") not in where:
            kind = "substitution" if "ROPEREF_PRESETS" in name else "wrong-code"
        if "ROPEREF_PRESETS" in name and code == 0:
            kind = "substitution"
        p.add("messages", name, kind, err[-300:] if kind != "clear" else "")
    code, out, err = run(["golden", "list"], shell_tail="| head -n 1 >/dev/null")
    p.add("messages", "golden list | head", kind_of(code, out + err, {0}), err[-300:])
