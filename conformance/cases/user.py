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
case dtype (they are what the backend receives); positions and cu_seqlens are integers. Files are
read with ``allow_pickle=False``. Every problem raises :class:`UserCaseError` naming the file, the
key and the rule.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from roperef import fast
from roperef.frequencies import inv_freq
from roperef.hf import spec_from_config
from roperef.spec import RopeSpec

from ..selection import select
from ..vocabulary import DTYPES, OPTIONAL_INPUTS, STAGE_INPUTS, STAGE_OUTPUTS, STAGES, USER_TIER
from .case import GoldenCase, case_family, numpy_dtype

__all__ = ["SCHEMA", "UserCaseError", "UserCaseSet", "load_user_cases", "load_user_case", "select_user_cases", "expected_outputs"]

SCHEMA = "roperef-case/1"
CASE_FILE = "case.json"
_KEYS = frozenset({"schema", "id", "stage", "spec", "layer_type", "dtype", "flags", "family", "description", "seq_len", "arrays"})
_FLOAT_INPUTS = ("x", "grad", "cos", "sin")
_INT_INPUTS = ("positions", "cu_seqlens", "seq_len")


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


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserCaseError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UserCaseError(f"{path}: must hold a JSON object, got {type(doc).__name__}")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise _fail(path, unknown[0], doc[unknown[0]], f"unknown key; expected one of {', '.join(sorted(_KEYS))}")
    if "schema" in doc and doc["schema"] != SCHEMA:
        raise _fail(path, "schema", doc["schema"], f"expected {SCHEMA!r}")
    return doc


def _spec(doc: Mapping[str, Any], path: Path) -> RopeSpec:
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

    config = (path.parent / raw).resolve()
    if not config.is_file():
        raise _fail(path, "spec", raw, f"config file {config} not found (paths are relative to the case folder)")
    layer = doc.get("layer_type")
    try:
        spec = spec_from_config(config, layer_type=layer)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        raise UserCaseError(f"{path}: spec {raw}: {exc}") from None
    if isinstance(spec, dict):
        raise _fail(path, "layer_type", layer, f"{raw} holds several RoPEs; pick one of {', '.join(sorted(spec))}")
    return spec


def _load_npy(file: Path, where: Path, name: str) -> np.ndarray:
    try:
        return np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise _fail(where, f"arrays.{name}", str(file.name), f"file {file} not found") from None
    except (ValueError, OSError, EOFError) as exc:
        raise _fail(where, f"arrays.{name}", str(file.name), f"not a readable .npy without pickle ({exc})") from None


def _load_npz(file: Path, where: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(file, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise UserCaseError(f"{where}: array file {file} not found") from None
    except (ValueError, OSError, EOFError) as exc:
        raise UserCaseError(f"{where}: {file} is not a readable .npz without pickle ({exc})") from None


def _known(stage: str) -> tuple[str, ...]:
    return STAGE_INPUTS[stage] + OPTIONAL_INPUTS.get(stage, ()) + STAGE_OUTPUTS[stage]


def _raw_arrays(doc: Mapping[str, Any], path: Path, stage: str) -> dict[str, np.ndarray]:
    """Arrays by name, as stored (no conversion yet)."""
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
            if file.endswith(".npz"):
                arrays = npz_cache.setdefault(file, _load_npz(folder / file, path))
                key = key or name
                if key not in arrays:
                    raise _fail(path, f"arrays.{name}", ref, f"{file} has no array {key!r} (it has {', '.join(arrays) or 'none'})")
                out[name] = arrays[key]
            elif file.endswith(".npy") and not key:
                out[name] = _load_npy(folder / file, path, name)
            else:
                raise _fail(path, f"arrays.{name}", ref, "must be 'file.npy' or 'file.npz:key'")
        return out
    npz = folder / "arrays.npz"
    if npz.is_file():
        for key, arr in _load_npz(npz, path).items():
            if key not in known:
                raise UserCaseError(f"{path}: arrays.npz holds {key!r}, not an array of stage {stage} ({rule})")
            out[key] = arr
    for npy in sorted(folder.glob("*.npy")):
        if npy.stem not in known:
            raise UserCaseError(f"{path}: {npy.name} is not an array of stage {stage} ({rule}; or list files under \"arrays\")")
        if npy.stem in out:
            raise UserCaseError(f"{path}: {npy.stem} is both {npy.name} and a key of arrays.npz")
        out[npy.stem] = _load_npy(npy, path, npy.stem)
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


def load_user_case(path: str | Path, root: str | Path | None = None) -> GoldenCase:
    """One case from its ``case.json`` (``root``: the directory its default id is relative to)."""
    path = Path(path)
    doc = _read_json(path)
    stage = doc.get("stage")
    if stage not in STAGES:
        raise _fail(path, "stage", stage, f"is required, one of {', '.join(STAGES)}")
    spec = _spec(doc, path)
    raw = _raw_arrays(doc, path, stage)
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


def _set_hash(files: list[Path], root: Path) -> str:
    """sha256 over (relative path, sha256 of bytes) of every file of every case, sorted."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def load_user_cases(directory: str | Path) -> UserCaseSet:
    """Every case below ``directory`` (each folder holding ``case.json``; ``directory`` itself may be one)."""
    root = Path(directory)
    if not root.is_dir():
        raise UserCaseError(f"--cases {root}: not a directory")
    files = sorted(root.rglob(CASE_FILE), key=lambda p: p.as_posix())
    if not files:
        raise UserCaseError(f"--cases {root}: no {CASE_FILE} found (one folder per case, each with {CASE_FILE} and its arrays; docs/user-cases.md)")
    cases: list[GoldenCase] = []
    seen: dict[str, Path] = {}
    used = []
    for f in files:
        case = load_user_case(f, root if f.parent != root else root.parent)
        if case.id in seen:
            raise UserCaseError(f"{f}: id {case.id!r} is also the id of {seen[case.id]}")
        seen[case.id] = f
        cases.append(case)
        used += [p for p in f.parent.iterdir() if p.is_file() and (p.suffix in (".npy", ".npz") or p.name == CASE_FILE)]
    info = {"directory": str(root), "set_hash": _set_hash(used, root), "tier": USER_TIER, "source": f"user cases in {root}", "selected": len(cases)}
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
