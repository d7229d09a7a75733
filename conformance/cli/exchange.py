"""The file protocol for implementations outside Python (C++/CUDA/Rust/JS).

``roperef golden export [--filter PAT] --out DIR`` writes, per case, a folder
``DIR/<case id with "/" replaced by "__">/`` holding:

- ``case.json``: ``{"schema": "roperef-exchange/1", "id", "family", "stage", "dtype", "spec"
  (RopeSpec.to_dict()), "flags", "seq_len", "inputs": {name: {"file", "dtype", "shape"}},
  "outputs": {name: {"file", "shape"}}}``;
- ``params.txt``: the same facts as ``key=value`` lines for programs without a JSON parser
  (``stage``, ``dtype``, ``head_dim``, ``rotary_dim``, ``rotary_start``, ``freq_dim``,
  ``n_pairs``, ``pairing``, ``theta``, ``scaling`` (type), ``scaling.<param>`` (lists
  comma-separated), ``mrope_section``, ``mrope_layout``, ``vision``, ``seq_len``, ``varlen``);
- the inputs as ``.npy`` (little-endian, C order): ``in_x.npy`` / ``in_grad.npy`` /
  ``in_cos.npy`` / ``in_sin.npy`` in the case dtype (float64/float32/float16; **bfloat16
  cases are written as float32 holding exactly the bfloat16 values**), ``in_positions.npy``
  and ``in_cu_seqlens.npy`` int64, ``in_seq_len.npy`` int64 0-d.

DIR/``export.json`` lists the exported ids and the golden set's hash.

The foreign program writes, next to the inputs, one ``out_<name>.npy`` per output of the
stage (forward ``out_y``, backward ``out_grad_x``, apply ``out_y``, cos_sin ``out_cos`` and
``out_sin`` [..., n], inv_freq ``out_inv_freq`` [n] and ``out_attention_factor`` 0-d), in
float64/float32/float16, or as ``<u2`` holding bfloat16 bits. It may instead write
``unsupported.txt`` (NOT_SUPPORTED, the text is the reason) or ``error.txt`` (ERROR). An
optional ``DIR/backend.json`` declares ``{"name", "angle_dtype", "table_dtype",
"applies_attention_factor"}`` (default: float32 angles and tables). Then
``roperef check --outputs DIR`` judges the files against the golden set.

Reading an outputs directory trusts nothing in it: ``export.json`` and ``backend.json`` are read
within the limits of :mod:`roperef.json_input`; every case folder ``export.json`` names must lie
inside DIR (no absolute paths, no ``..``, no symbolic link leading out); an ``out_*.npy`` that is
not a regular file (a FIFO would block) or whose header declares more data than the file holds
is that case's ERROR, checked before NumPy allocates anything (:mod:`conformance.cases.npy_limits`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from roperef.bounded_read import read_at_most
from roperef.json_input import JSONInputError, load_json_file

from ..backends.base import Capabilities
from ..calls.stage_call import StageError
from ..cases.case import GoldenCase, numpy_dtype
from ..cases.npy_limits import ArrayFileError, check_npy_file
from ..golden.atomic_files import write_bytes_atomic, write_text_atomic
from ..golden.case_source import CaseSource, load_cases
from ..usage_error import UsageError
from ..vocabulary import DTYPES, STAGE_OUTPUTS, STAGES

__all__ = ["SCHEMA", "ExchangeError", "case_folder", "export_case", "export_cases", "read_output", "OutputsBackend"]

SCHEMA = "roperef-exchange/1"
_FLOAT_INPUTS = ("x", "grad", "cos", "sin")


class ExchangeError(ValueError):
    """An export/outputs directory problem (names the file and what is wrong)."""


def case_folder(case_id: str) -> str:
    """The folder name of a case: its id with ``/`` replaced by ``__``."""
    return case_id.replace("/", "__")


def _seq_len(case: GoldenCase) -> int:
    a = case.arrays
    if "seq_len" in a:
        return int(np.asarray(a["seq_len"]))
    pos = a.get("positions")
    return max(int(np.max(pos)) + 1, 1) if pos is not None and np.size(pos) else 1


def _params(case: GoldenCase) -> str:
    spec = case.spec
    lines = {
        "id": case.id, "stage": case.stage, "dtype": case.dtype, "head_dim": spec.head_dim,
        "rotary_dim": spec.rotary_dim, "rotary_start": spec.rotary_start, "freq_dim": spec.freq_dim,
        "n_pairs": spec.n_pairs, "pairing": spec.pairing, "theta": repr(float(spec.theta)),
        "scaling": spec.scaling.type, "mrope_section": ",".join(map(str, spec.mrope_section or ())),
        "mrope_layout": spec.mrope_layout if spec.mrope_section else "", "vision": spec.vision or "",
        "seq_len": _seq_len(case), "varlen": int("cu_seqlens" in case.arrays),
    }
    for key, value in spec.scaling.to_dict().items():
        if key != "type":
            lines[f"scaling.{key}"] = ",".join(repr(float(v)) for v in value) if isinstance(value, list) else value
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def _input_array(case: GoldenCase, name: str) -> np.ndarray:
    arr = case.arrays[name]
    if name in _FLOAT_INPUTS:
        store = "float32" if case.dtype == "bfloat16" else case.dtype
        return np.asarray(arr, dtype=np.float64).astype(store, order="C")
    return np.asarray(arr).astype(np.int64, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)


def export_case(case: GoldenCase, out_dir: str | Path) -> Path:
    """Write one case's folder (inputs, case.json, params.txt); returns the folder."""
    folder = Path(out_dir) / case_folder(case.id)
    folder.mkdir(parents=True, exist_ok=True)
    inputs = {}
    for name, _ in case.inputs().items():
        arr = _input_array(case, name)
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        write_bytes_atomic(folder / f"in_{name}.npy", buf.getvalue())
        inputs[name] = {"file": f"in_{name}.npy", "dtype": arr.dtype.name, "shape": list(arr.shape)}
    outputs = {k: {"file": f"out_{k}.npy", "shape": list(np.shape(v))} for k, v in case.expected().items()}
    doc = {
        "schema": SCHEMA, "id": case.id, "family": case.family, "stage": case.stage, "dtype": case.dtype,
        "spec": case.spec.to_dict(), "flags": list(case.flags), "seq_len": _seq_len(case),
        "inputs": inputs, "outputs": outputs,
    }
    write_text_atomic(folder / "case.json", json.dumps(doc, indent=1) + "\n")
    write_text_atomic(folder / "params.txt", _params(case))
    return folder


def export_cases(cases: Sequence[GoldenCase], out_dir: str | Path, *, golden: dict[str, Any] | None = None) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        export_case(case, out)
    index = {"schema": SCHEMA, "golden": golden or {}, "cases": {c.id: case_folder(c.id) for c in cases}}
    write_text_atomic(out / "export.json", json.dumps(index, indent=1) + "\n")
    return out


def read_output(path: Path) -> np.ndarray:
    """One ``out_*.npy``: float16/32/64, or ``<u2`` as bfloat16 bits. Never unpickles; the header is
    checked against the file's size first (a FIFO or a forged header is refused, not allocated)."""
    try:
        check_npy_file(path)
        arr = np.load(path, allow_pickle=False)
    except ArrayFileError as exc:
        raise ExchangeError(str(exc)) from None
    except (ValueError, OSError, EOFError) as exc:
        raise ExchangeError(f"{path}: not a readable .npy array ({exc})") from None
    if arr.dtype == np.dtype("<u2") or arr.dtype == np.dtype(">u2"):
        return arr.astype("<u2").view(numpy_dtype("bfloat16"))
    return arr


def _note(path: Path, limit: int = 2000) -> str:
    """The first ``limit`` characters of a program's note (unsupported.txt, error.txt)."""
    with open(path, "rb") as fh:
        text = read_at_most(fh, limit).decode("utf-8", errors="replace")
    return (text[:limit] + " ...").strip() if len(text) > limit else text.strip()


def _check_folders(root: Path, cases: dict[str, Any]) -> None:
    """Every case folder named by ``export.json`` is a relative path that stays inside ``root``."""
    base = root.resolve()
    for case_id, folder in cases.items():
        if not isinstance(folder, str) or not folder or Path(folder).is_absolute() or ".." in Path(folder).parts:
            raise ExchangeError(f"{root / 'export.json'}: case {case_id!r} folder={folder!r}: must be a relative "
                                "folder name inside the export directory")
        if not (root / folder).resolve().is_relative_to(base):
            raise ExchangeError(f"{root / 'export.json'}: case {case_id!r} folder={folder!r}: leads outside "
                                f"{root} (a symbolic link?)")


@dataclass
class OutputsBackend:
    """Serves the output files of an export directory to the runner (``call_case``)."""

    root: Path
    index: dict[str, Any]
    name: str = "outputs"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(stages=frozenset(STAGES), angle_dtype="float32", table_dtype="float32"))

    @classmethod
    def open(cls, directory: str | Path) -> OutputsBackend:
        root = Path(directory)
        if not root.is_dir():
            raise ExchangeError(f"--outputs {root}: not a directory")
        try:
            index = load_json_file(root / "export.json", what="export index")
        except FileNotFoundError:
            raise ExchangeError(f"--outputs {root}: no export.json (make it with: roperef golden export --out {root})") from None
        except JSONInputError as exc:
            raise ExchangeError(str(exc)) from None
        if not isinstance(index, dict) or index.get("schema") != SCHEMA or not isinstance(index.get("cases"), dict):
            raise ExchangeError(f"{root / 'export.json'}: not a {SCHEMA} index")
        _check_folders(root, index["cases"])
        backend = cls(root, index, name=f"outputs:{root}")
        decl = root / "backend.json"
        if decl.is_file():
            backend._declare(decl)
        return backend

    def _declare(self, path: Path) -> None:
        try:
            data = load_json_file(path, what="backend declaration")
        except JSONInputError as exc:
            raise ExchangeError(str(exc)) from None
        allowed = {"name", "angle_dtype", "table_dtype", "applies_attention_factor"}
        if not isinstance(data, dict) or set(data) - allowed:
            raise ExchangeError(f"{path}: expected an object with keys among {', '.join(sorted(allowed))}")
        angle = data.get("angle_dtype", "float32")
        table = data.get("table_dtype", "float32")
        if angle not in DTYPES or table not in (*DTYPES, "input"):
            raise ExchangeError(f"{path}: angle_dtype={angle!r} / table_dtype={table!r}: expected a dtype name (tables also 'input')")
        self.name = str(data.get("name", self.name))
        self.capabilities = Capabilities(stages=frozenset(STAGES), angle_dtype=angle, table_dtype=table,
                                         applies_attention_factor=bool(data.get("applies_attention_factor", True)))

    def case_source(self, golden: str | None, tier: str, filters: Sequence[str], dtypes: Sequence[str], *,
                    set_hash: str | None = None) -> Any:
        """The golden cases of the exported ids (expected values come from the golden set, not the export;
        ``set_hash`` pins it, as ``--set-hash``)."""
        ids = set(self.index["cases"])
        src = load_cases(golden, "full" if tier == "full" else tier, filters, dtypes, set_hash=set_hash)
        cases = [c for c in src.cases if c.id in ids]
        missing = sorted(ids - {c.id for c in src.cases}) if not filters and not dtypes else []
        if missing and tier == "smoke":
            raise UsageError(f"{len(missing)} exported case(s) are not in the golden set, e.g. {missing[0]} (try --tier full or --golden DIR)")
        if not cases:
            raise UsageError(f"no exported case in {self.root} matches the selection")
        src.info["outputs"] = str(self.root)
        src.info["selected"] = len(cases)
        return CaseSource(cases, src.info)

    def supports(self, case: GoldenCase) -> bool | str:
        folder = self.root / self.index["cases"].get(case.id, case_folder(case.id))
        note = folder / "unsupported.txt"
        if note.is_file():
            return "program says: " + (_note(note) or "unsupported")
        return True

    def call_case(self, case: GoldenCase) -> tuple[Any, list[str]]:
        folder = self.root / self.index["cases"].get(case.id, case_folder(case.id))
        if not folder.is_dir():
            raise StageError(f"case folder {folder} is missing")
        err = folder / "error.txt"
        if err.is_file():
            raise StageError("program reported: " + _note(err))
        names = STAGE_OUTPUTS[case.stage]
        present = sorted(p.name for p in folder.glob("out_*"))
        expected = [f"out_{n}.npy" for n in names]
        unknown = [p for p in present if p not in expected]
        missing = [e for e in expected if e not in present]
        if missing:
            hint = f"; found {', '.join(unknown)}" if unknown else ""
            raise StageError(f"missing output file(s) {', '.join(missing)} in {folder}{hint}")
        if unknown:
            raise StageError(f"unexpected output file(s) {', '.join(unknown)} in {folder} (expected {', '.join(expected)})")
        try:
            values = [read_output(folder / f) for f in expected]
        except ExchangeError as exc:
            raise StageError(str(exc)) from None
        return (values[0] if len(values) == 1 else tuple(values)), []
