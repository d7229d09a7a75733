"""Golden files: write, read and verify a hash-locked, deterministic golden set.

A golden set is a directory holding ``manifest.json`` and one ``.npz`` per case
(the format is documented in ``golden/README.md`` for readers in any language):

- each ``.npz`` is a zip archive of ``.npy`` files (format 1.0), one per array, arrays only:
  float64 (``<f8``) or int64 (``<i8``), C order, little-endian; read with
  ``np.load(..., allow_pickle=False)`` only, never unpickled;
- the archive is written by hand (fixed member order, fixed 1980-01-01 timestamps,
  fixed attributes, members stored uncompressed: deflate output depends on the zlib build,
  stored bytes do not), so the same cases give byte-identical files on every machine;
- ``manifest.json`` (sorted keys, one-space indent) gives the schema and library
  versions and, per case id, the spec dict, family, stage, dtype, tier, flags, file name,
  the file's sha256 and, per array, its dtype, shape and sha256.

Array hash: ``sha256(f"{dtype}|{shape}|".encode() + data)`` with ``dtype`` the NumPy
type string (``<f8`` or ``<i8``), ``shape`` the dimensions joined by ``,`` (empty for a 0-d
array) and ``data`` the C-order little-endian bytes; e.g. ``b"<f8|2,16,2,64|" + data``.

Nothing is regenerated or overwritten silently: :func:`write_golden` refuses a
directory holding a different set unless ``force=True``, and a write is a transaction: the
new set is built in a temporary directory beside the target and swapped in atomically, so an
interrupted or failed write leaves the old set, never a mixture. Reading checks every
``.npy`` header against the bytes that follow it before anything is allocated
(:mod:`conformance.cases.npy_limits`) and reads ``manifest.json`` within the limits of
:mod:`roperef.json_input`. Every problem is a :class:`GoldenError` naming the file and what
is wrong with it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from roperef import __version__, reference
from roperef.bounded_read import read_at_most
from roperef.frequencies import inv_freq
from roperef.json_input import JSONInputError, load_json_file, loads_limited
from roperef.spec import RopeSpec
from roperef.ulp import max_ulp_error

from ..cases.case import GoldenCase, check_case_fields, numpy_dtype
from ..cases.materialize import reference_arrays
from ..cases.npy_limits import MAX_ARRAY_BYTES, ArrayFileError, check_npz_archive
from ..vocabulary import OPTIONAL_INPUTS, REFERENCE_ARRAYS, STAGE_INPUTS, STAGE_OUTPUTS
from . import atomic_files  # called through the module: tests replace swap_in_directory to fail a swap

__all__ = [
    "SCHEMA_VERSION",
    "GENERATOR_VERSION",
    "GoldenError",
    "GoldenSet",
    "default_golden_dir",
    "array_sha256",
    "npz_bytes",
    "case_file_name",
    "build_manifest",
    "write_golden",
    "write_golden_set",
    "write_new",
    "GoldenWrite",
    "load_golden",
    "verify_golden",
    "recompute",
    "output_problems",
]

SCHEMA_VERSION = 2
#: bump when the catalogue or the writer changes the bytes of existing cases
GENERATOR_VERSION = "2"
MANIFEST = "manifest.json"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_FILE_RE = re.compile(r"^[A-Za-z0-9._@+-]+\.npz$")
_TOP_FIELDS = {
    "schema_version", "generator", "generator_version", "numpy_version", "numba_version",
    "ml_dtypes_version", "tier", "array_hash", "cases",
}
_CASE_FIELDS = {"family", "stage", "dtype", "tier", "flags", "spec", "file", "sha256", "arrays"}
_ARRAY_FIELDS = {"dtype", "shape", "sha256"}
ARRAY_HASH_RULE = 'sha256(f"{dtype}|{shape joined by ,}|".encode() + C-order little-endian bytes)'


class GoldenError(ValueError):
    """A golden file or manifest is missing, malformed or does not match its hash (names the file)."""


@dataclass(frozen=True)
class GoldenSet:
    """A loaded golden set: its directory, manifest, ``set_hash`` (sha256 of the manifest bytes), cases."""

    directory: Path
    manifest: dict[str, Any] = field(repr=False)
    set_hash: str
    cases: list[GoldenCase] = field(repr=False)

    def case(self, case_id: str) -> GoldenCase:
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(f"case {case_id!r} is not in the golden set at {self.directory}")


def default_golden_dir() -> Path:
    """Env ``ROPEREF_GOLDEN``, else the published set: the checkout's ``golden/`` (beside ``pyproject.toml``,
    one level above the package) or, in an installed wheel, ``golden_set/`` of the installed ``conformance`` package (copied there by
    setup.py's ``build_py``); else ``./golden``."""
    env = os.environ.get("ROPEREF_GOLDEN")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    checkout = here.parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "golden" / MANIFEST).is_file():
        return checkout / "golden"
    shipped = here.parents[1] / "golden_set"
    if (shipped / MANIFEST).is_file():
        return shipped
    return Path.cwd() / "golden"


# --------------------------------------------------------------------------- writing


def _canonical(arr: np.ndarray) -> np.ndarray:
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        return np.array(a, dtype="<f8", order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
    if a.dtype.kind in "iu":
        return np.array(a, dtype="<i8", order="C")
    raise GoldenError(f"array of dtype {a.dtype}: golden files hold float64 and int64 arrays only")


def array_sha256(arr: np.ndarray) -> str:
    """The documented array hash (see the module docstring)."""
    a = _canonical(arr)
    head = f"{a.dtype.str}|{','.join(str(n) for n in a.shape)}|".encode("ascii")
    return hashlib.sha256(head + a.tobytes(order="C")).hexdigest()


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz``: members ``NAME.npy`` in sorted order, fixed timestamps and attributes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            body = io.BytesIO()
            np.lib.format.write_array(body, _canonical(arrays[name]), version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            zf.writestr(info, body.getvalue())
    return buf.getvalue()


def case_file_name(case_id: str) -> str:
    """``forward/yarn/half/...`` -> ``forward__yarn__half__....npz``."""
    name = case_id.replace("/", "__") + ".npz"
    if not _FILE_RE.match(name):
        raise GoldenError(f"case id {case_id!r}: gives the file name {name!r}, outside [A-Za-z0-9._@+-]")
    return name


def _versions() -> dict[str, str]:
    import ml_dtypes  # lazy: library versions for the manifest only (Numba is heavy to import)
    import numba

    return {
        "generator": f"roperef {__version__}",
        "generator_version": GENERATOR_VERSION,
        "numpy_version": np.__version__,
        "numba_version": numba.__version__,
        "ml_dtypes_version": ml_dtypes.__version__,
    }


def build_manifest(cases: Iterable[GoldenCase], files: Mapping[str, bytes], tier: str) -> dict[str, Any]:
    """The manifest dict for ``cases`` whose file bytes are ``files`` (file name -> bytes)."""
    entries: dict[str, Any] = {}
    for c in cases:
        name = case_file_name(c.id)
        entries[c.id] = {
            "family": c.family,
            "stage": c.stage,
            "dtype": c.dtype,
            "tier": c.tier,
            "flags": list(c.flags),
            "spec": c.spec.to_dict(),
            "file": name,
            "sha256": hashlib.sha256(files[name]).hexdigest(),
            "arrays": {
                k: {"dtype": _canonical(v).dtype.str, "shape": list(np.shape(v)), "sha256": array_sha256(v)}
                for k, v in sorted(c.arrays.items())
            },
        }
    return {"schema_version": SCHEMA_VERSION, **_versions(), "tier": tier, "array_hash": ARRAY_HASH_RULE,
            "cases": entries}


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _same_cases(target: Path, manifest: Mapping[str, Any]) -> bool:
    """The manifest at ``target`` lists the same cases (ids, specs, hashes) as ``manifest``.

    Library versions may differ: the same cases written by another NumPy/Numba are the same set.
    """
    try:
        old = _read_json(target)
    except (GoldenError, OSError):
        return False
    return isinstance(old, dict) and old.get("cases") == manifest["cases"] and old.get("tier") == manifest["tier"]


@dataclass(frozen=True)
class GoldenWrite:
    """What :func:`write_golden_set` did: the manifest, whether anything changed, the directory."""

    manifest: dict[str, Any] = field(repr=False)
    changed: bool
    directory: Path


def _check_target(directory: Path, manifest: Mapping[str, Any], force: bool) -> bool:
    """Whether ``directory`` already holds this very set, sound (nothing to do); GoldenError when the
    write must be refused (a file, a different set or stray .npz files without ``force``)."""
    if os.path.lexists(directory) and not directory.is_dir():
        raise GoldenError(f"{directory}: exists and is not a directory; refusing to write a golden set there")
    target = directory / MANIFEST
    if target.exists():
        same = _same_cases(target, manifest)
        damage = verify_golden(directory, recompute_outputs=False) if same else []
        if same and not damage:
            return True
        if not force:
            if same:
                raise GoldenError(f"{directory}: this golden set is here but damaged ({damage[0]}); "
                                  "refusing to rewrite it (pass --force / force=True)")
            raise GoldenError(f"{target}: a different golden set is already here; refusing to overwrite it "
                              "(pass --force / force=True to replace it)")
    elif directory.is_dir() and any(directory.glob("*.npz")) and not force:
        raise GoldenError(f"{directory}: holds .npz files but no {MANIFEST}; refusing to write over them "
                          "(pass --force / force=True)")
    return False


def _carry_extras(old: Path, staging: Path) -> None:
    """Copy what is not part of a golden set (README.md, notes, subfolders) from ``old`` into ``staging``."""
    if not old.is_dir():
        return
    for entry in old.iterdir():
        if entry.name == MANIFEST or entry.suffix == ".npz":
            continue
        dest = staging / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry), dest)
        elif entry.is_dir():
            shutil.copytree(entry, dest, symlinks=True)
        elif entry.is_file():
            shutil.copy2(entry, dest)


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) holding ``data``, flushed to the disk."""
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_golden_set(cases: Iterable[GoldenCase], directory: str | os.PathLike, *, force: bool = False,
                     tier: str = "smoke") -> GoldenWrite:
    """Write ``cases`` as the golden set at ``directory``, as one transaction.

    Refuses (:class:`GoldenError`) a path that is a file, a directory holding a *different*
    golden set or stray ``.npz`` files unless ``force``; the same set (same cases and hashes,
    whatever the library versions in its manifest), undamaged, is left untouched
    (``changed=False``). Otherwise the whole new set (every ``.npz``, the manifest, and a copy of
    anything else in the old directory such as its README) is built in a temporary directory
    beside ``directory`` and swapped in atomically (:func:`conformance.golden.atomic_files.swap_in_directory`);
    the old set is then removed. An interruption, a full disk or a read-only directory at any
    point leaves the old set exactly as it was (the temporary directory is removed).
    """
    directory = Path(directory)
    if directory.is_symlink():
        directory = directory.resolve()
    cases = sorted(cases, key=lambda c: c.id)
    files = {case_file_name(c.id): npz_bytes(c.arrays) for c in cases}
    manifest = build_manifest(cases, files, tier)
    data = manifest_bytes(manifest)
    if _check_target(directory, manifest, force):
        return GoldenWrite(manifest, False, directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    prefix = atomic_files.temp_prefix(directory.name, directory.parent, len("new-XXXXXXXX")) + "new-"
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=directory.parent))
    try:
        os.chmod(staging, (os.stat(directory).st_mode & 0o7777) if directory.is_dir() else 0o755)
        for name, blob in files.items():
            write_new(staging / name, blob)
        write_new(staging / MANIFEST, data)
        _carry_extras(directory, staging)
        atomic_files.fsync_directory(staging)
        atomic_files.swap_in_directory(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return GoldenWrite(manifest, True, directory)


def write_golden(cases: Iterable[GoldenCase], directory: str | os.PathLike, *, force: bool = False,
                 tier: str = "smoke") -> dict[str, Any]:
    """Write ``cases`` as a golden set into ``directory`` (see :func:`write_golden_set`); returns the manifest."""
    return write_golden_set(cases, directory, force=force, tier=tier).manifest


# --------------------------------------------------------------------------- reading


def _fail(path: Path, problem: str) -> GoldenError:
    return GoldenError(f"{path}: {problem}")


def _read_json(path: Path) -> Any:
    """``path`` parsed within the limits of :mod:`roperef.json_input`; GoldenError naming the file."""
    try:
        return load_json_file(path, what="manifest")
    except JSONInputError as exc:
        raise GoldenError(str(exc)) from None


def _check_fields(path: Path, where: str, data: Any, allowed: set[str]) -> None:
    if not isinstance(data, dict):
        raise _fail(path, f"{where} must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(path, f"{where} has unknown field(s) {unknown}; known: {sorted(allowed)}")
    missing = sorted(allowed - set(data))
    if missing:
        raise _fail(path, f"{where} is missing field(s) {missing}")


#: the largest manifest.json read (the full tier's is about 2 MB)
MAX_MANIFEST_BYTES = 64 * 2**20


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (a FIFO or device is never opened), at most ``limit``."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise _fail(path, "not a regular file (a FIFO, device or directory is never opened)")
        if st.st_size > limit:
            raise _fail(path, f"{st.st_size} bytes, more than the limit of {limit} bytes")
        with open(path, "rb") as fh:
            return read_at_most(fh, limit)
    except OSError as exc:
        raise _fail(path, f"cannot read ({exc.strerror or exc})") from None


def read_manifest(directory: Path) -> tuple[dict[str, Any], bytes]:
    """The parsed, schema-checked manifest and its bytes."""
    path = directory / MANIFEST
    if not os.path.lexists(path):
        raise _fail(path, "missing (no golden set here; run `roperef golden generate`)")
    try:
        raw = _read_regular(path, MAX_MANIFEST_BYTES)
        manifest = loads_limited(raw.decode("utf-8"), source=str(path))
    except UnicodeDecodeError as exc:
        raise _fail(path, f"does not parse as JSON (not UTF-8 text: byte {exc.start})") from None
    except JSONInputError as exc:
        raise GoldenError(str(exc).replace(": not valid JSON", ": does not parse as JSON", 1)) from None
    _check_fields(path, "the manifest", manifest, _TOP_FIELDS)
    if manifest["schema_version"] != SCHEMA_VERSION:
        raise _fail(path, f"schema_version={manifest['schema_version']!r}: this reader knows {SCHEMA_VERSION}")
    if not isinstance(manifest["cases"], dict):
        raise _fail(path, "cases must be a JSON object keyed by case id")
    for case_id, entry in manifest["cases"].items():
        where = f"case {case_id!r}"
        _check_fields(path, where, entry, _CASE_FIELDS)
        try:
            check_case_fields(case_id, entry["family"], entry["stage"], entry["dtype"], entry["tier"], entry["flags"])
        except ValueError as exc:
            raise _fail(path, f"{where}: {exc}") from None
        if not isinstance(entry["arrays"], dict):
            raise _fail(path, f"{where}: arrays must be a JSON object")
        for name, arr in entry["arrays"].items():
            _check_fields(path, f"{where} array {name!r}", arr, _ARRAY_FIELDS)
        if not isinstance(entry["file"], str) or not _FILE_RE.match(entry["file"]):
            raise _fail(path, f"{where}: file={entry['file']!r} must be a plain .npz file name")
    return manifest, raw


def _load_case(directory: Path, case_id: str, entry: Mapping[str, Any], verify_hashes: bool) -> GoldenCase:
    path = directory / entry["file"]
    if not os.path.lexists(path):
        raise _fail(path, f"missing (listed in {MANIFEST} for case {case_id})")
    blob = _read_regular(path, MAX_ARRAY_BYTES + 2**20)
    if verify_hashes:
        digest = hashlib.sha256(blob).hexdigest()
        if digest != entry["sha256"]:
            raise _fail(path, f"sha256 mismatch (manifest {entry['sha256'][:16]}..., file {digest[:16]}...): "
                        "the file is truncated, modified or from another set")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            check_npz_archive(zf, str(path))
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            names = sorted(npz.files)
            if names != sorted(entry["arrays"]):
                raise _fail(path, f"holds arrays {names}, the manifest lists {sorted(entry['arrays'])}")
            for name in names:
                try:
                    arr = npz[name]
                except ValueError as exc:
                    raise _fail(path, f"array {name!r} cannot be loaded without unpickling "
                                f"(object arrays are never loaded): {exc}") from None
                arrays[name] = arr
    except GoldenError:
        raise
    except ArrayFileError as exc:
        raise GoldenError(str(exc)) from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise _fail(path, f"not a readable .npz archive ({type(exc).__name__}: {exc})") from None
    for name, arr in arrays.items():
        want = entry["arrays"][name]
        if arr.dtype.str not in ("<f8", "<i8"):
            raise _fail(path, f"array {name!r} has dtype {arr.dtype.str}; golden arrays are <f8 or <i8")
        if arr.dtype.str != want["dtype"] or list(arr.shape) != list(want["shape"]):
            raise _fail(path, f"array {name!r} is {arr.dtype.str}{list(arr.shape)}, the manifest says "
                        f"{want['dtype']}{want['shape']}")
        if verify_hashes and array_sha256(arr) != want["sha256"]:
            raise _fail(path, f"array {name!r}: sha256 does not match the manifest")
    try:
        spec = RopeSpec.from_dict(entry["spec"])
        return GoldenCase(id=case_id, family=entry["family"], stage=entry["stage"], spec=spec,
                          dtype=entry["dtype"], tier=entry["tier"], flags=tuple(entry["flags"]), arrays=arrays)
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"case {case_id}: {exc}") from None


def load_golden(directory: str | os.PathLike | None = None, *, verify_hashes: bool = True) -> GoldenSet:
    """Load a golden set (default :func:`default_golden_dir`); :class:`GoldenError` on any problem."""
    folder = Path(directory) if directory is not None else default_golden_dir()
    manifest, raw = read_manifest(folder)
    cases = [_load_case(folder, cid, entry, verify_hashes) for cid, entry in sorted(manifest["cases"].items())]
    return GoldenSet(folder, manifest, hashlib.sha256(raw).hexdigest(), cases)


# --------------------------------------------------------------------------- verification


def recompute(case: GoldenCase) -> dict[str, np.ndarray]:
    """The expected outputs recomputed by :mod:`roperef.reference` from the case's stored inputs."""
    a, spec = case.arrays, case.spec
    if case.stage == "inv_freq":
        w, s = inv_freq(spec, int(a["seq_len"]))
        return {"inv_freq": w, "attention_factor": np.asarray(s)}
    if case.stage == "cos_sin":
        cos, sin = reference.cos_sin(spec, a["positions"])
        return {"cos": cos, "sin": sin}
    if case.stage == "apply":
        return {"y": reference.apply(a["x"], a["cos"], a["sin"], spec)}
    if case.stage == "forward":
        return {"y": reference.forward(a["x"], a["positions"], spec, cu_seqlens=a.get("cu_seqlens"))}
    return {"grad_x": reference.backward(a["grad"], a["positions"], spec, cu_seqlens=a.get("cu_seqlens"))}


def _bitwise_problem(name: str, stored: np.ndarray, fresh: np.ndarray) -> str | None:
    """None when ``stored`` and ``fresh`` are the same array bit for bit, else what differs."""
    stored, fresh = np.asarray(stored), np.asarray(fresh)
    if stored.shape != fresh.shape:
        return f"stored {name!r} has shape {list(stored.shape)}, the reference gives {list(fresh.shape)}"
    if stored.dtype.kind == "i" or fresh.dtype.kind == "i":
        same = np.array_equal(stored, fresh)
    else:
        same = np.array_equal(stored.astype(np.float64).view(np.int64), fresh.astype(np.float64).view(np.int64))
    if same:
        return None
    count = int(np.count_nonzero(stored != fresh)) if stored.shape else 1
    worst = max_ulp_error(stored, fresh) if stored.dtype.kind == "f" else float("inf")
    return (f"stored {name!r} differs from the reference recomputed from the stored inputs in {count} "
            f"element(s), by up to {worst:.3g} ulp (the reference is bit-exact on every machine)")


def _round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(numpy_dtype(dtype)).astype(np.float64)


def _check_case(case: GoldenCase, path: Path) -> list[str]:
    problems = []
    known = (set(STAGE_INPUTS[case.stage]) | set(STAGE_OUTPUTS[case.stage]) | set(OPTIONAL_INPUTS.get(case.stage, ()))
             | set(REFERENCE_ARRAYS.get(case.stage, ())))
    extra = set(case.arrays) - known
    if extra:
        problems.append(f"{path}: arrays {sorted(extra)} are not part of stage {case.stage}")
    missing = sorted(set(REFERENCE_ARRAYS.get(case.stage, ())) - set(case.arrays))
    if missing:
        problems.append(f"{path}: reference arrays {missing} are missing (schema {SCHEMA_VERSION} stores them)")
    for name, arr in case.inputs().items():
        if arr.dtype.kind == "f" and case.dtype != "float64":
            back = arr.astype(numpy_dtype(case.dtype)).astype(np.float64)
            if not np.array_equal(back, arr, equal_nan=True):
                problems.append(f"{path}: input {name!r} is not exactly representable in {case.dtype}")
    return problems + output_problems(case, path, reference_arrays_too=not missing)


def output_problems(case: GoldenCase, path: Path | str, *, reference_arrays_too: bool = True) -> list[str]:
    """The stored expected outputs (and, with ``reference_arrays_too``, the stored frequencies, attention
    factor and pair axes) against the reference recomputed from the stored inputs, bit for bit: one
    message per array that differs (empty: the case's outputs are what its inputs give)."""
    try:
        fresh = recompute(case)
        if case.stage != "inv_freq" and reference_arrays_too:
            positions = case.arrays.get("positions", case.arrays.get("table_positions"))
            if positions is not None:
                fresh.update(reference_arrays(case.spec, positions))
            if case.stage == "apply" and positions is not None:  # the given tables: the reference's, rounded
                cos, sin = reference.cos_sin(case.spec, positions)
                fresh.update(cos=_round_to(cos, case.dtype), sin=_round_to(sin, case.dtype))
    except (TypeError, ValueError) as exc:
        return [f"{path}: the reference rejects the stored inputs: {exc}"]
    problems = []
    for name, want in fresh.items():
        if name in case.arrays:
            problem = _bitwise_problem(name, case.arrays[name], want)
            if problem:
                problems.append(f"{path}: {problem}")
    return problems


def verify_golden(directory: str | os.PathLike | None = None, *, recompute_outputs: bool = True) -> list[str]:
    """Every problem of a golden set as a message naming the file (empty list: the set is sound).

    Checks the manifest schema, every file's and array's sha256, array names/dtypes/shapes,
    that inputs are exact in the case dtype, stray ``.npz`` files, and (``recompute_outputs``)
    that the stored outputs (and frequencies, attention factor, pair axes) equal the reference
    recomputed from the stored inputs bit for bit (the reference is machine-independent:
    docs/spec.md section 3).
    """
    folder = Path(directory) if directory is not None else default_golden_dir()
    try:
        manifest, _ = read_manifest(folder)
    except GoldenError as exc:
        return [str(exc)]
    problems: list[str] = []
    if not manifest["cases"]:
        problems.append(f"{folder / MANIFEST}: lists no case (an empty golden set judges nothing)")
    listed = set()
    for case_id, entry in sorted(manifest["cases"].items()):
        listed.add(entry["file"])
        try:
            case = _load_case(folder, case_id, entry, verify_hashes=True)
        except GoldenError as exc:
            problems.append(str(exc))
            continue
        if recompute_outputs:
            problems.extend(_check_case(case, folder / entry["file"]))
    for stray in sorted(p.name for p in folder.glob("*.npz") if p.name not in listed):
        problems.append(f"{folder / stray}: not listed in {MANIFEST}")
    return problems
