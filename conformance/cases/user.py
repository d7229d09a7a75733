"""Bring your own cases: a directory of cases, each a folder with ``case.json`` and its arrays.

``roperef check --cases DIR`` and ``assert_rope_conforms(backend, cases=DIR)`` judge them with
the same error model, reports and exit codes as the golden cases (docs/user-cases.md)::

    DIR/
      my-first-case/
        case.json        {"stage": "apply", "spec": {...} or "config.json", "dtype": "float32"}
        x.npy cos.npy sin.npy            # the stage's inputs
        y.npy                            # optional: the expected output (else roperef.fast computes it)
      another/case.json + arrays.npz     # or every array in one .npz

``case.json`` keys (anything else is an error):

- ``stage`` (required): ``inv_freq``, ``cos_sin``, ``apply``, ``forward`` or ``backward``;
- ``spec`` (required): a ``RopeSpec.to_dict()`` object, or the path (relative to the case
  folder) of a Hugging Face ``config.json``, with ``layer_type`` when it holds several RoPEs;
- ``dtype``: the case dtype the backend receives its float inputs in (default: the dtype of the
  stored float inputs; bfloat16 inputs are stored as ``<u2`` bits or as float32/float64 holding
  exact bfloat16 values, with ``"dtype": "bfloat16"``);
- ``id`` (default: the folder's path below DIR), ``flags`` (list of strings), ``family``
  (default from the stage and spec), ``description`` (free text), ``schema``
  (``"roperef-case/1"``), ``seq_len`` (inv_freq only), ``arrays`` (name -> ``file.npy`` or
  ``file.npz:key``; default: ``<name>.npy`` files and the keys of ``arrays.npz``).

Arrays per stage (inputs; expected outputs optional but all or none), as in
:mod:`conformance.cases.case`: inv_freq ``seq_len`` -> ``inv_freq``, ``attention_factor``; cos_sin
``positions`` -> ``cos``, ``sin``; apply ``x``, ``cos``, ``sin`` (any tables, also ones no theta
produces) -> ``y``; forward ``x``, ``positions`` [, ``cu_seqlens``] -> ``y``; backward ``grad``,
``positions`` [, ``cu_seqlens``] -> ``grad_x``. Float inputs must be exactly representable in the
case dtype (they are what the backend receives); positions and cu_seqlens are integers. Every
problem raises :class:`UserCaseError` naming the file, the key and the rule.

The files are read under the limits golden files have: only regular files are opened (a FIFO
named ``x.npy`` or ``case.json`` is refused, never opened), ``case.json`` and a config are read
within :mod:`roperef.json_input`'s limits, every ``.npy`` header (alone or in an ``.npz``) is
checked against the bytes that follow it before anything is allocated
(:mod:`conformance.cases.npy_limits`), arrays are never unpickled; arrays (and ``case.json``)
must lie inside their case folder once symlinks are resolved; a case folder that is a symlink is
refused, not skipped; and a size budget bounds what a case may make the judge hold
(:data:`MAX_CASE_BYTES`: its arrays as stored, uncompressed, plus the float64 inputs and outputs
of its stage) and what the whole directory may (:data:`MAX_SET_BYTES`). The set hash covers every
file a case reads, ``case.json``, configs and arrays, by the bytes that were parsed.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from roperef import fast
from roperef.bounded_read import read_at_most
from roperef.frequencies import inv_freq
from roperef.hf import spec_from_config
from roperef.json_input import JSONInputError, JSONLimits, loads_limited
from roperef.spec import RopeSpec

from ..paths import kind_of, path_problem
from ..selection import select
from ..vocabulary import DTYPES, OPTIONAL_INPUTS, STAGE_INPUTS, STAGE_OUTPUTS, STAGES, USER_TIER
from .case import GoldenCase, case_family, numpy_dtype
from .npy_limits import MAX_ARRAY_BYTES, ArrayFileError, check_npy_stream, check_npz_archive

__all__ = ["SCHEMA", "UserCaseError", "UserCaseSet", "load_user_cases", "load_user_case", "select_user_cases", "expected_outputs",
           "MAX_CASE_BYTES", "MAX_SET_BYTES", "Budget"]

SCHEMA = "roperef-case/1"
CASE_FILE = "case.json"
_KEYS = frozenset({"schema", "id", "stage", "spec", "layer_type", "dtype", "flags", "family", "description", "seq_len", "arrays"})
_FLOAT_INPUTS = ("x", "grad", "cos", "sin")
_INT_INPUTS = ("positions", "cu_seqlens", "seq_len")
#: what one case may make the judge hold: its arrays as stored (uncompressed) plus its float64 inputs and outputs
MAX_CASE_BYTES = 256 * 2**20
#: what all the cases of a directory may hold together (they stay in memory for the run)
MAX_SET_BYTES = 1024 * 2**20
#: case.json and a config.json: small JSON documents
_JSON_LIMITS = JSONLimits(max_bytes=4 * 2**20)


class UserCaseError(ValueError):
    """A user case cannot be read: the message names the file, the key and the rule."""


@dataclass
class UserCaseSet:
    """The cases of a directory, and facts for the report (``directory``, ``set_hash``, ``tier``)."""

    cases: list[GoldenCase]
    info: dict[str, Any]


def _fail(where: Path | str, key: str, value: Any, rule: str) -> UserCaseError:
    shown = value if isinstance(value, (int, float, str, type(None))) else type(value).__name__
    return UserCaseError(f"{where}: {key}={shown!r}: {rule}")


def _human(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


@dataclass
class Budget:
    """Bytes a case (``case_left``) and the whole set (``set_left``) may still make the judge hold."""

    case_limit: int = MAX_CASE_BYTES
    set_limit: int = MAX_SET_BYTES
    case_left: int = field(init=False)
    set_left: int = field(init=False)

    def __post_init__(self) -> None:
        self.case_left, self.set_left = self.case_limit, self.set_limit

    def new_case(self) -> None:
        self.case_left = self.case_limit

    def spend(self, n: int, where: Path | str, what: str) -> None:
        """Take ``n`` bytes for ``what``; UserCaseError naming the file when the case or the set runs out."""
        if n > self.case_left:
            raise UserCaseError(f"{where}: {what} needs {_human(n)}, past the case's size budget of {_human(self.case_limit)} "
                                f"({_human(self.case_limit - self.case_left)} already taken): split the case into smaller ones")
        if n > self.set_left:
            raise UserCaseError(f"{where}: {what} needs {_human(n)}, past the size budget of the whole case directory "
                                f"({_human(self.set_limit)} in all): judge the directory in parts")
        self.case_left -= n
        self.set_left -= n


@dataclass
class _Files:
    """Reads a case's files under the limits (regular files only, inside the case folder) and records
    the sha256 of the very bytes parsed, keyed by their path relative to the root (absolute outside it)."""

    root: Path
    budget: Budget = field(default_factory=Budget)
    read: dict[str, str] = field(default_factory=dict)

    def _key(self, path: Path) -> str:
        real = Path(os.path.realpath(path))
        try:
            return real.relative_to(Path(os.path.realpath(self.root))).as_posix()
        except ValueError:
            return real.as_posix()

    def bytes(self, path: Path, limit: int, where: Path | str, what: str) -> bytes:
        """The bytes of the regular file ``path`` (at most ``limit``); UserCaseError naming it otherwise."""
        try:
            st = os.stat(path)
        except OSError:
            raise UserCaseError(f"{where}: {what} {path} {path_problem(path) or 'cannot be read'}") from None
        if not stat.S_ISREG(st.st_mode):
            raise UserCaseError(f"{where}: {what} {path} is {kind_of(st.st_mode)}, not a regular file "
                                "(never opened: a FIFO or a device would block or stream forever)")
        if st.st_size > limit:
            raise UserCaseError(f"{where}: {what} {path} is {_human(st.st_size)}, more than the limit of {_human(limit)}")
        try:
            with open(path, "rb") as fh:
                data = read_at_most(fh, limit)
        except OSError as exc:
            raise UserCaseError(f"{where}: {what} {path} cannot be read ({exc.strerror or exc})") from None
        if len(data) > limit:
            raise UserCaseError(f"{where}: {what} {path} grew past the limit of {_human(limit)} while it was read")
        self.read[self._key(path)] = hashlib.sha256(data).hexdigest()
        return data

    def json(self, path: Path, where: Path | str, what: str) -> Any:
        data = self.bytes(path, _JSON_LIMITS.max_bytes, where, what)
        try:
            return loads_limited(data.decode("utf-8"), source=str(path), limits=_JSON_LIMITS)
        except UnicodeDecodeError as exc:
            raise UserCaseError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except JSONInputError as exc:
            raise UserCaseError(str(exc)) from None

    def inside(self, path: Path, folder: Path, where: Path | str, key: str, ref: str) -> Path:
        """``path`` once symlinks are resolved, refused unless it lies inside ``folder``."""
        real, home = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
        try:
            real.relative_to(home)
        except ValueError:
            raise _fail(where, key, ref, f"resolves to {real}, outside the case folder {home} (a case reads only "
                        "files inside its own folder)") from None
        return real

    def npy(self, path: Path, where: Path, name: str) -> np.ndarray:
        data = self.bytes(path, MAX_ARRAY_BYTES, where, f"array file (arrays.{name})")
        try:
            _check_npy(data, str(path))
        except ArrayFileError as exc:
            raise UserCaseError(f"{where}: arrays.{name}: {exc}") from None
        self.budget.spend(len(data), where, path.name)
        return _load_checked(data, path, where, name)

    def npz(self, path: Path, where: Path) -> dict[str, np.ndarray]:
        data = self.bytes(path, MAX_ARRAY_BYTES, where, "array archive")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                check_npz_archive(zf, str(path))
                self.budget.spend(sum(i.file_size for i in zf.infolist()), where, f"{path.name} (uncompressed)")
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except ArrayFileError as exc:
            raise UserCaseError(f"{where}: {exc}") from None
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
            raise UserCaseError(f"{where}: {path} is not a readable .npz without pickle ({type(exc).__name__}: {exc})") from None


def _check_npy(data: bytes, where: str) -> tuple[np.dtype, tuple[int, ...]]:
    return check_npy_stream(io.BytesIO(data), len(data), where)


def _load_checked(data: bytes, path: Path, where: Path, name: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise _fail(where, f"arrays.{name}", str(path.name), f"not a readable .npy without pickle ({exc})") from None


def _read_json(path: Path, files: _Files) -> dict[str, Any]:
    doc = files.json(path, path, "case file")
    if not isinstance(doc, dict):
        raise UserCaseError(f"{path}: must hold a JSON object, got {type(doc).__name__}")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise _fail(path, unknown[0], doc[unknown[0]], f"unknown key; expected one of {', '.join(sorted(_KEYS))}")
    if "schema" in doc and doc["schema"] != SCHEMA:
        raise _fail(path, "schema", doc["schema"], f"expected {SCHEMA!r}")
    return doc


def _spec(doc: Mapping[str, Any], path: Path, files: _Files) -> RopeSpec:
    if "spec" not in doc:
        raise _fail(path, "spec", None, "is required: a RopeSpec.to_dict() object or the path of a HF config.json")
    raw = doc["spec"]
    if isinstance(raw, Mapping):
        if "layer_type" in doc:
            raise _fail(path, "layer_type", doc["layer_type"], "only with a spec given as a config.json path")
        try:
            return RopeSpec.from_dict(raw)
        except (ValueError, TypeError) as exc:
            raise UserCaseError(f"{path}: spec: {exc}") from None
    if not isinstance(raw, str):
        raise _fail(path, "spec", raw, "must be an object (RopeSpec.to_dict()) or a config.json path")

    config = path.parent / raw
    problem = path_problem(config, "file")
    if problem:
        problem = "not found" if problem == "does not exist" else problem
        raise _fail(path, "spec", raw, f"config file {config} {problem} (paths are relative to the case folder)")
    parsed = files.json(config, path, "config file")
    layer = doc.get("layer_type")
    try:
        spec = spec_from_config(parsed, layer_type=layer)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        raise UserCaseError(f"{path}: spec {raw}: {exc}") from None
    if isinstance(spec, dict):
        raise _fail(path, "layer_type", layer, f"{raw} holds several RoPEs; pick one of {', '.join(sorted(spec))}")
    return spec


def _known(stage: str) -> tuple[str, ...]:
    return STAGE_INPUTS[stage] + OPTIONAL_INPUTS.get(stage, ()) + STAGE_OUTPUTS[stage]


def _raw_arrays(doc: Mapping[str, Any], path: Path, stage: str, files: _Files) -> dict[str, np.ndarray]:
    """Arrays by name, as stored (no conversion yet); every file inside the case folder."""
    folder, known = path.parent, _known(stage)
    rule = f"stage {stage} takes {', '.join(known)}"
    listing = doc.get("arrays")
    out: dict[str, np.ndarray] = {}
    if listing is not None:
        if not isinstance(listing, Mapping):
            raise _fail(path, "arrays", listing, "must map array names to 'file.npy' or 'file.npz:key'")
        npz_cache: dict[str, dict[str, np.ndarray]] = {}
        for name, ref in listing.items():
            if name not in known:
                raise _fail(path, f"arrays.{name}", ref, f"unknown array name; {rule}")
            if not isinstance(ref, str):
                raise _fail(path, f"arrays.{name}", ref, "must be 'file.npy' or 'file.npz:key'")
            file, _, key = ref.partition(":")
            if file.endswith((".npz", ".npy")):
                real = files.inside(folder / file, folder, path, f"arrays.{name}", ref)
                problem = path_problem(real, "file")
                if problem:
                    problem = "not found" if problem == "does not exist" else problem
                    raise _fail(path, f"arrays.{name}", ref, f"file {folder / file} {problem}")
            if file.endswith(".npz"):
                if file not in npz_cache:
                    npz_cache[file] = files.npz(folder / file, path)
                arrays = npz_cache[file]
                key = key or name
                if key not in arrays:
                    raise _fail(path, f"arrays.{name}", ref, f"{file} has no array {key!r} (it has {', '.join(arrays) or 'none'})")
                out[name] = arrays[key]
            elif file.endswith(".npy") and not key:
                out[name] = files.npy(folder / file, path, name)
            else:
                raise _fail(path, f"arrays.{name}", ref, "must be 'file.npy' or 'file.npz:key'")
        return out
    npz = folder / "arrays.npz"
    if os.path.lexists(npz):
        files.inside(npz, folder, path, "arrays", "arrays.npz")
        for key, arr in files.npz(npz, path).items():
            if key not in known:
                raise UserCaseError(f"{path}: arrays.npz holds {key!r}, not an array of stage {stage} ({rule})")
            out[key] = arr
    for npy in sorted(folder.glob("*.npy")):
        if npy.stem not in known:
            raise UserCaseError(f"{path}: {npy.name} is not an array of stage {stage} ({rule}; or list files under \"arrays\")")
        if npy.stem in out:
            raise UserCaseError(f"{path}: {npy.stem} is both {npy.name} and a key of arrays.npz")
        files.inside(npy, folder, path, f"arrays.{npy.stem}", npy.name)
        out[npy.stem] = files.npy(npy, path, npy.stem)
    return out


def _case_dtype(doc: Mapping[str, Any], path: Path, raw: Mapping[str, np.ndarray], stage: str) -> str:
    if "dtype" in doc:
        if doc["dtype"] not in DTYPES:
            raise _fail(path, "dtype", doc["dtype"], f"expected one of {', '.join(DTYPES)}")
        return str(doc["dtype"])
    stored = [raw[n] for n in _FLOAT_INPUTS if n in raw]
    if not stored:
        return "float64"  # inv_freq and cos_sin have no float input: the dtype only names the case
    kinds = {("bfloat16" if a.dtype in (np.dtype("<u2"), np.dtype(">u2")) else a.dtype.name) for a in stored}
    if len(kinds) != 1 or not kinds <= set(DTYPES):
        raise _fail(path, "dtype", None,
                    f"not given and the float inputs' dtypes ({', '.join(sorted(kinds))}) do not name one case dtype; set \"dtype\"")
    return kinds.pop()


def _float_input(name: str, arr: np.ndarray, dtype: str, path: Path) -> np.ndarray:
    if arr.dtype in (np.dtype("<u2"), np.dtype(">u2")):
        if dtype != "bfloat16":
            raise _fail(path, name, str(arr.dtype), f"uint16 arrays are bfloat16 bits, but the case dtype is {dtype}")
        arr = arr.astype("<u2").view(numpy_dtype("bfloat16"))
    if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
        raise _fail(path, name, str(arr.dtype), "must be a float array (or <u2 bfloat16 bits)")
    values = arr.astype(np.float64)
    if not np.isfinite(values).all():
        raise _fail(path, name, "non-finite", "inputs must be finite")
    back = values.astype(numpy_dtype(dtype)).astype(np.float64)
    wrong = back != values
    if wrong.any():
        idx = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise _fail(path, name, float(values[idx]), f"not exactly representable in the case dtype {dtype} (first at index {idx}); "
                    "store the values the backend receives")
    return values


def _int_input(name: str, arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.dtype.kind not in "iu":
        raise _fail(path, name, str(arr.dtype), "must be an integer array")
    out = arr.astype(np.int64)
    if arr.dtype.kind == "u" and (out < 0).any():
        raise _fail(path, name, str(arr.dtype), "values beyond int64")
    return out


def expected_outputs(stage: str, spec: RopeSpec, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float64 expected outputs of a stage: :mod:`roperef.fast` (inv_freq: :mod:`roperef.frequencies`)."""
    if stage == "inv_freq":
        w, s = inv_freq(spec, int(inputs["seq_len"]))
        return {"inv_freq": np.asarray(w, dtype=np.float64), "attention_factor": np.asarray(s, dtype=np.float64)}
    if stage == "cos_sin":
        cos, sin = fast.cos_sin(spec, inputs["positions"])
        return {"cos": np.asarray(cos, dtype=np.float64), "sin": np.asarray(sin, dtype=np.float64)}
    if stage == "apply":
        return {"y": np.asarray(fast.apply(inputs["x"], inputs["cos"], inputs["sin"], spec), dtype=np.float64)}
    name, out = ("x", "y") if stage == "forward" else ("grad", "grad_x")
    fn = fast.forward if stage == "forward" else fast.backward
    return {out: np.asarray(fn(inputs[name], inputs["positions"], spec, cu_seqlens=inputs.get("cu_seqlens")), dtype=np.float64)}


def _work_bytes(stage: str, spec: RopeSpec, inputs: Mapping[str, np.ndarray]) -> int:
    """The float64 inputs and outputs the judge will hold for the stage (before computing them)."""
    held = sum(8 * int(a.size) for a in inputs.values())
    if stage == "cos_sin":
        return held + 8 * int(inputs["positions"].size) * spec.head_dim  # cos and sin: head_dim/2 each, at most
    if stage == "inv_freq":
        return held + 8 * spec.head_dim
    name = "x" if stage in ("apply", "forward") else "grad"
    return held + 8 * int(inputs[name].size) * 2  # the output, and the backend's copy of the input


def load_user_case(path: str | Path, root: str | Path | None = None, *, files: _Files | None = None) -> GoldenCase:
    """One case from its ``case.json`` (``root``: the directory its default id is relative to; ``files``:
    the reader that records what it reads and holds the size budget, a fresh one by default)."""
    path = Path(path)
    files = files or _Files(Path(root) if root is not None else path.parent)
    files.budget.new_case()
    doc = _read_json(path, files)
    stage = doc.get("stage")
    if stage not in STAGES:
        raise _fail(path, "stage", stage, f"is required, one of {', '.join(STAGES)}")
    spec = _spec(doc, path, files)
    raw = _raw_arrays(doc, path, stage, files)
    if stage == "inv_freq" and "seq_len" in doc:
        if "seq_len" in raw:
            raise _fail(path, "seq_len", doc["seq_len"], "given both in case.json and as an array")
        if isinstance(doc["seq_len"], bool) or not isinstance(doc["seq_len"], int) or doc["seq_len"] < 1:
            raise _fail(path, "seq_len", doc["seq_len"], "must be an integer >= 1")
        raw["seq_len"] = np.asarray(doc["seq_len"], dtype=np.int64)
    elif "seq_len" in doc:
        raise _fail(path, "seq_len", doc["seq_len"], "only for stage inv_freq (other stages use max(position) + 1)")
    missing = [n for n in STAGE_INPUTS[stage] if n not in raw]
    if missing:
        raise _fail(path, "arrays", None,
                    f"stage {stage} needs input(s) {', '.join(missing)} (as <name>.npy, a key of arrays.npz, or listed under \"arrays\")")
    dtype = _case_dtype(doc, path, raw, stage)
    inputs: dict[str, np.ndarray] = {}
    for name in STAGE_INPUTS[stage] + OPTIONAL_INPUTS.get(stage, ()):
        if name in raw:
            inputs[name] = _float_input(name, raw[name], dtype, path) if name in _FLOAT_INPUTS else _int_input(name, raw[name], path)
    if stage == "inv_freq" and inputs["seq_len"].shape != ():
        raise _fail(path, "seq_len", str(inputs["seq_len"].shape), "must be a 0-d integer")
    files.budget.spend(_work_bytes(stage, spec, inputs), path, f"stage {stage} on these inputs (float64 inputs and outputs)")
    try:
        computed = expected_outputs(stage, spec, inputs)
    except (ValueError, TypeError) as exc:  # roperef's own validation: names the argument and the rule
        raise UserCaseError(f"{path}: {exc}") from None
    given = {n: raw[n] for n in STAGE_OUTPUTS[stage] if n in raw}
    if given and len(given) != len(STAGE_OUTPUTS[stage]):
        absent = [n for n in STAGE_OUTPUTS[stage] if n not in given]
        raise _fail(path, "arrays", None, f"expected outputs are all or none: {', '.join(given)} given, {', '.join(absent)} missing")
    expected = {}
    for name, value in computed.items():
        if name not in given:
            expected[name] = value
            continue
        arr = np.asarray(given[name])
        if arr.dtype.kind not in "fiu":
            raise _fail(path, name, str(arr.dtype), "an expected output must be a float array")
        if arr.shape != value.shape:
            raise _fail(path, name, str(arr.shape), f"expected output shape must be {value.shape} (what stage {stage} returns)")
        expected[name] = arr.astype(np.float64)
        if not np.isfinite(expected[name]).all():
            raise _fail(path, name, "non-finite", "expected outputs must be finite")
    folder = path.parent.resolve()
    try:
        default_id = folder.relative_to(Path(root if root is not None else folder.parent).resolve()).as_posix()
    except ValueError:  # the case lies outside root
        default_id = folder.name
    case_id = doc.get("id", default_id if default_id not in ("", ".") else folder.name)
    if not isinstance(case_id, str) or not case_id or any(ch.isspace() for ch in case_id):
        raise _fail(path, "id", case_id, "must be a non-empty string without spaces")
    flags = doc.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise _fail(path, "flags", flags, "must be a list of strings")
    if not isinstance(doc.get("description", ""), str):
        raise _fail(path, "description", doc["description"], "must be a string")
    family = doc.get("family", case_family(stage, spec))
    try:
        return GoldenCase(case_id, family, stage, spec, dtype, USER_TIER, tuple(flags), {**inputs, **expected})
    except (ValueError, TypeError) as exc:
        raise UserCaseError(f"{path}: {exc}") from None


def _set_hash(read: Mapping[str, str]) -> str:
    """sha256 over (path relative to the root, sha256 of the bytes parsed) of every file the cases read, sorted."""
    h = hashlib.sha256()
    for key in sorted(read):
        h.update(key.encode("utf-8", "surrogateescape") + b"\0" + bytes.fromhex(read[key]))
    return h.hexdigest()


def _case_files(root: Path) -> list[Path]:
    """Every ``case.json`` below ``root`` (``root`` itself included), sorted; symlinked folders refused."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_walk_error):
        folder = Path(dirpath)
        for d in sorted(dirnames):
            if os.path.islink(folder / d):
                target = os.readlink(folder / d)
                raise UserCaseError(f"--cases {root}: {folder / d} is a symlink (to {target}); case folders are "
                                    "not followed through symlinks: copy the folder in, or point --cases at its target")
        dirnames.sort()
        if CASE_FILE in filenames or os.path.lexists(folder / CASE_FILE):
            found.append(folder / CASE_FILE)
    return sorted(found, key=lambda p: p.as_posix())


def _walk_error(exc: OSError) -> None:
    raise UserCaseError(f"--cases: {exc.filename}: cannot be listed ({exc.strerror or exc})")


def load_user_cases(directory: str | Path, *, case_budget: int = MAX_CASE_BYTES,
                    set_budget: int = MAX_SET_BYTES) -> UserCaseSet:
    """Every case below ``directory`` (each folder holding ``case.json``; ``directory`` itself may be one),
    within the size budgets (bytes per case and for the whole directory)."""
    root = Path(directory)
    problem = path_problem(root, "dir")
    if problem:
        raise UserCaseError(f"--cases {root}: {problem}")
    case_files = _case_files(root)
    if not case_files:
        raise UserCaseError(f"--cases {root}: no {CASE_FILE} found (one folder per case, each with {CASE_FILE} and its arrays; docs/user-cases.md)")
    reader = _Files(root, Budget(case_budget, set_budget))
    cases: list[GoldenCase] = []
    seen: dict[str, Path] = {}
    for f in case_files:
        reader.inside(f, f.parent, f, "case file", CASE_FILE)
        case = load_user_case(f, root if f.parent != root else root.parent, files=reader)
        if case.id in seen:
            raise UserCaseError(f"{f}: id {case.id!r} is also the id of {seen[case.id]}")
        seen[case.id] = f
        cases.append(case)
    info = {"directory": str(root), "set_hash": _set_hash(reader.read), "tier": USER_TIER, "source": f"user cases in {root}",
            "selected": len(cases), "files_read": len(reader.read)}
    return UserCaseSet(cases, info)


def select_user_cases(directory: str | Path, filters: Sequence[str] = (), dtypes: Sequence[str] = ()) -> UserCaseSet:
    """:func:`load_user_cases`, then the cases whose id matches ``filters`` (as ``--filter``) and ``dtypes``."""
    loaded = load_user_cases(directory)
    cases = select(loaded.cases, ",".join(filters)) if filters else loaded.cases
    if dtypes:
        cases = [c for c in cases if c.dtype in dtypes]
    if not cases:
        what = " and ".join(x for x in (f"--filter {','.join(filters)}" if filters else "", f"--dtype {','.join(dtypes)}" if dtypes else "") if x)
        raise UserCaseError(f"no case in {directory} matches {what} ({len(loaded.cases)} cases there)")
    return UserCaseSet(cases, {**loaded.info, "selected": len(cases)})
